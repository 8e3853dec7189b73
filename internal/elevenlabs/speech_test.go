package elevenlabs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"choir/internal/elevenlabs"
	"choir/testkit/elevenlabstest"
)

const key = "xi-test-Key-8Fw"

func client(t *testing.T, fake *elevenlabstest.Server, mod func(*elevenlabs.Config)) *elevenlabs.Client {
	t.Helper()
	cfg := elevenlabs.Config{Endpoint: fake.URL(), APIKey: key, Timeout: 5 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	c, err := elevenlabs.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSpeechSendsEveryVoiceSettingAndReturnsOggOpus(t *testing.T) {
	fake := elevenlabstest.New(t, key)
	fake.AddVoice("voice-1")
	vs := &elevenlabs.VoiceSettings{Stability: 0.4, SimilarityBoost: 0.8, Style: 0, UseSpeakerBoost: false, Speed: 1.1}
	a, err := client(t, fake, nil).Speech(context.Background(), elevenlabs.SpeechRequest{
		VoiceID: "voice-1", Text: "Bonjour, ça va?", ModelID: "eleven_multilingual_v2", OutputFormat: "opus_48000_64", VoiceSettings: vs,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(a.Data, []byte("OggS")) || a.Format != "opus_48000_64" || a.ContentType != "audio/ogg" {
		t.Errorf("Speech = %q %s %s; want Ogg Opus audio", a.Data[:8], a.Format, a.ContentType)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests; want 1", len(reqs))
	}
	r := reqs[0]
	if r.Key != key || r.VoiceID != "voice-1" || r.OutputFormat != "opus_48000_64" || r.Text() != "Bonjour, ça va?" || r.ModelID() != "eleven_multilingual_v2" {
		t.Errorf("request = %+v", r)
	}
	got := r.VoiceSettings()
	want := map[string]string{"stability": "0.4", "similarity_boost": "0.8", "style": "0", "speed": "1.1"}
	for k, v := range want {
		if n, ok := got[k].(json.Number); !ok || n.String() != v {
			t.Errorf("voice_settings.%s = %v; want %s", k, got[k], v)
		}
	}
	if b, ok := got["use_speaker_boost"].(bool); !ok || b {
		t.Errorf("voice_settings.use_speaker_boost = %v; want false, sent", got["use_speaker_boost"])
	}

	// No output format: ElevenLabs' default, MP3.
	a, err = client(t, fake, nil).Speech(context.Background(), elevenlabs.SpeechRequest{VoiceID: "voice-1", Text: "hi"})
	if err != nil || a.Format != "mp3_44100_128" || !bytes.HasPrefix(a.Data, []byte("ID3")) {
		t.Errorf("Speech without a format = %v, %v; want MP3", a, err)
	}
	if r := fake.Requests()[1]; r.OutputFormat != "" || r.VoiceSettings() != nil {
		t.Errorf("request without format and settings = %+v; want neither sent", r)
	}
}

func TestSpeechRefusesBadRequestsBeforeSending(t *testing.T) {
	fake := elevenlabstest.New(t, key)
	c := client(t, fake, nil)
	for _, r := range []elevenlabs.SpeechRequest{
		{VoiceID: "", Text: "x"},
		{VoiceID: "../voices", Text: "x"},
		{VoiceID: "v", Text: "  "},
		{VoiceID: "v", Text: strings.Repeat("a", elevenlabs.MaxTextLen+1)},
		{VoiceID: "v", Text: "x", OutputFormat: "flac"},
	} {
		if _, err := c.Speech(context.Background(), r); err == nil {
			t.Errorf("Speech(%+v) = nil error; want a refusal", r.VoiceID)
		}
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("%d requests reached ElevenLabs; want none", n)
	}
}

func TestSpeechFaults(t *testing.T) {
	cases := []struct {
		name   string
		fault  *elevenlabstest.Fault
		req    elevenlabs.SpeechRequest
		key    string
		status int
		code   string
		retry  time.Duration
		want   string
	}{
		{name: "wrong key", key: "xi-wrong", status: 401, code: "invalid_api_key", want: "check the API key"},
		{name: "401", fault: ptr(elevenlabstest.Unauthorized()), status: 401, code: "invalid_api_key", want: "check the API key"},
		{name: "quota", fault: ptr(elevenlabstest.QuotaExceeded()), status: 401, code: "quota_exceeded", want: "quota is spent"},
		{name: "429", fault: ptr(elevenlabstest.RateLimited(3)), status: 429, code: "too_many_concurrent_requests", retry: 3 * time.Second, want: "retry after 3s"},
		{name: "5xx", fault: ptr(elevenlabstest.ServerError(500)), status: 500, code: "internal_error", want: "HTTP 500"},
		{name: "malformed", fault: ptr(elevenlabstest.Malformed()), status: 200, want: "not opus_48000_64 audio"},
		{name: "endless", fault: ptr(elevenlabstest.Endless()), status: 200, want: "larger than 65536 bytes"},
		{name: "stalled", fault: ptr(elevenlabstest.Stall()), status: 200, want: "no complete answer within 300ms"},
		{name: "unknown voice", req: elevenlabs.SpeechRequest{VoiceID: "nobody"}, status: 404, code: "voice_not_found", want: "check voice_id"},
		{name: "setting out of range", req: elevenlabs.SpeechRequest{VoiceSettings: &elevenlabs.VoiceSettings{Stability: 3, Speed: 1}}, status: 422, code: "value_error", want: "body.voice_settings.stability: Input should be between 0 and 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := elevenlabstest.New(t, key)
			fake.AddVoice("voice-1")
			if tc.fault != nil {
				fake.FailNext(1, *tc.fault)
			}
			c := client(t, fake, func(cfg *elevenlabs.Config) {
				cfg.MaxAudio = 64 << 10
				cfg.Timeout = 300 * time.Millisecond
				if tc.key != "" {
					cfg.APIKey = tc.key
				}
			})
			req := tc.req
			if req.VoiceID == "" {
				req.VoiceID = "voice-1"
			}
			req.Text, req.OutputFormat = "hello", "opus_48000_64"
			_, err := c.Speech(context.Background(), req)
			var ae *elevenlabs.APIError
			if !errors.As(err, &ae) {
				t.Fatalf("Speech = %v; want an *APIError", err)
			}
			if ae.Status != tc.status || ae.Code != tc.code || ae.RetryAfter != tc.retry {
				t.Errorf("APIError = status %d code %q retry %v; want %d %q %v", ae.Status, ae.Code, ae.RetryAfter, tc.status, tc.code, tc.retry)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q; want it to say %q", err, tc.want)
			}
			if strings.Contains(err.Error(), key) {
				t.Errorf("error %q shows the key", err)
			}
		})
	}
}

func TestSpeechUnreachable(t *testing.T) {
	c, err := elevenlabs.New(elevenlabs.Config{Endpoint: "http://127.0.0.1:1/v1", APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Speech(context.Background(), elevenlabs.SpeechRequest{VoiceID: "v", Text: "x"})
	var ae *elevenlabs.APIError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "reachable") {
		t.Errorf("Speech to a closed port = %v; want an *APIError saying to check the endpoint", err)
	}
}

func ptr[T any](v T) *T { return &v }
