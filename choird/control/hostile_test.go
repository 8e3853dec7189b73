package control

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"choir/choird/lease"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/logs"
	"choir/internal/rpc"
)

// recorder is every fake the admin API calls: it records each call, so a
// test can assert that a refused request reached nothing.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) add(call string) {
	r.mu.Lock()
	r.calls = append(r.calls, call)
	r.mu.Unlock()
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

type recAgents struct{ *recorder }

var _ Agents = recAgents{}

func (a recAgents) Start(ctx context.Context, id string, o lease.Overrides) (ctl.AgentStatus, error) {
	a.add("start " + id)
	return ctl.AgentStatus{}, nil
}
func (a recAgents) Stop(ctx context.Context, id string) error { a.add("stop"); return nil }
func (a recAgents) Restart(ctx context.Context, id string) (ctl.AgentStatus, error) {
	a.add("restart")
	return ctl.AgentStatus{}, nil
}
func (a recAgents) Status(id string) (ctl.AgentStatus, error) { return ctl.AgentStatus{}, nil }
func (a recAgents) List() []ctl.AgentStatus                   { return nil }
func (a recAgents) Workspaces() []ctl.Workspace               { return nil }
func (a recAgents) ResetWorkspace(ctx context.Context, name string) (ctl.ResetResult, error) {
	a.add("reset")
	return ctl.ResetResult{}, nil
}
func (a recAgents) Running() int                       { return 0 }
func (a recAgents) Broadcast(typ string, data any) int { a.add("broadcast " + typ); return 0 }

type recSessions struct{ *recorder }

var _ Sessions = recSessions{}

func (s recSessions) SessionOf(id string) (string, bool)            { return "agent-1", true }
func (s recSessions) Cores(agentID string) ([]rpc.StatusReq, error) { return nil, nil }
func (s recSessions) CancelCore(agentID, job string) error          { s.add("cancel " + job); return nil }
func (s recSessions) Compact(agentID string) error                  { s.add("compact"); return nil }
func (s recSessions) Model(agentID string) (string, string, error)  { return "m", "", nil }
func (s recSessions) SetModel(agentID string, c ctl.ModelChoice) error {
	s.add("set model " + c.LLM)
	return nil
}
func (s recSessions) Broadcast(typ string, data any) int           { s.add("broadcast " + typ); return 0 }
func (s recSessions) Roles(agentID string) (string, string, error) { return "", "", nil }

type recMessenger struct{ *recorder }

func (m recMessenger) SendUserMessage(agentID string, msg rpc.UserMessage) (string, error) {
	m.add("message " + msg.Text)
	return "msg-1", nil
}
func (m recMessenger) Inject(agentID, text string) error { m.add("inject " + text); return nil }

type recLog struct{}

func (recLog) Sessions(ctx context.Context, agentID string) ([]ctl.SessionInfo, error) {
	return nil, nil
}
func (recLog) Events(ctx context.Context, id string, after int64) ([]ctl.SessionEvent, error) {
	return nil, nil
}
func (recLog) Session(ctx context.Context, id string) (*ctl.SessionDetail, error) { return nil, nil }

// hostileHome is a valid home (the config package's example, workspaces in
// temp directories) loaded into a plane wired to recording fakes.
func hostileHome(t *testing.T) (*Plane, config.Home, *recorder, *httptest.Server) {
	t.Helper()
	t.Setenv("DOCKER_HOST", "")
	home := config.Home{Dir: t.TempDir()}
	example, err := os.ReadFile("../../internal/config/testdata/example.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(example, &m)
	base := t.TempDir()
	ws := m["workspaces"].(map[string]any)
	ws["main-ws"].(map[string]any)["path"] = filepath.Join(base, "main")
	ws["scratch"].(map[string]any)["path"] = filepath.Join(base, "scratch")
	data, _ := json.Marshal(m)
	os.WriteFile(home.ConfigPath(), data, 0o644)
	secrets, _ := os.ReadFile("../../internal/config/testdata/example-secrets.json")
	os.WriteFile(home.SecretsPath(), secrets, 0o600)
	loaded, err := config.Load(home)
	if err != nil {
		t.Fatalf("config.Load(example) = %v", err)
	}
	lm, err := logs.NewManager(home.LogsDir(), 1000, slog.LevelInfo, logs.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lm.Close() })
	p := New(home, lm)
	p.SetConfig(loaded)
	rec := &recorder{}
	p.SetAgents(recAgents{rec})
	p.SetSessions(recLog{}, recSessions{rec})
	p.SetMessenger(recMessenger{rec})
	srv := httptest.NewServer(p.AdminHandler())
	t.Cleanup(srv.Close)
	return p, home, rec, srv
}

