package openaitest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Transcriber is a pretend OpenAI-compatible transcription server: POST
// /v1/audio/transcriptions with a multipart/form-data body (a "file" part
// and a "model" field, optionally language, prompt, response_format),
// answering {"text": ...} as OpenAI does for response_format json.
//
// It decodes the multipart body itself and records every request
// (Transcriptions); a request without a file or a model, or not multipart,
// gets OpenAI's 400. Answers are scripted in order with Answer; once the
// script is used up, each request is answered with the default text
// (SetText). With SetKey, a request without "Authorization: Bearer <key>"
// gets a 401 whatever the script says. Its methods are safe for concurrent
// use.
type Transcriber struct {
	t    testing.TB
	srv  *httptest.Server
	done chan struct{}

	mu       sync.Mutex
	changed  chan struct{}
	script   []TranscriptAnswer
	text     string
	key      string
	requests []Transcription
}

// Transcription is one request the fake received.
type Transcription struct {
	Auth        string // the Authorization header
	ContentType string // of the whole request
	Model       string
	Language    string
	Prompt      string
	Format      string // response_format
	FileName    string
	FileType    string // the file part's Content-Type
	Audio       []byte
}

// TranscriptAnswer is one scripted answer.
type TranscriptAnswer struct {
	status int
	text   string
	raw    string // a body sent as is
	retry  string // Retry-After
	hang   bool
}

// TranscriptText answers 200 {"text": text}.
func TranscriptText(text string) TranscriptAnswer {
	return TranscriptAnswer{status: http.StatusOK, text: text}
}

// TranscriptStatus answers status with OpenAI's error object; a 429
// carries Retry-After: 1.
func TranscriptStatus(status int) TranscriptAnswer {
	a := TranscriptAnswer{status: status}
	if status == http.StatusTooManyRequests {
		a.retry = "1"
	}
	return a
}

// TranscriptRaw answers status with body as is (a malformed answer, a
// proxy's page).
func TranscriptRaw(status int, body string) TranscriptAnswer {
	return TranscriptAnswer{status: status, raw: body}
}

// TranscriptHang answers nothing until the client gives up or the test
// ends: a slow endpoint.
func TranscriptHang() TranscriptAnswer { return TranscriptAnswer{hang: true} }

// NewTranscriber starts a fake on 127.0.0.1.
func NewTranscriber(t testing.TB) *Transcriber {
	t.Helper()
	return NewTranscriberOn(t, "127.0.0.1:0")
}

// NewTranscriberOn starts a fake on addr (never every interface) and stops
// it when the test ends.
func NewTranscriberOn(t testing.TB, addr string) *Transcriber {
	t.Helper()
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || host == "" || ip != nil && ip.IsUnspecified() {
		t.Fatalf("openaitest: transcriber address %q: name one address, e.g. 127.0.0.1:0", addr)
		return nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("openaitest: listen on %s: %v", addr, err)
		return nil
	}
	s := &Transcriber{t: t, done: make(chan struct{}), changed: make(chan struct{}), text: "(fake transcription)"}
	s.srv = &httptest.Server{Listener: l, Config: &http.Server{Handler: s}}
	s.srv.Start()
	t.Cleanup(func() {
		close(s.done)
		s.srv.Close()
	})
	return s
}

// URL is the endpoint to configure; it ends in /v1.
func (s *Transcriber) URL() string { return s.srv.URL + "/v1" }

// SetKey makes the fake require "Authorization: Bearer key".
func (s *Transcriber) SetKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = key
}

// SetText sets the answer once the script is used up.
func (s *Transcriber) SetText(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.text = text
}

// Answer queues answers for the next requests, in order.
func (s *Transcriber) Answer(a ...TranscriptAnswer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, a...)
}

// Transcriptions returns the requests received so far.
func (s *Transcriber) Transcriptions() []Transcription {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Transcription(nil), s.requests...)
}

// WaitTranscriptions waits until n requests have arrived, failing the test
// after 30 s.
func (s *Transcriber) WaitTranscriptions(t testing.TB, n int) []Transcription {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		got, changed := len(s.requests), s.changed
		s.mu.Unlock()
		if got >= n {
			return s.Transcriptions()
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("openaitest: %d transcription requests after 30 s; want %d", got, n)
			return nil
		}
	}
}

