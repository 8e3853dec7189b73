package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"choir/agent/tool"
)

// everythingHTTP starts server-everything over Streamable HTTP on the unix
// socket sock and returns a function that kills it.
func everythingHTTP(t *testing.T, node, script, sock string) (kill func()) {
	t.Helper()
	os.Remove(sock) // a killed server leaves its socket file behind
	cmd := exec.Command(node, script, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+sock) // a path: Node listens on a unix socket
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kill = func() { cmd.Process.Kill(); cmd.Wait() }
	t.Cleanup(kill)
	waitFor(t, "server-everything listening", time.Minute, func() bool { _, err := os.Stat(sock); return err == nil })
	return kill
}

// TestEverythingOverHTTP: the reference server over Streamable HTTP, the
// cases TestEverythingOverStdio covers over stdio that differ on the
// wire: a long call cancelled (a job's cancel) ends at once and the server
// answers the next call; a server killed mid-call fails that call with
// server_unavailable, as does a call while it is down, and once it
// listens again it is connected to again (a new session: the restarted
// server answers the old one with 400) and answers.
func TestEverythingOverHTTP(t *testing.T) {
	node, script := everything(t)
	sock := filepath.Join(t.TempDir(), "e.sock")
	kill := everythingHTTP(t, node, script, sock)
	dir := t.TempDir()
	writeDecl(t, dir, "everything", map[string]any{"transport": "http", "url": "http://everything/mcp", "timeout_ms": 60000})
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	set, err := Start(Config{Dir: dir, PinsFile: filepath.Join(dir, "none.json"), Workspace: t.TempDir(),
		Log: slog.New(slog.NewTextHandler(testWriter{t}, nil)), HTTP: hc})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	reg, err := tool.Load(set.Tools(), "", "")
	if err != nil || !reg.Has("mcp.everything.trigger_long_running_operation") {
		t.Fatalf("tools = %v, %v; want the long operation", reg.Names(), err)
	}
	if r := run(t, reg, "mcp.everything.echo", `{"message":"over http"}`); r.Status != tool.StatusSuccess || !strings.Contains(r.Summary, "over http") {
		t.Fatalf("echo = %+v", r)
	}
	long := func(ctx context.Context) <-chan tool.Result {
		call, err := reg.Prepare("mcp.everything.trigger_long_running_operation", json.RawMessage(`{"duration":600,"steps":600}`))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan tool.Result, 1)
		go func() { done <- call.Run(ctx, tool.Invocation{Workspace: t.TempDir()}) }()
		waitFor(t, "the long call's progress", time.Minute, func() bool {
			return strings.Contains(set.Progress(), "everything.trigger-long-running-operation")
		})
		return done
	}

	// Cancelled, as by a job's cancel.
	ctx, cancel := context.WithCancel(context.Background())
	done := long(ctx)
	cancel()
	if r := <-done; r.Status != tool.StatusError || r.Error.Code != tool.CodeCancelled {
		t.Errorf("cancelled long call = %+v; want cancelled", r)
	}
	waitFor(t, "the cancelled call's progress gone", time.Minute, func() bool { return set.Progress() == "" })
	if r := run(t, reg, "mcp.everything.echo", `{"message":"after the cancel"}`); !strings.Contains(r.Summary, "after the cancel") {
		t.Errorf("echo after the cancel = %+v", r)
	}

	// Killed mid-call: the call fails cleanly, the server comes back once it
	// listens again.
	srv := set.servers[0]
	restarts := srv.Status().Restarts
	done = long(context.Background())
	kill()
	if r := <-done; r.Status != tool.StatusError || r.Error.Code != CodeServerUnavailable {
		t.Errorf("call when the server was killed = %+v; want server_unavailable", r)
	}
	if r := run(t, reg, "mcp.everything.echo", `{"message":"while down"}`); r.Status != tool.StatusError || r.Error.Code != CodeServerUnavailable {
		t.Errorf("echo while the server is down = %+v; want server_unavailable", r)
	}
	everythingHTTP(t, node, script, sock)
	var r tool.Result
	waitFor(t, "the server answering again", time.Minute, func() bool {
		r = run(t, reg, "mcp.everything.echo", `{"message":"again"}`)
		return r.Status == tool.StatusSuccess
	})
	if !strings.Contains(r.Summary, "again") || srv.Status().Restarts <= restarts {
		t.Errorf("echo after the restart = %+v, %+v; want the echo on a new connection", r, srv.Status())
	}
}
