package openaitest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// recorder is a testing.TB that records failures and cleanups instead of
// acting on them, so a test can check what the fake reports.
type recorder struct {
	testing.TB
	mu       sync.Mutex
	failures []string
	cleanups []func()
}

func newRecorder(t *testing.T) *recorder { return &recorder{TB: t} }

func (r *recorder) Helper() {}
func (r *recorder) Fail()   { r.Errorf("Fail called") }
func (r *recorder) Error(args ...any) {
	r.Errorf("%s", fmt.Sprint(args...))
}
func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

// finish runs the recorded cleanups, as the end of a test would, and returns
// every failure reported.
func (r *recorder) finish() []string {
	r.mu.Lock()
	cleanups := r.cleanups
	r.cleanups = nil
	r.mu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.failures...)
}

// wantFailure checks that exactly one failure was reported and that it
// mentions each of parts.
func wantFailure(t *testing.T, failures []string, parts ...string) {
	t.Helper()
	if len(failures) != 1 {
		t.Fatalf("failures = %q; want exactly one", failures)
	}
	for _, p := range parts {
		if !strings.Contains(failures[0], p) {
			t.Errorf("failure %q does not mention %q", failures[0], p)
		}
	}
}

// post sends body to url as a client would and decodes the JSON answer.
func post(t *testing.T, ctx context.Context, url, body string) (int, http.Header, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if len(data) > 0 {
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatalf("answer %q is not a JSON object: %v", data, err)
		}
	}
	return resp.StatusCode, resp.Header, out
}

const chatWithTool = `{"model":"m","messages":[{"role":"user","content":"hi"}],
	"tools":[{"type":"function","function":{"name":%q,"parameters":{"type":"object"}}}]}`

func TestBadToolNameFailsTheTest(t *testing.T) {
	rec := newRecorder(t)
	s := New(rec)
	s.Expect(Chat().ReplyText("never sent"))

	status, _, body := post(t, t.Context(), s.URL()+"/chat/completions", fmt.Sprintf(chatWithTool, "choir.fs.read"))

	if status != http.StatusBadRequest {
		t.Errorf("status = %d; want 400, as a real provider answers", status)
	}
	if e, _ := body["error"].(map[string]any); !strings.Contains(fmt.Sprint(e["message"]), "choir.fs.read") {
		t.Errorf("error body = %v; want a message naming the tool", body)
	}
	wantFailure(t, rec.finish(), `tools[0].function.name "choir.fs.read"`, "step 1")
}

func TestWireSafeRequestPasses(t *testing.T) {
	rec := newRecorder(t)
	s := New(rec)
	s.Expect(Chat().WantModel("m").WantTools("choir_fs_read").WantNoTemperature().ReplyText("hello"))

	status, _, body := post(t, t.Context(), s.URL()+"/chat/completions", fmt.Sprintf(chatWithTool, "choir_fs_read"))

	if failures := rec.finish(); len(failures) > 0 {
		t.Fatalf("failures = %q; want none", failures)
	}
	if status != http.StatusOK {
		t.Fatalf("status = %d; want 200", status)
	}
	choice := body["choices"].([]any)[0].(map[string]any)
	if msg := choice["message"].(map[string]any); msg["content"] != "hello" || choice["finish_reason"] != "stop" {
		t.Errorf("choice = %v; want content hello, finish_reason stop", choice)
	}
	if got := len(s.Requests()); got != 1 {
		t.Errorf("recorded %d requests; want 1", got)
	}
}