func (s *Transcriber) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/audio/transcriptions" {
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path))
		return
	}
	tr, problem := readTranscription(r)
	s.mu.Lock()
	s.requests = append(s.requests, tr)
	close(s.changed)
	s.changed = make(chan struct{})
	key := s.key
	var a TranscriptAnswer
	switch {
	case key != "" && tr.Auth != "Bearer "+key:
		a = TranscriptStatus(http.StatusUnauthorized)
	case problem != "":
		a = TranscriptAnswer{status: http.StatusBadRequest, text: problem}
	case len(s.script) > 0:
		a, s.script = s.script[0], s.script[1:]
	default:
		a = TranscriptText(s.text)
	}
	s.mu.Unlock()
	a.write(w, r, s.done)
}

func (a TranscriptAnswer) write(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
	switch {
	case a.hang:
		select {
		case <-r.Context().Done():
		case <-done:
		}
	case a.raw != "":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.status)
		_, _ = io.WriteString(w, a.raw)
	case a.status == http.StatusOK:
		writeJSON(w, http.StatusOK, map[string]any{"text": a.text})
	case a.status == http.StatusBadRequest:
		writeError(w, a.status, "invalid_request_error", "invalid_value", a.text)
	case a.status == http.StatusUnauthorized:
		writeError(w, a.status, "invalid_request_error", "invalid_api_key", "Incorrect API key provided.")
	case a.status == http.StatusTooManyRequests:
		w.Header().Set("Retry-After", a.retry)
		writeError(w, a.status, "requests", "rate_limit_exceeded", "Rate limit reached for requests.")
	default:
		writeError(w, a.status, "server_error", "", "The server had an error while processing your request.")
	}
}

// maxAudioBytes is OpenAI's upload limit; the fake refuses more, as it does.
const maxAudioBytes = 25 << 20

// readTranscription decodes the multipart body by hand; problem says why
// OpenAI would refuse it.
func readTranscription(r *http.Request) (tr Transcription, problem string) {
	tr.Auth, tr.ContentType = r.Header.Get("Authorization"), r.Header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(tr.ContentType)
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxRequestBytes))
		return tr, fmt.Sprintf("Content-Type %q: want multipart/form-data with a boundary", tr.ContentType)
	}
	mr := multipart.NewReader(io.LimitReader(r.Body, maxRequestBytes), params["boundary"])
	files := 0
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return tr, "could not parse multipart form: " + err.Error()
		}
		data, err := io.ReadAll(io.LimitReader(p, maxAudioBytes+1))
		if err != nil {
			return tr, "could not read part " + p.FormName() + ": " + err.Error()
		}
		switch name := p.FormName(); {
		case name == "file" && p.FileName() != "":
			files++
			tr.FileName, tr.FileType, tr.Audio = p.FileName(), p.Header.Get("Content-Type"), data
		case name == "model":
			tr.Model = string(data)
		case name == "language":
			tr.Language = string(data)
		case name == "prompt":
			tr.Prompt = string(data)
		case name == "response_format":
			tr.Format = string(data)
		}
	}
	supported := ".flac .mp3 .mp4 .mpeg .mpga .m4a .ogg .oga .wav .webm"
	ext := ""
	if i := strings.LastIndex(tr.FileName, "."); i >= 0 {
		ext = strings.ToLower(tr.FileName[i:])
	}
	switch {
	case files != 1:
		return tr, fmt.Sprintf("want exactly one file part named \"file\" with a filename; got %d", files)
	case tr.Model == "":
		return tr, "you must provide a model parameter"
	case len(tr.Audio) > maxAudioBytes:
		return tr, "Maximum content size limit (26214400) exceeded"
	case len(tr.Audio) == 0 || bytes.Equal(bytes.TrimSpace(tr.Audio), nil):
		return tr, "Audio file is empty"
	case ext == "" || !strings.Contains(supported+" ", ext+" "):
		return tr, fmt.Sprintf("Invalid file format. Supported formats: %s", supported)
	case tr.Format != "" && tr.Format != "json" && tr.Format != "text" && tr.Format != "verbose_json":
		return tr, fmt.Sprintf("response_format %q is not supported", tr.Format)
	}
	return tr, ""
}
