// Package elevenlabstest is a pretend ElevenLabs text-to-speech API for
// tests, like httptest but speaking POST <URL>/text-to-speech/{voice_id}
// with xi-api-key, as ElevenLabs' API reference describes it.
//
// A test registers the voices that exist (AddVoice), points the client or
// the agent's TTS provider at URL, and reads what was asked (Requests:
// the voice, output_format and the decoded JSON body). It decodes the raw
// JSON itself and never imports the client's structs. It answers audio
// that starts as the real format does (Ogg's "OggS" for opus_*, an ID3 tag
// for mp3_*, silence for pcm_*), 401 invalid_api_key for a wrong key,
// 404 voice_not_found, and FastAPI's 422 list for a missing text, an
// unknown output_format or a voice setting out of range. FailNext scripts
// faults: 401, quota_exceeded, 429 with Retry-After, 5xx, a malformed
// body, a body that never ends and one that stalls.
package elevenlabstest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"choir/testkit/apitest"
)

// Request is one request as the fake received it.
type Request struct {
	VoiceID      string
	OutputFormat string // the query parameter, "" when absent
	Key          string // xi-api-key
	// Body is the decoded JSON body.
	Body map[string]any
}

// Text is the body's text.
func (r Request) Text() string { s, _ := r.Body["text"].(string); return s }

// ModelID is the body's model_id.
func (r Request) ModelID() string { s, _ := r.Body["model_id"].(string); return s }

// VoiceSettings is the body's voice_settings object, nil when absent.
func (r Request) VoiceSettings() map[string]any {
	m, _ := r.Body["voice_settings"].(map[string]any)
	return m
}

// Server is a running fake; safe for concurrent use.
type Server struct {
	t    testing.TB
	srv  *httptest.Server
	done chan struct{}
	key  string

	mu       sync.Mutex
	voices   map[string]bool
	requests []Request
	faults   []Fault
}

// New starts a fake on 127.0.0.1 accepting key.
func New(t testing.TB, key string) *Server { return NewOn(t, "127.0.0.1:0", key) }

// NewOn starts a fake on addr (the bridge gateway for containers).
func NewOn(t testing.TB, addr, key string) *Server {
	t.Helper()
	s := &Server{t: t, key: key, voices: map[string]bool{}}
	s.srv, s.done = apitest.Start(t, addr, s)
	return s
}

// URL is the endpoint to configure (like https://api.elevenlabs.io/v1).
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// AddVoice makes a voice id exist.
func (s *Server) AddVoice(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.voices[id] = true
}

// Requests returns every request received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

var formatRE = regexp.MustCompile(`^(mp3_(22050_32|24000_48|44100_32|44100_64|44100_96|44100_128|44100_192)|opus_48000_(32|64|96|128|192)|pcm_(8000|16000|22050|24000|32000|44100|48000)|ulaw_8000|alaw_8000)$`)

// settingRanges are the voice_settings the API checks, with their ranges.
var settingRanges = map[string][2]float64{
	"stability": {0, 1}, "similarity_boost": {0, 1}, "style": {0, 1}, "speed": {0.25, 4},
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	voice, ok := strings.CutPrefix(r.URL.Path, "/v1/text-to-speech/")
	if r.Method != http.MethodPost || !ok || voice == "" || strings.Contains(voice, "/") {
		writeDetail(w, http.StatusNotFound, "not_found", "Not Found")
		return
	}
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	req := Request{VoiceID: voice, OutputFormat: r.URL.Query().Get("output_format"), Key: r.Header.Get("xi-api-key")}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	bodyErr := dec.Decode(&req.Body)
	s.mu.Lock()
	s.requests = append(s.requests, req)
	var fault *Fault
	if len(s.faults) > 0 {
		fault = &s.faults[0]
		s.faults = s.faults[1:]
	}
	known := s.voices[voice]
	s.mu.Unlock()

	switch {
	case req.Key == "":
		writeDetail(w, http.StatusUnauthorized, "missing_api_key", "Missing API key: send it in the xi-api-key header.")
		return
	case req.Key != s.key:
		writeDetail(w, http.StatusUnauthorized, "invalid_api_key", "Invalid API key")
		return
	case fault != nil:
		fault.serve(w, r, s.done)
		return
	case bodyErr != nil || req.Body == nil:
		writeValidation(w, []string{"body"}, "Expecting value: the body is not a JSON object", "json_invalid")
		return
	case strings.TrimSpace(req.Text()) == "":
		writeValidation(w, []string{"body", "text"}, "Field required", "missing")
		return
	case req.OutputFormat != "" && !formatRE.MatchString(req.OutputFormat):
		writeValidation(w, []string{"query", "output_format"}, "Input should be one of the supported output formats", "enum")
		return
	}
	if vs, ok := req.Body["voice_settings"].(map[string]any); ok {
		for name, rng := range settingRanges {
			n, ok := vs[name].(json.Number)
			if !ok {
				continue
			}
			if f, err := n.Float64(); err != nil || f < rng[0] || f > rng[1] {
				writeValidation(w, []string{"body", "voice_settings", name}, fmt.Sprintf("Input should be between %g and %g", rng[0], rng[1]), "value_error")
				return
			}
		}
	}
	if !known {
		writeDetail(w, http.StatusNotFound, "voice_not_found", fmt.Sprintf("A voice with the voice_id %s was not found.", voice))
		return
	}
	format := req.OutputFormat
	if format == "" {
		format = "mp3_44100_128"
	}
	ctype, audio := Audio(format, req.Text())
	w.Header().Set("Content-Type", ctype)
	w.Write(audio)
}

// Audio is what the fake answers for text in format: its Content-Type and
// bytes that begin as the real format does.
func Audio(format, text string) (contentType string, data []byte) {
	switch codec, _, _ := strings.Cut(format, "_"); codec {
	case "opus":
		return "audio/ogg", append(oggOpusHead(), text...)
	case "mp3":
		return "audio/mpeg", append([]byte("ID3\x04\x00\x00\x00\x00\x00\x00"), text...)
	case "pcm":
		return "audio/pcm", make([]byte, 2*len(text))
	}
	return "audio/basic", bytes.Repeat([]byte{0xFF}, len(text))
}

// oggOpusHead is the first Ogg page of an Opus stream (RFC 7845): the
// 27-byte page header (beginning of stream, one segment), the segment
// table, and the 19-byte OpusHead of one 48 kHz channel.
func oggOpusHead() []byte {
	page := []byte("OggS\x00\x02")
	page = append(page, make([]byte, 8+4+4+4)...) // granule, serial, sequence, CRC
	page = append(page, 1, 19)                    // one segment of 19 bytes
	page = append(page, "OpusHead\x01\x01\x38\x01\x80\xbb\x00\x00\x00\x00\x00"...)
	return page
}

// writeDetail answers {"detail":{"status":code,"message":msg}}.
func writeDetail(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"detail": map[string]any{"status": code, "message": msg}})
}

// writeValidation answers FastAPI's 422 list.
func writeValidation(w http.ResponseWriter, loc []string, msg, typ string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnprocessableEntity)
	json.NewEncoder(w).Encode(map[string]any{"detail": []any{map[string]any{"loc": loc, "msg": msg, "type": typ}}})
}
