package lifecycle

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/choird/lease"
	"choir/internal/docker"
	"choir/internal/rpc"
	"choir/testkit"
	"choir/testkit/demomodel"
	"choir/testkit/dockertest"
)

// runModel is the scripted model of the run-session tests: the objective
// "write <file> <text>" is answered with a choir.fs.write call, "exec
// <command>" with a choir.exec call, "hang" never (the call waits until
// the agent gives up on it); a tool's result with "done". It records the
// tools offered and the tool results seen, by objective. Everything else
// (summaries) goes to the demo model.
type runModel struct {
	demo    demomodel.Server
	mu      sync.Mutex
	offered map[string][]string // objective → wire names offered with it
	results map[string]string   // objective → the tool result the model saw
}

func (m *runModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	json.Unmarshal(body, &req)
	objective, last := "", ""
	lastRole := ""
	for _, msg := range req.Messages {
		var text string
		json.Unmarshal(msg.Content, &text)
		if msg.Role == "user" {
			for _, verb := range []string{"write ", "exec ", "hang"} {
				if strings.HasPrefix(text, verb) {
					objective = text
				}
			}
		}
		last, lastRole = text, msg.Role
	}
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Function.Name)
	}
	if objective == "" || slices.Contains(names, "memory_delta") {
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		m.demo.ServeHTTP(w, r)
		return
	}
	m.mu.Lock()
	if _, seen := m.offered[objective]; !seen {
		m.offered[objective] = names
	}
	if lastRole == "tool" {
		m.results[objective] = last
	}
	m.mu.Unlock()
	complete := func(msg map[string]any, finish string) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "run", "object": "chat.completion", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}})
	}
	call := func(tool string, args map[string]any) {
		a, _ := json.Marshal(args)
		complete(map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": fmt.Sprintf("call_%d", time.Now().UnixNano()), "type": "function",
			"function": map[string]any{"name": tool, "arguments": string(a)}}}}, "tool_calls")
	}
	switch {
	case lastRole == "tool":
		complete(map[string]any{"role": "assistant", "content": "done"}, "stop")
	case objective == "hang":
		<-r.Context().Done()
	case strings.HasPrefix(objective, "write "):
		f := strings.SplitN(objective, " ", 3)
		call("choir_fs_write", map[string]any{"path": f[1], "op": "create", "content": f[2]})
	case strings.HasPrefix(objective, "exec "):
		call("choir_exec", map[string]any{"command": strings.TrimPrefix(objective, "exec ")})
	}
}

func (m *runModel) seen(objective string) (offered []string, result string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.offered[objective], m.results[objective]
}

