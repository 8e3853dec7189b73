package openai_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"choir/internal/openai"
	"choir/testkit/openaitest"
)

func transcriber(t *testing.T, opts ...func(*openai.Config)) (*openaitest.Transcriber, *openai.Client) {
	t.Helper()
	s := openaitest.NewTranscriber(t)
	s.SetKey(testKey)
	cfg := openai.Config{Endpoint: s.URL(), APIKey: testKey}
	for _, o := range opts {
		o(&cfg)
	}
	c, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func TestTranscribeSendsTheForm(t *testing.T) {
	s, c := transcriber(t)
	s.Answer(openaitest.TranscriptText("  buy milk on the way home \n"))
	audio := append([]byte("OggS\x00\x02"), bytes.Repeat([]byte{1, 2, 3}, 3000)...)
	got, err := c.Transcribe(t.Context(), openai.TranscribeRequest{
		Model: "whisper-1", FileName: "/srv/ws/.choirtmp/recv/12-voice.oga", Audio: bytes.NewReader(audio), Language: "en", Prompt: "Choir, Alice",
	})
	if err != nil {
		t.Fatalf("Transcribe = %v", err)
	}
	if got != "buy milk on the way home" {
		t.Errorf("Transcribe = %q; want the text, trimmed", got)
	}
	tr := s.Transcriptions()[0]
	if tr.Model != "whisper-1" || tr.Language != "en" || tr.Prompt != "Choir, Alice" || tr.Format != "json" {
		t.Errorf("fields = model %q language %q prompt %q response_format %q", tr.Model, tr.Language, tr.Prompt, tr.Format)
	}
	if tr.FileName != "12-voice.ogg" || tr.FileType != "audio/ogg" || !bytes.Equal(tr.Audio, audio) {
		t.Errorf("file part = %q (%s, %d bytes, intact %v); want 12-voice.ogg, audio/ogg, the bytes, no host path",
			tr.FileName, tr.FileType, len(tr.Audio), bytes.Equal(tr.Audio, audio))
	}
	if !strings.HasPrefix(tr.ContentType, "multipart/form-data; boundary=") {
		t.Errorf("Content-Type = %q", tr.ContentType)
	}
}

func TestTranscribeOptionalFieldsAbsent(t *testing.T) {
	s, c := transcriber(t)
	if _, err := c.Transcribe(t.Context(), openai.TranscribeRequest{Model: "m", FileName: "a.mp3", Audio: strings.NewReader("ID3 audio")}); err != nil {
		t.Fatal(err)
	}
	if tr := s.Transcriptions()[0]; tr.Language != "" || tr.Prompt != "" || tr.FileType != "audio/mpeg" {
		t.Errorf("request = %+v; want no language or prompt, audio/mpeg", tr)
	}
}

func TestTranscribeFailures(t *testing.T) {
	tests := []struct {
		name   string
		answer openaitest.TranscriptAnswer
		kind   openai.Kind
		want   string
	}{
		{"401", openaitest.TranscriptStatus(http.StatusUnauthorized), openai.KindAuth, "Incorrect API key"},
		{"429", openaitest.TranscriptStatus(http.StatusTooManyRequests), openai.KindRateLimited, "Rate limit"},
		{"500", openaitest.TranscriptStatus(http.StatusInternalServerError), openai.KindServerError, "server had an error"},
		{"503 page", openaitest.TranscriptRaw(http.StatusServiceUnavailable, "<html>upstream down</html>"), openai.KindServerError, "upstream down"},
		{"not json", openaitest.TranscriptRaw(http.StatusOK, `{"text": "half`), openai.KindMalformed, "not a transcription"},
		{"no text", openaitest.TranscriptRaw(http.StatusOK, `{"duration": 3}`), openai.KindMalformed, `no "text"`},
		{"text not a string", openaitest.TranscriptRaw(http.StatusOK, `{"text": 42}`), openai.KindMalformed, "not a transcription"},
		{"error in a 200", openaitest.TranscriptRaw(http.StatusOK, `{"error": {"message": "decoder crashed"}}`), openai.KindServerError, "decoder crashed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, c := transcriber(t)
			s.Answer(tc.answer)
			_, err := c.Transcribe(t.Context(), openai.TranscribeRequest{Model: "whisper-1", FileName: "v.ogg", Audio: strings.NewReader("OggS")})
			if openai.KindOf(err) != tc.kind || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Transcribe = %v (kind %v); want %v containing %q", err, openai.KindOf(err), tc.kind, tc.want)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("error names the key: %v", err)
			}
			if !strings.Contains(err.Error(), "audio/transcriptions") {
				t.Errorf("error %q does not name the endpoint", err)
			}
		})
	}
	t.Run("429 carries Retry-After", func(t *testing.T) {
		s, c := transcriber(t)
		s.Answer(openaitest.TranscriptStatus(http.StatusTooManyRequests))
		_, err := c.Transcribe(t.Context(), openai.TranscribeRequest{Model: "m", FileName: "v.ogg", Audio: strings.NewReader("x")})
		if e, ok := err.(*openai.APIError); !ok || e.RetryAfter != time.Second {
			t.Errorf("Transcribe = %#v; want RetryAfter 1s", err)
		}
	})
	t.Run("wrong key", func(t *testing.T) {
		s, c := transcriber(t, func(c *openai.Config) { c.APIKey = "sk-wrong-Key-77" })
		_, err := c.Transcribe(t.Context(), openai.TranscribeRequest{Model: "m", FileName: "v.ogg", Audio: strings.NewReader("x")})
		if openai.KindOf(err) != openai.KindAuth || strings.Contains(err.Error(), "sk-wrong-Key-77") {
			t.Errorf("Transcribe with a wrong key = %v; want KindAuth without the key", err)
		}
		if n := len(s.Transcriptions()); n != 1 {
			t.Errorf("%d requests; want 1", n)
		}
	})
}

