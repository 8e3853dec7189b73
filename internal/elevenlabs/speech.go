package elevenlabs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"choir/internal/httpapi"
)

// MaxTextLen is the most characters one call sends; ElevenLabs' own
// per-model limits are between 5,000 and 40,000.
const MaxTextLen = 5000

// VoiceSettings are the voice_settings of a request (design §21.3); all
// five are always sent.
type VoiceSettings struct {
	Stability       float64 `json:"stability"`
	SimilarityBoost float64 `json:"similarity_boost"`
	Style           float64 `json:"style"`
	UseSpeakerBoost bool    `json:"use_speaker_boost"`
	Speed           float64 `json:"speed"`
}

// SpeechRequest is one text-to-speech call.
type SpeechRequest struct {
	VoiceID string
	Text    string
	ModelID string
	// OutputFormat is codec_samplerate[_bitrate] (opus_48000_64,
	// mp3_44100_128, pcm_16000, ulaw_8000); "" leaves ElevenLabs' default
	// (mp3_44100_128).
	OutputFormat  string
	VoiceSettings *VoiceSettings
}

// Audio is what a call returns.
type Audio struct {
	Data        []byte
	ContentType string
	// Format is the output format asked for ("mp3_44100_128" when none
	// was).
	Format string
}

var (
	voiceIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	formatRE  = regexp.MustCompile(`^(mp3|opus|pcm|ulaw|alaw|wav)_[0-9]+(_[0-9]+)?$`)
)

// Check reports what is wrong with r, or nil.
func (r SpeechRequest) Check() error {
	n := utf8.RuneCountInString(r.Text)
	switch {
	case !voiceIDRE.MatchString(r.VoiceID):
		return fmt.Errorf("voice id %q: want the ElevenLabs voice id (letters, digits, _ and -)", r.VoiceID)
	case strings.TrimSpace(r.Text) == "":
		return fmt.Errorf("the text is empty")
	case n > MaxTextLen:
		return fmt.Errorf("the text has %d characters; one call takes at most %d", n, MaxTextLen)
	case r.OutputFormat != "" && !formatRE.MatchString(r.OutputFormat):
		return fmt.Errorf("output format %q: want e.g. opus_48000_64 or mp3_44100_128", r.OutputFormat)
	}
	return nil
}

// Speech runs POST /text-to-speech/{voice_id} and returns the audio.
func (c *Client) Speech(ctx context.Context, r SpeechRequest) (*Audio, error) {
	path := "/text-to-speech/" + url.PathEscape(r.VoiceID)
	if err := r.Check(); err != nil {
		return nil, &APIError{Endpoint: "POST " + c.api.Base.Host + c.api.Base.Path + path, Message: err.Error()}
	}
	body, _ := json.Marshal(struct {
		Text          string         `json:"text"`
		ModelID       string         `json:"model_id,omitempty"`
		VoiceSettings *VoiceSettings `json:"voice_settings,omitempty"`
	}{r.Text, r.ModelID, r.VoiceSettings})
	q := url.Values{}
	if r.OutputFormat != "" {
		q.Set("output_format", r.OutputFormat)
	}
	data, ctype, err := c.post(ctx, path, q, body)
	if err != nil {
		return nil, err
	}
	format := r.OutputFormat
	if format == "" {
		format = "mp3_44100_128"
	}
	if len(data) == 0 {
		return nil, &APIError{Endpoint: "POST " + c.api.Base.Host + c.api.Base.Path + path, Status: 200, Message: "the answer has no audio (empty body)"}
	}
	if strings.HasPrefix(ctype, "application/json") || bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		return nil, &APIError{Endpoint: "POST " + c.api.Base.Host + c.api.Base.Path + path, Status: 200, Message: "the answer is JSON, not audio: " + httpapi.Snippet(data)}
	}
	if err := checkAudio(format, data); err != nil {
		return nil, &APIError{Endpoint: "POST " + c.api.Base.Host + c.api.Base.Path + path, Status: 200, Message: err.Error()}
	}
	return &Audio{Data: data, ContentType: ctype, Format: format}, nil
}

// checkAudio checks the container of the codecs that have one: Opus comes
// in Ogg ("OggS"), MP3 starts with an ID3 tag or a frame sync, WAV with
// "RIFF". Raw PCM and G.711 have no header to check.
func checkAudio(format string, data []byte) error {
	ok := true
	switch Codec(format) {
	case "opus":
		ok = bytes.HasPrefix(data, []byte("OggS"))
	case "mp3":
		ok = bytes.HasPrefix(data, []byte("ID3")) || len(data) > 1 && data[0] == 0xFF && data[1]&0xE0 == 0xE0
	case "wav":
		ok = bytes.HasPrefix(data, []byte("RIFF"))
	}
	if !ok {
		return fmt.Errorf("the answer is not %s audio (it starts with %s)", format, httpapi.Snippet(data[:min(len(data), 16)]))
	}
	return nil
}

// Codec is the codec of an output format ("opus" of "opus_48000_64").
func Codec(format string) string {
	codec, _, _ := strings.Cut(format, "_")
	return codec
}