func post(t *testing.T, srv *httptest.Server, path string, body []byte) (int, string) {
	t.Helper()
	resp, err := http.Post(srv.URL+path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// TestHostileAdminAPI: request bodies that are too large, too deep, not
// UTF-8 or not the request are refused with 400 or 413 saying what and
// where; nothing reaches the lifecycle, the sessions or the messenger, and
// the running config and its version stay as they were.
func TestHostileAdminAPI(t *testing.T) {
	deep := func(n int) []byte { return []byte(strings.Repeat(`{"text":`, n) + `"x"` + strings.Repeat("}", n)) }
	for _, tc := range []struct {
		name   string
		path   string
		body   []byte
		status int
		want   string
	}{
		{"message nested two million levels", "/v1/agents/agent-1/messages", bytes.Repeat([]byte("["), 2_000_000), 413, "message: the body is larger than the limit of 1048576 bytes"},
		{"message nested past the limit", "/v1/agents/agent-1/messages", deep(65), 400, "message: line 1:513 (byte 512): JSON nested deeper than the limit of 64 levels"},
		{"message of invalid UTF-8", "/v1/agents/agent-1/messages", []byte("{\"text\":\"hi \xff there\"}"), 400, "message: line 1:13 (byte 12): invalid UTF-8 (byte 0xff)"},
		{"message with an unpaired surrogate", "/v1/agents/agent-1/messages", []byte(`{"text":"hi \udbff"}`), 400, `\udbff is the first half of a UTF-16 surrogate pair`},
		{"message over 1 MiB", "/v1/agents/agent-1/messages", []byte(`{"text":"` + strings.Repeat("a", 1<<20) + `"}`), 413, "larger than the limit of 1048576 bytes"},
		{"message with trailing data", "/v1/agents/agent-1/messages", []byte(`{"text":"a"}{"text":"b"}`), 400, "data after the JSON value"},
		{"message with an unknown field", "/v1/agents/agent-1/messages", []byte(`{"text":"a","from":"telegram"}`), 400, `unknown field "from"`},
		{"inject of invalid UTF-8", "/v1/agents/agent-1/inject", []byte("{\"text\":\"\xc0\x80\"}"), 400, "invalid UTF-8"},
		{"start with a syntax error", "/v1/agents/agent-1/start", []byte("{\n\"workspace\": ,}"), 400, "start request: malformed JSON: line 2:14 (byte 15): invalid character ','"},
		{"start nested past the limit", "/v1/agents/agent-1/start", []byte(`{"workspace":` + strings.Repeat("[", 70) + `]}`), 400, "start request: line 1:"},
		{"start over 64 KiB", "/v1/agents/agent-1/start", []byte(`{"workspace":"` + strings.Repeat("w", 64<<10) + `"}`), 413, "larger than the limit of 65536 bytes"},
		{"start with an empty body", "/v1/agents/agent-1/start", nil, 400, "start request: empty body"},
		{"cancel with invalid UTF-8", "/v1/sessions/s-1/cancel", []byte("{\"job_name\":\"j\xfe\"}"), 400, "cancel request: line 1:"},
		{"cancel nested two million levels", "/v1/sessions/s-1/cancel", bytes.Repeat([]byte("["), 60_000), 400, "limit of 64 levels"},
		{"model set with a lone low surrogate", "/v1/agents/agent-1/model", []byte(`{"llm":"\udc00"}`), 400, "model choice: line 1:9 (byte 8)"},
		{"model set truncated", "/v1/agents/agent-1/model", []byte(`{"llm":"m`), 400, "the body ends in the middle of a value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _, rec, srv := hostileHome(t)
			loaded, version := p.Current()
			status, body := post(t, srv, tc.path, tc.body)
			var eb ctl.ErrorBody
			if json.Unmarshal([]byte(body), &eb) != nil || eb.Error == nil || eb.Error.Code == "" {
				t.Fatalf("POST %s = %d %s; want an error body {\"error\":{\"code\",\"message\"}}", tc.path, status, body)
			}
			if status != tc.status || !strings.Contains(eb.Error.Message, tc.want) {
				t.Fatalf("POST %s = %d %s\nwant %d and %q", tc.path, status, eb.Error.Message, tc.status, tc.want)
			}
			if calls := rec.got(); len(calls) != 0 {
				t.Errorf("a refused request reached %v", calls)
			}
			if l, v := p.Current(); l != loaded || v != version {
				t.Errorf("the running config changed on a refused request: version %d → %d", version, v)
			}
		})
	}
	// The same endpoints still serve a good request.
	_, _, rec, srv := hostileHome(t)
	if status, body := post(t, srv, "/v1/agents/agent-1/messages", []byte(`{"text":"héllo \ud83c\udfb5"}`)); status != 200 {
		t.Fatalf("POST a good message = %d %s", status, body)
	}
	if calls := rec.got(); len(calls) != 1 || calls[0] != "message héllo 🎵" {
		t.Errorf("a good message reached %v; want it once, unchanged", calls)
	}
}

// TestHostileSecretApply: `secret apply` (POST /v1/secrets/apply) refuses a
// secrets.json that is open to others, not choird's user's, not a file, too
// large, too deep or not UTF-8; the running secrets, the config version and
// the file stay exactly as they were, and no agent is told anything.
func TestHostileSecretApply(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, path string)
		want  string
	}{
		{"world-readable", func(t *testing.T, path string) { os.Chmod(path, 0o644) }, "run `chmod 600 "},
		{"read-only", func(t *testing.T, path string) { os.Chmod(path, 0o400) }, "must be 0600"},
		{"owned by another user", func(t *testing.T, path string) {
			if os.Getuid() != 0 {
				t.Skip("changing a file's owner needs root")
			}
			os.Chown(path, 65534, 65534)
		}, "owned by uid 65534"},
		{"a FIFO", func(t *testing.T, path string) {
			os.Remove(path)
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}, "not a regular file"},
		{"over 16 MiB", func(t *testing.T, path string) { os.Truncate(path, 16<<20+1) }, "over the limit of 16 MiB"},
		{"nested past the limit", func(t *testing.T, path string) {
			os.WriteFile(path, []byte(strings.Repeat("[", 1_000_000)), 0o600)
		}, "limit of 64 levels"},
		{"invalid UTF-8 in a value", func(t *testing.T, path string) {
			os.WriteFile(path, []byte("{\"openrouter-key\": \"sk-\xff\"}"), 0o600)
		}, "not valid UTF-8 (value not shown)"},
		{"a secret the running config names is missing", func(t *testing.T, path string) {
			os.WriteFile(path, []byte(`{"openrouter-key": "sk-new"}`), 0o600)
		}, "does not fit the running configuration; nothing applied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, home, rec, srv := hostileHome(t)
			loaded, version := p.Current()
			tc.setup(t, home.SecretsPath())
			fi, _ := os.Lstat(home.SecretsPath())
			var before []byte
			if fi.Mode().IsRegular() {
				before, _ = os.ReadFile(home.SecretsPath())
			}
			status, body := post(t, srv, "/v1/secrets/apply", nil)
			if status != http.StatusUnprocessableEntity || !strings.Contains(body, tc.want) {
				t.Fatalf("secret apply = %d %s\nwant 422 and %q", status, body, tc.want)
			}
			if strings.Contains(body, "sk-") {
				t.Errorf("the refusal shows a secret value: %s", body)
			}
			if l, v := p.Current(); l != loaded || v != version || l.Secrets["openrouter-key"] != "sk-or-example" {
				t.Errorf("the running secrets changed on a refused apply (version %d → %d)", version, v)
			}
			if calls := rec.got(); len(calls) != 0 {
				t.Errorf("a refused apply reached %v", calls)
			}
			if fi2, _ := os.Lstat(home.SecretsPath()); fi2.Mode() != fi.Mode() || fi2.Size() != fi.Size() {
				t.Errorf("secrets.json changed on a refused apply: %v → %v", fi.Mode(), fi2.Mode())
			}
			if fi.Mode().IsRegular() {
				if after, _ := os.ReadFile(home.SecretsPath()); !bytes.Equal(before, after) {
					t.Error("secrets.json's content changed on a refused apply")
				}
			}
		})
	}
}
