package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"

	"choir/internal/openai"
)

// Transcriber turns speech into text: config.json's transcription
// endpoint, an OpenAI-compatible POST /audio/transcriptions, which choird
// calls with the key it holds (no agent sees it). name is the stored
// file's name; providers tell the audio format by its extension.
type Transcriber interface {
	Transcribe(ctx context.Context, name string, audio io.Reader) (string, error)
}

// errNoSpeech is a transcription that came back empty.
var errNoSpeech = errors.New("no speech was recognised")

// transcribe reads a stored voice note back from ws/.choirtmp/recv and
// asks the Transcriber for its text, within TranscribeTimeout.
func (g *Gateway) transcribe(ctx context.Context, ws, name string) (string, error) {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return "", fmt.Errorf("open workspace: %w", err)
	}
	defer root.Close()
	f, err := root.Open(path.Join(recvDir, name))
	if err != nil {
		return "", fmt.Errorf("read the stored audio: %w", err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(ctx, g.cfg.TranscribeTimeout)
	defer cancel()
	text, err := g.cfg.Transcriber.Transcribe(ctx, name, f)
	if err != nil {
		return "", err
	}
	if text == "" {
		return "", errNoSpeech
	}
	return text, nil
}

// OpenAITranscriber is the Transcriber of config.json's "transcription"
// block: an OpenAI-compatible client for its endpoint and key, its model
// and language.
type OpenAITranscriber struct {
	Client   *openai.Client
	Model    string
	Language string
}

var _ Transcriber = OpenAITranscriber{}

// Transcribe sends the audio to the endpoint's /audio/transcriptions.
func (o OpenAITranscriber) Transcribe(ctx context.Context, name string, audio io.Reader) (string, error) {
	return o.Client.Transcribe(ctx, openai.TranscribeRequest{Model: o.Model, FileName: name, Audio: audio, Language: o.Language})
}