func TestTranscribeSlowEndpointTimesOut(t *testing.T) {
	s, c := transcriber(t, func(c *openai.Config) { c.Timeout = 200 * time.Millisecond })
	s.Answer(openaitest.TranscriptHang())
	_, err := c.Transcribe(context.Background(), openai.TranscribeRequest{Model: "m", FileName: "v.ogg", Audio: strings.NewReader("x")})
	if openai.KindOf(err) != openai.KindTimeout {
		t.Fatalf("Transcribe against a hanging endpoint = %v; want KindTimeout", err)
	}
}

func TestTranscribeRefusesBeforeSending(t *testing.T) {
	s, c := transcriber(t)
	huge := bytes.NewReader(make([]byte, openai.MaxTranscribeBytes+1))
	for _, tc := range []struct {
		name string
		req  openai.TranscribeRequest
		want string
	}{
		{"no model", openai.TranscribeRequest{FileName: "a.ogg", Audio: strings.NewReader("x")}, "no model"},
		{"no audio", openai.TranscribeRequest{Model: "m", FileName: "a.ogg"}, "no audio"},
		{"empty audio", openai.TranscribeRequest{Model: "m", FileName: "a.ogg", Audio: strings.NewReader("")}, "empty"},
		{"over 25 MB", openai.TranscribeRequest{Model: "m", FileName: "a.ogg", Audio: huge}, "over 25 MB"},
	} {
		_, err := c.Transcribe(t.Context(), tc.req)
		if openai.KindOf(err) != openai.KindBadRequest || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Transcribe = %v; want KindBadRequest containing %q", tc.name, err, tc.want)
		}
	}
	if n := len(s.Transcriptions()); n != 0 {
		t.Errorf("%d requests reached the endpoint; want none", n)
	}
}

func TestFakeTranscriberRefusesWhatOpenAIRefuses(t *testing.T) {
	s, c := transcriber(t)
	// A file OpenAI cannot tell the format of is refused with its 400.
	_, err := c.Transcribe(t.Context(), openai.TranscribeRequest{Model: "m", FileName: "voice.bin", Audio: strings.NewReader("x")})
	if openai.KindOf(err) != openai.KindBadRequest || !strings.Contains(err.Error(), "Invalid file format") {
		t.Errorf("Transcribe(voice.bin) = %v; want the 400 for an unknown format", err)
	}
	if n := len(s.Transcriptions()); n != 1 {
		t.Errorf("recorded %d requests; want 1", n)
	}
}