func TestUnconsumedStepFailsAtCleanup(t *testing.T) {
	rec := newRecorder(t)
	s := New(rec)
	s.Expect(Chat().ReplyText("a"), Embeddings())
	post(t, t.Context(), s.URL()+"/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}]}`)

	wantFailure(t, rec.finish(), "step 2 (embeddings", "never requested")
}

func TestUnexpectedRequestFailsTheTest(t *testing.T) {
	rec := newRecorder(t)
	s := New(rec)
	s.Expect(Embeddings())

	status, _, _ := post(t, t.Context(), s.URL()+"/chat/completions", `{"model":"m","messages":[]}`)
	post(t, t.Context(), s.URL()+"/embeddings", `{"model":"e","input":["x"]}`)

	if status != http.StatusNotFound {
		t.Errorf("status = %d; want 404", status)
	}
	wantFailure(t, rec.finish(), "unexpected request 1: POST /v1/chat/completions", "next expected: step 1 (embeddings")
}

func TestToolMessageMustAnswerAnEarlierCall(t *testing.T) {
	rec := newRecorder(t)
	s := New(rec)
	s.Expect(Chat())

	post(t, t.Context(), s.URL()+"/chat/completions", `{"model":"m","messages":[
		{"role":"user","content":"x"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"call_2","content":"done"}]}`)

	wantFailure(t, rec.finish(), `messages[2] (tool) answers tool_call_id "call_2"`)
}

func TestFatalInACheckDoesNotHangTheClient(t *testing.T) {
	rec := newRecorder(t)
	s := New(rec)
	s.Expect(Chat().Check(func(t testing.TB, _ *Request) { t.Fatalf("wrong") }).ReplyText("still answered"))

	status, _, _ := post(t, t.Context(), s.URL()+"/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}]}`)

	if status != http.StatusOK {
		t.Errorf("status = %d; want 200", status)
	}
	wantFailure(t, rec.finish(), "wrong")
}

func TestNewOnRefusesEveryInterface(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", ":0"} {
		rec := newRecorder(t)
		done := make(chan struct{})
		go func() { // Fatalf ends this goroutine, as it would a test
			defer close(done)
			NewOn(rec, addr)
		}()
		<-done
		wantFailure(t, rec.finish(), "refusing to listen", addr)
	}
}

func TestNewOnListensWhereTold(t *testing.T) {
	s := NewOn(t, "127.0.0.1:0")
	if u := s.URL(); !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.HasSuffix(u, "/v1") {
		t.Errorf("URL() = %q; want http://127.0.0.1:<port>/v1", u)
	}
}

func TestReplies(t *testing.T) {
	s := New(t)
	chat := s.URL() + "/chat/completions"
	plain := `{"model":"m","messages":[{"role":"user","content":"x"}]}`

	s.Expect(Chat().ReplyToolCalls(ToolCall{ID: "a", Name: "f", Arguments: `{"x":`}, ToolCall{ID: "b", Name: "g", Arguments: `{}`}))
	_, _, body := post(t, t.Context(), chat, plain)
	choice := body["choices"].([]any)[0].(map[string]any)
	msg := choice["message"].(map[string]any)
	calls := msg["tool_calls"].([]any)
	args := calls[0].(map[string]any)["function"].(map[string]any)["arguments"]
	if len(calls) != 2 || args != `{"x":` || msg["content"] != nil || choice["finish_reason"] != "tool_calls" {
		t.Errorf("tool call reply = %v; want 2 calls, first arguments kept as sent, content null", body)
	}

	s.Expect(Chat().ReplyRateLimited("7"))
	status, header, body := post(t, t.Context(), chat, plain)
	if status != http.StatusTooManyRequests || header.Get("Retry-After") != "7" || body["error"] == nil {
		t.Errorf("rate limited reply = %d %v %v; want 429, Retry-After 7, an error body", status, header, body)
	}

	s.Expect(Chat().WithUsage(11, 5).ReplyContentFilter("part"))
	_, _, body = post(t, t.Context(), chat, plain)
	usage := body["usage"].(map[string]any)
	if choice := body["choices"].([]any)[0].(map[string]any); choice["finish_reason"] != "content_filter" || usage["total_tokens"] != 16.0 {
		t.Errorf("content filter reply = %v; want finish_reason content_filter, 16 tokens", body)
	}

	s.Expect(Embeddings().WantInputs("a", "bb"))
	_, _, body = post(t, t.Context(), s.URL()+"/embeddings", `{"model":"e","input":["a","bb"]}`)
	data := body["data"].([]any)
	if len(data) != 2 || fmt.Sprint(data[1].(map[string]any)["embedding"]) != "[1 2 1]" {
		t.Errorf("embeddings reply = %v; want 2 default vectors", body)
	}

	ctx, cancel := context.WithCancel(t.Context())
	arrived := make(chan struct{})
	s.Expect(Chat().Check(func(testing.TB, *Request) { close(arrived) }).Hang())
	go func() { <-arrived; cancel() }()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, chat, strings.NewReader(plain))
	req.Header.Set("Content-Type", "application/json")
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Errorf("a hanging step answered; want the canceled request to fail")
	}
}
