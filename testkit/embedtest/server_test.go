package embedtest

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"

	"choir/internal/embed"
)

// recorder is a testing.TB that records failures and cleanups instead of
// acting on them, so a test can check what the fake reports.
type recorder struct {
	testing.TB
	mu       sync.Mutex
	failures []string
	cleanups []func()
}

func (r *recorder) Helper()           {}
func (r *recorder) Error(args ...any) { r.Errorf("%s", fmt.Sprint(args...)) }
func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...); runtime.Goexit() }
func (r *recorder) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

func (r *recorder) finish() []string {
	r.mu.Lock()
	cleanups := r.cleanups
	r.mu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.failures...)
}

func post(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	return resp.StatusCode, m
}

func TestWireRulesFailTheTest(t *testing.T) {
	tests := []struct{ name, body, problem string }{
		{"empty string input", `{"model":"m","input":""}`, "input must not be an empty string"},
		{"empty item", `{"model":"m","input":["a",""]}`, "input[1] must be a non-empty string"},
		{"token arrays", `{"model":"m","input":[[1,2]]}`, "input[0] must be a non-empty string"},
		{"no input", `{"model":"m","input":[]}`, "input has 0 items"},
		{"no model", `{"input":["a"]}`, "model must be a non-empty string"},
		{"dimensions zero", `{"model":"m","input":["a"],"dimensions":0}`, "dimensions 0 must be a positive integer"},
		{"dimensions fractional", `{"model":"m","input":["a"],"dimensions":1.5}`, "dimensions 1.5 must be a positive integer"},
		{"unknown encoding", `{"model":"m","input":["a"],"encoding_format":"int8"}`, `encoding_format int8; want "float"`},
		{"not JSON", `model=m`, "body is not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			s := New(rec)
			status, body := post(t, s.URL()+"/embeddings", tt.body)
			failures := rec.finish()
			if status != http.StatusBadRequest || body["error"] == nil {
				t.Errorf("answer = %d %v; want a 400 error body", status, body)
			}
			if len(failures) == 0 || !strings.Contains(strings.Join(failures, "\n"), tt.problem) {
				t.Errorf("failures = %q; want one mentioning %q", failures, tt.problem)
			}
		})
	}
}

func TestAnswersAreDeterministicVectors(t *testing.T) {
	s := New(t)
	s.SetDims(6)
	status, body := post(t, s.URL()+"/embeddings", `{"model":"m","input":["alpha","beta"]}`)
	want, _ := embed.Hashing{Dims: 6}.Embed(t.Context(), []string{"alpha", "beta"})
	data, _ := body["data"].([]any)
	if status != http.StatusOK || len(data) != 2 || body["model"] != "m" || body["object"] != "list" {
		t.Fatalf("answer = %d %v; want a list of 2 embeddings for model m", status, body)
	}
	for i, d := range data {
		item := d.(map[string]any)
		vec := item["embedding"].([]any)
		if item["index"] != float64(i) || len(vec) != 6 || float32(vec[0].(float64)) != want[i][0] {
			t.Errorf("data[%d] = %v; want index %d and the Hashing vector %v", i, item, i, want[i])
		}
	}

	_, body = post(t, s.URL()+"/embeddings", `{"model":"m","input":"alpha","dimensions":3,"encoding_format":"base64"}`)
	raw, _ := base64.StdEncoding.DecodeString(body["data"].([]any)[0].(map[string]any)["embedding"].(string))
	got := make([]float32, len(raw)/4)
	_ = binary.Read(bytes.NewReader(raw), binary.LittleEndian, got)
	want, _ = embed.Hashing{Dims: 3}.Embed(t.Context(), []string{"alpha"})
	if len(got) != 3 || math.Abs(float64(got[0]-want[0][0])) > 0 {
		t.Errorf("base64 embedding = %v; want %v", got, want[0])
	}
}

func TestFaultsComeInOrderThenNormalAnswers(t *testing.T) {
	s := New(t)
	s.SetDims(4)
	s.Fail(RateLimited("2"), ServerError(), WrongCount())
	var statuses []int
	for range 4 {
		status, _ := post(t, s.URL()+"/embeddings", `{"model":"m","input":["a","b"]}`)
		statuses = append(statuses, status)
	}
	if fmt.Sprint(statuses) != "[429 500 200 200]" || s.Pending() != 0 || len(s.Requests()) != 4 {
		t.Errorf("statuses = %v, %d faults pending, %d requests; want [429 500 200 200], 0, 4", statuses, s.Pending(), len(s.Requests()))
	}
}

func TestKeyRequired(t *testing.T) {
	s := New(t)
	s.RequireKey("sk-right")
	status, body := post(t, s.URL()+"/embeddings", `{"model":"m","input":["a"]}`)
	if status != http.StatusUnauthorized || body["error"].(map[string]any)["code"] != "invalid_api_key" {
		t.Errorf("answer without a key = %d %v; want 401 invalid_api_key", status, body)
	}
}

func TestUnknownPathFailsTheTest(t *testing.T) {
	rec := &recorder{TB: t}
	s := New(rec)
	status, _ := post(t, s.URL()+"/chat/completions", `{}`)
	if failures := rec.finish(); status != http.StatusNotFound || len(failures) != 1 {
		t.Errorf("answer = %d, failures %q; want 404 and one failure", status, failures)
	}
}