// TestRunSessionOnARealEngine: run sessions of lc-agent-1 in containers
// of their own, on a real engine with the real choir-agent, while its
// interactive session runs: a run writes a file in its worktree and
// answers "done" (the container gone and the session ended after); a run
// whose tool list lacks choir.exec is not offered it and cannot call it;
// a run past its wall time is stopped and reported as a timeout. The
// interactive session runs on, untouched, throughout. (Network on: the
// model calls go straight to the test's model on the bridge.)
func TestRunSessionOnARealEngine(t *testing.T) {
	h := newHarness(t)
	model := &runModel{offered: map[string][]string{}, results: map[string]string{}}
	ln, err := net.Listen("tcp", net.JoinHostPort(dockertest.BridgeIP(t), "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: model}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	// Model calls of sessions without network come through choird: the
	// proxy hands them to the same model, noting the container's network.
	proxy := &runProxy{model: model, dc: h.dc}
	h.srv.Models = proxy
	l, _ := h.m.Config()
	mc := l.Config.Models["m"]
	mc.Endpoint = "http://" + ln.Addr().String() + "/v1"
	l.Config.Models["m"] = mc
	ctx := context.Background()

	st, err := h.m.Start(ctx, "lc-agent-1", lease.Overrides{})
	if err != nil {
		t.Fatalf("start the interactive session: %v", err)
	}
	t.Cleanup(func() { h.m.Stop(context.Background(), "lc-agent-1") })
	interactive := st.SessionID

	runContainers := func(runID string) []docker.ContainerSummary {
		cs, err := h.dc.ContainerList(ctx, docker.ContainerListOptions{All: true, Filters: docker.Filters{"label": {LabelRun + "=" + runID}}})
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	stillInteractive := func(when string) {
		t.Helper()
		st, err := h.m.Status("lc-agent-1")
		if err != nil || st.State != StateRunning || st.SessionID != interactive {
			t.Fatalf("%s: the interactive session is %s %s (%v); want %s running", when, st.State, st.SessionID, err, interactive)
		}
	}

	// 1. A run writes a file in its worktree and answers.
	wt := filepath.Join(t.TempDir(), "wt")
	if err := testkit.MakeWorkspace(wt); err != nil {
		t.Fatal(err)
	}
	const write = "write hello.txt hi from run 1"
	out, err := h.m.Perform(ctx, Performance{RunID: "r-000000000001", AgentID: "lc-agent-1", Worktree: wt, Objective: write,
		Tools: []string{"choir.fs.write", "choir.fs.read"}, Network: true, WallTime: 2 * time.Minute})
	if err != nil {
		t.Fatalf("Perform = %v", err)
	}
	if out.Status != RunAnswered || out.Answer != "done" || out.SessionID == "" || out.SessionID == interactive {
		t.Fatalf("Perform = %+v; want answered \"done\" in a session of its own", out)
	}
	if b, err := os.ReadFile(filepath.Join(wt, "hello.txt")); err != nil || string(b) != "hi from run 1" {
		t.Errorf("hello.txt in the worktree = %q, %v; want the run's text", b, err)
	}
	if cs := runContainers("r-000000000001"); len(cs) != 0 {
		t.Errorf("the run's container is still there: %+v", cs)
	}
	if s := h.store.status(out.SessionID); s != StatusStopped {
		t.Errorf("the run session is %q; want stopped", s)
	}
	// The skill control tools (choir.skill.*) belong to the lanes: a skill
	// runs with its tools as the registry has them, the brief's only.
	offered, _ := model.seen(write)
	tools := slices.DeleteFunc(slices.Clone(offered), func(n string) bool { return strings.HasPrefix(n, "choir_skill_") })
	slices.Sort(tools)
	if !slices.Equal(tools, []string{"choir_fs_read", "choir_fs_write"}) {
		t.Errorf("the run offered %v; want choir_fs_read and choir_fs_write only (and the skill controls)", offered)
	}
	stillInteractive("after run 1")

	var result string
	// 2. choir.exec is outside the run's list: not offered, not callable.
	const exec = "exec touch /workspace/pwned"
	out, err = h.m.Perform(ctx, Performance{RunID: "r-000000000002", AgentID: "lc-agent-1", Worktree: wt, Objective: exec,
		Tools: []string{"choir.fs.read"}, Network: true, WallTime: 2 * time.Minute})
	if err != nil || out.Status != RunAnswered {
		t.Fatalf("Perform(exec) = %+v, %v; want answered", out, err)
	}
	offered, result = model.seen(exec)
	if slices.Contains(offered, "choir_exec") {
		t.Errorf("choir.exec was offered to the run: %v", offered)
	}
	if !strings.Contains(result, "unknown_tool") && !strings.Contains(result, "no tool called") {
		t.Errorf("the model's choir.exec call was answered %q; want unknown_tool", result)
	}
	if _, err := os.Stat(filepath.Join(wt, "pwned")); !os.IsNotExist(err) {
		t.Errorf("choir.exec ran in the run: pwned exists (%v)", err)
	}
	stillInteractive("after run 2")

	// 3. Past its wall time (the model never answers), a scratch workspace.
	out, err = h.m.Perform(ctx, Performance{RunID: "r-000000000003", AgentID: "lc-agent-1", Objective: "hang",
		Tools: []string{"choir.fs.read"}, Network: true, WallTime: 3 * time.Second})
	if err != nil || out.Status != RunTimeout || out.Answer != "" {
		t.Fatalf("Perform(hang) = %+v, %v; want timeout without an answer", out, err)
	}
	if cs := runContainers("r-000000000003"); len(cs) != 0 {
		t.Errorf("the timed-out run's container is still there: %+v", cs)
	}
	if s := h.store.status(out.SessionID); s != StatusStopped {
		t.Errorf("the timed-out run session is %q; want stopped", s)
	}
	if left, _ := filepath.Glob(filepath.Join(h.home.Dir, "runs", "r-000000000003-*")); len(left) != 0 {
		t.Errorf("the scratch workspace is left: %v", left)
	}
	stillInteractive("after run 3")

	// 4. Without network or credentials: the container has no network,
	// the model calls come through choird, and the run still writes and
	// answers.
	const write4 = "write four.txt written offline"
	out, err = h.m.Perform(ctx, Performance{RunID: "r-000000000004", AgentID: "lc-agent-1", Worktree: wt, Objective: write4,
		Tools: []string{"choir.fs.write"}, WallTime: 2 * time.Minute})
	if err != nil || out.Status != RunAnswered || out.Answer != "done" {
		t.Fatalf("Perform(offline) = %+v, %v; want answered \"done\"", out, err)
	}
	if b, err := os.ReadFile(filepath.Join(wt, "four.txt")); err != nil || string(b) != "written offline" {
		t.Errorf("four.txt = %q, %v", b, err)
	}
	if calls, modes := proxy.seen(); calls == 0 || !slices.Equal(modes, []string{"none"}) {
		t.Errorf("the offline run's model calls through choird: %d, its container's network %v; want some, [none]", calls, modes)
	}
	stillInteractive("after run 4")
}

// runProxy carries model calls (rpc.ModelProxy) to runModel, noting the
// network mode of the run containers that make them.
type runProxy struct {
	model *runModel
	dc    *docker.Client
	mu    sync.Mutex
	calls int
	modes []string
}

func (p *runProxy) ProxyModel(ctx context.Context, call rpc.ModelCall) (*rpc.ModelAnswer, error) {
	cs, err := p.dc.ContainerList(ctx, docker.ContainerListOptions{Filters: docker.Filters{"label": {LabelSession + "=" + call.SessionID}}})
	if err != nil || len(cs) != 1 {
		return nil, fmt.Errorf("no container of session %s (%v)", call.SessionID, err)
	}
	c, err := p.dc.ContainerInspect(ctx, cs[0].ID)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.calls++
	if !slices.Contains(p.modes, c.HostConfig.NetworkMode) {
		p.modes = append(p.modes, c.HostConfig.NetworkMode)
	}
	p.mu.Unlock()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/"+call.Op, bytes.NewReader(call.Body))
	rec := httptest.NewRecorder()
	p.model.ServeHTTP(rec, req)
	return &rpc.ModelAnswer{Status: rec.Code, Header: http.Header{"Content-Type": {rec.Header().Get("Content-Type")}}, Body: rec.Body.Bytes()}, nil
}

func (p *runProxy) seen() (int, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls, slices.Clone(p.modes)
}
