package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"choir/testkit/dockertest"
)

// recordingModel keeps what it was sent and answers every call 503 (down)
// or with the text "Backup here." (whatever was asked: the test needs a
// model that answers, not the demo model's paths).
type recordingModel struct {
	down bool
	mu   sync.Mutex
	reqs []downRequest
}

type downRequest struct {
	header http.Header
	body   map[string]any
}

func (m *recordingModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 16<<20))
	var body map[string]any
	json.Unmarshal(data, &body)
	m.mu.Lock()
	m.reqs = append(m.reqs, downRequest{header: r.Header.Clone(), body: body})
	m.mu.Unlock()
	if !m.down {
		model, _ := body["model"].(string)
		writeCompletion(w, model, map[string]any{"role": "assistant", "content": backupText}, "stop")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	io.WriteString(w, `{"error":{"message":"the upstream is overloaded","type":"server_error"}}`)
}

func (m *recordingModel) requests() []downRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]downRequest(nil), m.reqs...)
}

// serveHandler serves h where containers reach it and returns its /v1
// endpoint.
func serveHandler(t testing.TB, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(dockertest.BridgeIP(t), "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String() + "/v1"
}

// gatewayKey is a header secret of the request template: it must reach the
// model's endpoint and no log.
const gatewayKey = "gw-e2e-Key-3Vq8"

const backupText = "Backup here."

// askBackup sends one message to agent-1 and returns what choirctl printed.
func askBackup(t *testing.T, ag *builtAgent, msg string) string {
	t.Helper()
	out, stderr, code := ctlRun(t, ag.home, msg, "chat", "agent-1", "--once", "--timeout", "2m")
	if code != 0 || !strings.Contains(out, backupText) {
		t.Fatalf("chat %q = %d %q %q; want the backup's answer\n%s", msg, code, out, stderr, ag.report())
	}
	return out
}

// A real agent whose model answers 503 is answered by the model's fallback,
// and the user sees which failed and which answered; the model's request
// template (body fields, a literal header, a header holding a named
// secret) reaches the wire from the container, and the secret reaches no
// log, choird's or the agent's.
func TestModelFallbackAndTemplateInAContainer(t *testing.T) {
	down, backup := &recordingModel{down: true}, &recordingModel{}
	endpointDown, endpointBackup := serveHandler(t, down), serveHandler(t, backup)
	ag := newBuiltAgent(t, builtOpts{
		config: func(cfg map[string]any) {
			models := cfg["models"].(map[string]any)
			models["backup"] = map[string]any{"provider": "test", "model": "backup-model", "endpoint": endpointBackup, "secret": "llm-key"}
			models["m"] = map[string]any{"provider": "test", "model": "down-model", "endpoint": endpointDown, "secret": "llm-key",
				"fallback": []any{"backup"},
				"request": map[string]any{
					"body":    map[string]any{"provider": map[string]any{"order": []any{"primary"}}, "max_tokens": 777},
					"headers": map[string]any{"X-Title": "choir-e2e", "X-Gateway-Key": map[string]any{"secret": "gw-key", "format": "Key %s"}},
				}}
		},
		secrets: map[string]string{"gw-key": gatewayKey},
	})

	out := askBackup(t, ag, "hello")
	notice := "[notice] The model m failed (HTTP 503); its fallback backup answered instead."
	if strings.Count(out, notice) != 1 {
		t.Errorf("chat output:\n%s\nwant the notice once: %s", out, notice)
	}
	if reqs := backup.requests(); len(reqs) == 0 || reqs[0].body["model"] != "backup-model" || reqs[0].header.Get("X-Title") != "" {
		t.Errorf("the fallback's requests = %d; want its own model id and not the first model's template", len(reqs))
	}

	reqs := down.requests()
	if len(reqs) == 0 {
		t.Fatalf("the failing model got no request\n%s", ag.report())
	}
	r := reqs[0]
	if p, _ := r.body["provider"].(map[string]any); p == nil || r.body["max_tokens"] != float64(777) || r.body["model"] != "down-model" {
		t.Errorf("the first model's request body: provider %v, max_tokens %v, model %v; want the template's fields and its own model id", r.body["provider"], r.body["max_tokens"], r.body["model"])
	}
	if r.header.Get("X-Title") != "choir-e2e" || r.header.Get("X-Gateway-Key") != "Key "+gatewayKey || r.header.Get("Authorization") != "Bearer "+apiSecret {
		t.Errorf("the first model's headers: X-Title %q, X-Gateway-Key set %v, Authorization set %v; want the template's and the model's key",
			r.header.Get("X-Title"), r.header.Get("X-Gateway-Key") != "", r.header.Get("Authorization") != "")
	}

	// A second turn tells again (once per turn).
	out = askBackup(t, ag, "again")
	if strings.Count(out, notice) != 1 {
		t.Errorf("second chat output:\n%s\nwant the notice once more", out)
	}

	// model set per role, at the next call: the edge and the summary move to
	// the backup, and the failing model is called no more.
	if out, stderr, code := ctlRun(t, ag.home, "", "model", "set", "agent-1", "--llm=backup", "--summary-llm=backup"); code != 0 || !strings.Contains(out, "now uses model backup (core jobs backup (the llm's), summary backup)") {
		t.Errorf("model set = %d %q %q", code, out, stderr)
	}
	if out, _, _ := ctlRun(t, ag.home, "", "model", "get", "agent-1"); out != "backup\nsummary_llm: backup\n" {
		t.Errorf("model get = %q; want the edge's model and the summary's", out)
	}
	calls := len(down.requests())
	if out = askBackup(t, ag, "after the switch"); strings.Contains(out, "[notice]") {
		t.Errorf("chat after model set:\n%s\nwant no notice", out)
	}
	if n := len(down.requests()); n != calls {
		t.Errorf("the failing model got %d more requests after model set; want none", n-calls)
	}

	if _, stderr, code := ctlRun(t, ag.home, "", "agent", "stop", "agent-1"); code != 0 {
		t.Errorf("agent stop = %d %q", code, stderr)
	}
	if logs := logsText(t, filepath.Join(ag.home, "logs")); strings.Contains(logs, gatewayKey) {
		t.Error("the header secret's value shows in the logs")
	} else if !strings.Contains(logs, "model attempt") {
		t.Errorf("the logs hold no model attempt; want each attempt and its outcome logged\n%s", ag.report())
	}
	if strings.Contains(ag.d.stderr.String(), gatewayKey) {
		t.Error("the header secret's value shows in choird's output")
	}
}
