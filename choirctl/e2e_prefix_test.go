package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/testkit"
	"choir/testkit/demomodel"
	"choir/testkit/dockertest"
)

// prefixModel is the model of TestStablePrefixAndLoopBreakerInAContainer.
// The edge (a request that offers choir_core_spawn) obeys the user's
// "E2E <command>" messages; a core job (one that offers choir_core_finish)
// waits for the test to release it, then finishes; everything else
// (compaction, the session summary) goes to the demo model. It records what
// every edge request began with, the tools it offered and the state note
// that ended it.
type prefixModel struct {
	demo    demomodel.Server
	release chan struct{} // closed to let core jobs finish

	mu       sync.Mutex
	firsts   [][]byte   // the first message of each edge request, as sent
	tools    [][]string // the tools each edge request offered, in order
	notes    []string   // state notes seen
	coreDone int        // core jobs answered with a finish
}

// e2eNote starts the lane's state note (agent/lane/prompt.go).
const e2eNote = "[choir] Now: "

func (m *prefixModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 16<<20))
	var req struct {
		Model    string            `json:"model"`
		Messages []json.RawMessage `json:"messages"`
		Tools    []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if json.Unmarshal(body, &req) != nil || len(req.Messages) == 0 {
		r.Body = io.NopCloser(bytes.NewReader(body))
		m.demo.ServeHTTP(w, r)
		return
	}
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Function.Name)
	}
	type msg struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	msgs := make([]msg, len(req.Messages))
	for i, raw := range req.Messages {
		json.Unmarshal(raw, &msgs[i])
	}
	call := func(name, args string) {
		writeCompletion(w, req.Model, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": fmt.Sprintf("call_%d", time.Now().UnixNano()), "type": "function",
			"function": map[string]any{"name": name, "arguments": args}}}}, "tool_calls")
	}
	say := func(text string) {
		writeCompletion(w, req.Model, map[string]any{"role": "assistant", "content": text}, "stop")
	}
	switch {
	case slices.Contains(names, "choir_core_finish"):
		select {
		case <-m.release:
		case <-time.After(3 * time.Minute):
		}
		m.mu.Lock()
		m.coreDone++
		m.mu.Unlock()
		call("choir_core_finish", `{"summary":"notes read"}`)
		return
	case !slices.Contains(names, "choir_core_spawn"):
		r.Body = io.NopCloser(bytes.NewReader(body))
		m.demo.ServeHTTP(w, r)
		return
	}
	last := msgs[len(msgs)-1]
	m.mu.Lock()
	m.firsts = append(m.firsts, req.Messages[0])
	m.tools = append(m.tools, names)
	if last.Role == "user" && strings.HasPrefix(last.Content, e2eNote) {
		m.notes = append(m.notes, last.Content)
		last = msgs[len(msgs)-2]
	}
	m.mu.Unlock()
	command := ""
	for _, x := range slices.Backward(msgs) {
		if c, ok := strings.CutPrefix(x.Content, "E2E "); ok && x.Role == "user" {
			command = c
			break
		}
	}
	switch {
	case command == "REPEAT" && (last.Role == "user" || last.Role == "tool"):
		call("choir_fs_read", `{"path":"loop.txt"}`) // again and again
	case last.Role == "tool":
		say("ok")
	case strings.HasPrefix(command, "SPAWN "):
		job := strings.TrimPrefix(command, "SPAWN ")
		call("choir_core_spawn", `{"job_name":"`+job+`","task_spec":"Read notes.txt and say what it holds."}`)
	case command == "START":
		call("choir_skill_start", `{"skill":"skill-builder"}`)
	case command == "MOVE":
		call("choir_skill_transition", `{"on":"complete"}`)
	case command == "READ":
		call("choir_fs_read", `{"path":"notes.txt"}`)
	default:
		say("ok")
	}
}

