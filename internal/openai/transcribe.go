package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"path"
	"strings"

	"choir/internal/jsonlimit"
)

// MaxTranscribeBytes is the largest audio file Transcribe sends: OpenAI's
// limit for /audio/transcriptions (25 MB). A Telegram voice note (at most
// 20 MB to a bot) always fits.
const MaxTranscribeBytes = 25 << 20

// TranscribeRequest is one audio file for POST <endpoint>/audio/transcriptions.
type TranscribeRequest struct {
	// Model is the transcription model id: whisper-1, gpt-4o-transcribe…
	Model string
	// FileName is sent as the file part's name; providers tell the audio
	// format by its extension (flac, mp3, mp4, mpeg, mpga, m4a, ogg, wav,
	// webm), so keep it. Only its base name is sent.
	FileName string
	// Audio is read to its end, at most MaxTranscribeBytes.
	Audio io.Reader
	// Language, when set, is the audio's ISO-639-1 language ("en"), which
	// improves accuracy and latency; empty lets the model detect it.
	Language string
	// Prompt, when set, guides the model's style or spells names it will hear.
	Prompt string
}

// Transcribe sends the audio as multipart/form-data (file, model,
// response_format=json, and language and prompt when set) and returns the
// "text" of the answer. Every error is an *APIError: an answer without a
// "text" string is KindMalformed, audio over MaxTranscribeBytes is refused
// before sending (KindBadRequest). An empty text (silence) is not an error.
func (c *Client) Transcribe(ctx context.Context, req TranscribeRequest) (string, error) {
	k := c.call("audio/transcriptions", req.Model)
	if req.Model == "" {
		return "", k.fail(KindBadRequest, 0, "not sent: no model named", nil)
	}
	if req.Audio == nil {
		return "", k.fail(KindBadRequest, 0, "not sent: no audio", nil)
	}
	audio, err := io.ReadAll(io.LimitReader(req.Audio, MaxTranscribeBytes+1))
	if err != nil {
		return "", k.fail(KindBadRequest, 0, "not sent: read the audio: "+err.Error(), err)
	}
	if len(audio) > MaxTranscribeBytes {
		return "", k.fail(KindBadRequest, 0, fmt.Sprintf("not sent: the audio is over %d MB, the endpoint's limit", MaxTranscribeBytes>>20), nil)
	}
	if len(audio) == 0 {
		return "", k.fail(KindBadRequest, 0, "not sent: the audio is empty", nil)
	}
	body, ctype, err := transcribeForm(req, audio)
	if err != nil {
		return "", k.fail(KindBadRequest, 0, "not sent: "+err.Error(), err)
	}
	data, err := c.postAs(ctx, k, ctype, body, nil)
	if err != nil {
		return "", err
	}
	return decodeTranscript(k, data)
}

// transcribeForm builds the request body and its Content-Type.
func transcribeForm(req TranscribeRequest, audio []byte) ([]byte, string, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fields := [][2]string{{"model", req.Model}, {"response_format", "json"}}
	if req.Language != "" {
		fields = append(fields, [2]string{"language", req.Language})
	}
	if req.Prompt != "" {
		fields = append(fields, [2]string{"prompt", req.Prompt})
	}
	for _, kv := range fields {
		if err := mw.WriteField(kv[0], kv[1]); err != nil {
			return nil, "", err
		}
	}
	name := audioName(req.FileName)
	h := make(textproto.MIMEHeader)
	h.Set("Content-Disposition", mime.FormatMediaType("form-data", map[string]string{"name": "file", "filename": name}))
	h.Set("Content-Type", audioType(name))
	part, err := mw.CreatePart(h)
	if err != nil {
		return nil, "", err
	}
	if _, err := part.Write(audio); err != nil {
		return nil, "", err
	}
	if err := mw.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), mw.FormDataContentType(), nil
}

// audioName is the base name sent, never empty; a Telegram voice note's
// .oga becomes .ogg, the extension providers list.
func audioName(name string) string {
	name = path.Base(strings.ReplaceAll(strings.TrimSpace(name), `\`, "/"))
	if name == "." || name == "/" || name == "" {
		name = "audio.ogg"
	}
	if strings.EqualFold(path.Ext(name), ".oga") {
		name = strings.TrimSuffix(name, path.Ext(name)) + ".ogg"
	}
	return name
}

func audioType(name string) string {
	switch strings.ToLower(path.Ext(name)) {
	case ".ogg", ".opus":
		return "audio/ogg"
	case ".mp3", ".mpga", ".mpeg":
		return "audio/mpeg"
	case ".m4a":
		return "audio/mp4"
	case ".wav":
		return "audio/wav"
	case ".webm":
		return "audio/webm"
	case ".flac":
		return "audio/flac"
	}
	return "application/octet-stream"
}

type wireTranscript struct {
	Text  *string         `json:"text"`
	Error json.RawMessage `json:"error"`
}

func decodeTranscript(k call, data []byte) (string, error) {
	if err := jsonlimit.Check(data, jsonlimit.Limits{MaxDepth: jsonlimit.DefaultMaxDepth}); err != nil {
		return "", k.fail(KindMalformed, http.StatusOK, "answer refused: "+err.Error(), err)
	}
	var w wireTranscript
	if err := json.Unmarshal(data, &w); err != nil {
		return "", k.fail(KindMalformed, http.StatusOK, fmt.Sprintf("answer is not a transcription (%v); %s", err, k.excerpt(data)), err)
	}
	if present(w.Error) {
		return "", errorInBody(k, data)
	}
	if w.Text == nil {
		return "", k.fail(KindMalformed, http.StatusOK, "answer has no \"text\"; "+k.excerpt(data), nil)
	}
	return strings.TrimSpace(*w.Text), nil
}
