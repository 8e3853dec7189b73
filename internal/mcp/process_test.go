package mcp_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"choir/internal/mcp"
	"choir/testkit/mcptest"
)

// The test binary doubles as a stdio MCP server process when
// MCPTEST_SERVER names a behaviour.
const serverEnv = "MCPTEST_SERVER"

func TestMain(m *testing.M) {
	switch os.Getenv(serverEnv) {
	case "":
		os.Exit(m.Run())
	case "fake":
		fmt.Fprintln(os.Stderr, "fake server ready")
		srv := &mcptest.Server{Name: "process", Tools: []json.RawMessage{echoTool}}
		srv.ServeStdio(os.Stdin, os.Stdout)
		os.Exit(0)
	case "die-on-call":
		srv := &mcptest.Server{Name: "dying", Tools: []json.RawMessage{echoTool}, Handle: func(c *mcptest.Call) (any, *mcptest.Error) {
			fmt.Fprintln(os.Stderr, "fatal: database connection refused")
			os.Exit(3)
			return nil, nil
		}}
		srv.ServeStdio(os.Stdin, os.Stdout)
		os.Exit(0)
	case "stubborn":
		// Ignores the end of its stdin and SIGTERM: only SIGKILL stops it.
		signal.Ignore(syscall.SIGTERM)
		srv := &mcptest.Server{Name: "stubborn"}
		srv.ServeStdio(os.Stdin, os.Stdout)
		select {}
	}
	os.Exit(2)
}

func serverCmd(t testing.TB, behaviour string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), serverEnv+"="+behaviour)
	return cmd
}

type lines struct {
	mu sync.Mutex
	l  []string
}

func (l *lines) add(s string) { l.mu.Lock(); l.l = append(l.l, s); l.mu.Unlock() }
func (l *lines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.l...)
}

func processGone(pid int) bool {
	return syscall.Kill(pid, 0) != nil
}

func TestStdioProcess(t *testing.T) {
	ctx := testCtx(t)
	stderr := &lines{}
	tr := mcp.NewStdio(serverCmd(t, "fake"), stderr.add)
	c, err := mcp.Connect(ctx, tr, mcp.Options{})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	if !strings.HasPrefix(c.String(), "stdio server mcp.test (pid ") {
		t.Errorf("String() = %q; want the command and its pid", c.String())
	}
	res, err := c.CallTool(ctx, "echo", raw(`{"message":"over a real pipe"}`), nil)
	if err != nil || !strings.Contains(res.Text(), "over a real pipe") {
		t.Fatalf("CallTool = %+v, %v", res, err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if !processGone(tr.Pid()) {
		t.Errorf("server process %d still runs after Close", tr.Pid())
	}
	if got := stderr.all(); len(got) == 0 || got[0] != "fake server ready" {
		t.Errorf("stderr lines = %q; want the server's line", got)
	}
}

func TestStdioServerDiesMidCall(t *testing.T) {
	ctx := testCtx(t)
	c, err := mcp.Connect(ctx, mcp.NewStdio(serverCmd(t, "die-on-call"), nil), mcp.Options{})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer c.Close()
	_, err = c.CallTool(ctx, "echo", nil, nil)
	if err == nil {
		t.Fatal("CallTool on a server that dies = nil error")
	}
	for _, want := range []string{"tools/call", "exited: exit status 3", "fatal: database connection refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("CallTool error = %v; want it to contain %q", err, want)
		}
	}
	if !errors.Is(err, mcp.ErrClosed) {
		t.Errorf("CallTool error = %v; want errors.Is ErrClosed", err)
	}
	<-c.Done()
	if _, err := c.ListTools(ctx); !errors.Is(err, mcp.ErrClosed) {
		t.Errorf("ListTools on a dead server = %v; want ErrClosed at once", err)
	}
}

func TestStdioCloseKillsStubbornServer(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out both grace periods (4 s)")
	}
	ctx := testCtx(t)
	tr := mcp.NewStdio(serverCmd(t, "stubborn"), nil)
	c, err := mcp.Connect(ctx, tr, mcp.Options{})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	err = c.Close()
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Close = %v; want it to say the server was killed", err)
	}
	if !processGone(tr.Pid()) {
		t.Errorf("stubborn server %d survived Close", tr.Pid())
	}
}

func TestStdioRefusesConnectedCommand(t *testing.T) {
	cmd := serverCmd(t, "fake")
	cmd.Stdout = io.Discard
	_, err := mcp.Connect(testCtx(t), mcp.NewStdio(cmd, nil), mcp.Options{})
	if err == nil || !strings.Contains(err.Error(), "Stdout and Stderr must be nil") {
		t.Fatalf("Connect with cmd.Stdout set = %v; want a refusal saying why", err)
	}
}

var _ = time.Second