// TestStablePrefixAndLoopBreakerInAContainer: a real agent in a container.
// Across turns that spawn a core job (the edge talking while it runs) and
// move a skill through its states, every edge request begins with the same
// bytes and offers the same tools; what changes arrives in the state note
// at the end. A model that repeats one call is stopped by the loop breaker,
// and the user is told why.
func TestStablePrefixAndLoopBreakerInAContainer(t *testing.T) {
	dc := dockertest.Engine(t)
	home := filepath.Join(t.TempDir(), "h")
	ctlRun(t, home, "", "init")
	env := backends(t, home)
	ws := testkit.Workspace(t)
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("the meeting is at noon\n"), 0o644)

	l, err := net.Listen("tcp", net.JoinHostPort(dockertest.BridgeIP(t), "0"))
	if err != nil {
		t.Fatal(err)
	}
	model := &prefixModel{release: make(chan struct{})}
	srv := &http.Server{Handler: model}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	released := false
	release := func() {
		if !released {
			released = true
			close(model.release)
		}
	}
	t.Cleanup(release)

	editConfig(t, home, func(cfg map[string]any) {
		cfg["global_repo"] = map[string]any{"url": "/nonexistent/global.git"}
		cfg["workspaces"] = map[string]any{"main": map[string]any{"path": ws}}
		cfg["models"] = map[string]any{"m": map[string]any{"provider": "test", "model": "prefix", "endpoint": "http://" + l.Addr().String() + "/v1", "secret": "llm-key"}}
		cfg["git_identities"] = map[string]any{"dev": map[string]any{"name": "Dev", "email": "dev@choir.local", "secret": "git-token"}}
		cfg["gateways"] = map[string]any{"console": map[string]any{"type": "console"}}
		cfg["dms"] = map[string]any{"dm1": map[string]any{"gateway": "console", "admin": true}}
		cfg["agents"] = map[string]any{"agent-1": map[string]any{"defaults": map[string]any{"workspace": "main", "llm": "m", "git_identity": "dev", "dm": "dm1"}}}
		cfg["heartbeat_interval_ms"] = 200
	})
	for name, value := range map[string]string{"llm-key": apiSecret, "git-token": "ghp-prefix-Token-3Vq"} {
		if _, stderr, code := ctlRun(t, home, "", "secret", "set", name, value); code != 0 {
			t.Fatalf("secret set %s = %d %s", name, code, stderr)
		}
	}
	dockertest.AgentImage(t, dc, "agent-1", "prefix1")
	d := startChoird(t, home, env)
	waitReady(t, home, d)
	if out, stderr, code := ctlRun(t, home, "", "agent", "start", "agent-1", "--dm=dm1"); code != 0 {
		t.Fatalf("agent start = %d %q %q\nchoird: %s", code, out, stderr, d.stderr.String())
	}
	t.Cleanup(func() { ctlRun(t, home, "", "agent", "stop", "agent-1") })
	say := func(msg string) string {
		t.Helper()
		out, stderr, code := ctlRun(t, home, msg, "chat", "agent-1", "--once", "--timeout", "3m")
		if code != 0 {
			data, _ := os.ReadFile(filepath.Join(home, "logs", "agent-1.log"))
			t.Fatalf("chat %q = %d %q %q\nagent log tail:\n%s", msg, code, out, stderr, data[max(0, len(data)-3000):])
		}
		return out
	}

	say("E2E READ")
	say("E2E SPAWN digest") // the job waits at its first call
	say("E2E READ")         // the edge talks while it runs
	release()
	waitFor(t, "the core job to finish", func() bool { model.mu.Lock(); defer model.mu.Unlock(); return model.coreDone == 1 })
	// The loop breaker: the third identical call is refused, the fourth
	// ends the turn with a reply that says why, as a failed turn (exit 1).
	out, stderr, code := ctlRun(t, home, "E2E REPEAT", "chat", "agent-1", "--once", "--timeout", "3m")
	if code != 1 || !strings.Contains(out, "[error] I stopped this turn") || !strings.Contains(out, "choir.fs.read was proposed with the same arguments 4 times in a row") {
		t.Errorf("chat with a repeating model = %d %q %q; want 1 and the loop breaker's report", code, out, stderr)
	}
	say("E2E START") // skill-builder, state understand
	say("E2E MOVE")  // to design
	say("E2E READ")  // refused by the skill's state, answered all the same

	model.mu.Lock()
	defer model.mu.Unlock()
	if len(model.firsts) < 12 {
		t.Fatalf("the edge made %d model calls; want at least 12", len(model.firsts))
	}
	for i, first := range model.firsts {
		if !bytes.Equal(first, model.firsts[0]) {
			t.Errorf("edge request %d: the first message changed:\n%s\nwant\n%s", i+1, first, model.firsts[0])
		}
		if !slices.Equal(model.tools[i], model.tools[0]) {
			t.Errorf("edge request %d: tools = %v; want %v", i+1, model.tools[i], model.tools[0])
		}
	}
	joined := strings.Join(model.notes, "\n---\n")
	for _, want := range []string{"Core jobs running now: digest.", "The skill skill-builder is running, in the state understand.",
		"The skill skill-builder is running, in the state design."} {
		if !strings.Contains(joined, want) {
			t.Errorf("no state note said %q; notes:\n%s", want, joined)
		}
	}
}
