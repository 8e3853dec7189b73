package config

import (
	"strings"
	"testing"
)

func TestTranscriptionBlock(t *testing.T) {
	example, secrets := readExample(t)
	data := mutate(t, example, func(m map[string]any) {
		m["transcription"] = map[string]any{"endpoint": "http://127.0.0.1:8080/v1", "model": "whisper-1", "language": "de"}
	})
	c, err := Parse(data)
	if err == nil {
		err = Validate(c, secrets)
	}
	if err != nil {
		t.Fatalf("Validate(keyless local transcription) = %v; want nil", err)
	}
	if tr := c.Transcription; tr == nil || tr.Model != "whisper-1" || tr.Endpoint != "http://127.0.0.1:8080/v1" || tr.Language != "de" {
		t.Errorf("transcription = %+v", c.Transcription)
	}
	c, err = Parse(example)
	if err != nil || c.Transcription != nil {
		t.Errorf("config without a transcription block: %+v, %v; want none (voice notes arrive as files)", c.Transcription, err)
	}
}

func TestTranscriptionRefusals(t *testing.T) {
	example, secrets := readExample(t)
	tests := []struct {
		name     string
		block    any
		path     string
		contains string
	}{
		{"no endpoint", map[string]any{"model": "whisper-1"}, "transcription.endpoint", "required: an http:// or https:// URL"},
		{"endpoint not http", map[string]any{"model": "whisper-1", "endpoint": "ftp://x/v1"}, "transcription.endpoint", "absolute http:// or https://"},
		{"no model", map[string]any{"endpoint": "https://api.openai.com/v1"}, "transcription.model", "whisper-1"},
		{"unknown secret", map[string]any{"endpoint": "https://api.openai.com/v1", "model": "whisper-1", "secret": "stt-key"}, "transcription.secret", "choirctl secret set stt-key"},
		{"language not a code", map[string]any{"endpoint": "https://api.openai.com/v1", "model": "whisper-1", "language": "English"}, "transcription.language", "ISO-639-1"},
		{"unknown field", map[string]any{"endpoint": "https://api.openai.com/v1", "model": "whisper-1", "voice": "x"}, "transcription.voice", ""},
		{"wrong type", map[string]any{"endpoint": "https://api.openai.com/v1", "model": 1}, "transcription.model", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := mutate(t, example, func(m map[string]any) { m["transcription"] = tc.block })
			c, err := Parse(data)
			if err == nil {
				err = Validate(c, secrets)
			}
			if err == nil {
				t.Fatalf("transcription %v accepted; want a problem at %s", tc.block, tc.path)
			}
			if !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("error = %v; want one at %q containing %q", err, tc.path, tc.contains)
			}
		})
	}
}
