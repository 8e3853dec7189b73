package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"choir/agent/arbiter"
	"choir/agent/lock"
	"choir/agent/tool"
)

// The figures issue 24 asks for, against server-everything (Node 24):
//
//	go test -run '^$' -bench . -benchtime 300x ./agent/tool/mcp
//
// BenchmarkCall/<transport>/raw is one tools/call of echo on the client;
// .../arbiter the same call proposed to an arbiter (schema, lock, run,
// three chained events): the difference is what choir adds per call.
// BenchmarkStdioStart is a stdio server from Start to its tools offered,
// reporting the server's PSS.
func BenchmarkCall(b *testing.B) {
	node, script := everything(b)
	for _, transport := range []string{"stdio", "http"} {
		b.Run(transport, func(b *testing.B) {
			dir := b.TempDir()
			cfg := Config{Dir: dir, PinsFile: filepath.Join(dir, "none"), Workspace: b.TempDir(), Log: slog.New(slog.DiscardHandler)}
			if transport == "stdio" {
				writeDecl(b, dir, "everything", map[string]any{"transport": "stdio", "command": node, "args": []string{script, "stdio"}})
			} else {
				sock := filepath.Join(b.TempDir(), "e.sock")
				cmd := exec.Command(node, script, "streamableHttp")
				cmd.Env = append(os.Environ(), "PORT="+sock)
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
				waitFor(b, "the http server", time.Minute, func() bool { _, err := os.Stat(sock); return err == nil })
				cfg.HTTP = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
					return (&net.Dialer{}).DialContext(ctx, "unix", sock)
				}}}
				writeDecl(b, dir, "everything", map[string]any{"transport": "http", "url": "http://everything/mcp"})
			}
			set, err := Start(cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(set.Close)
			reg, err := tool.Load(set.Tools(), "", "")
			if err != nil || !reg.Has("mcp.everything.echo") {
				b.Fatalf("tools %v, %v", reg, err)
			}
			args := json.RawMessage(`{"message":"bench"}`)
			b.Run("raw", func(b *testing.B) {
				srv := set.servers[0]
				srv.mu.Lock()
				c := srv.c
				srv.mu.Unlock()
				for range b.N {
					if _, err := c.CallTool(context.Background(), "echo", args); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("arbiter", func(b *testing.B) {
				unbounded := func() arbiter.LoopLimits { return arbiter.LoopLimits{Repeats: math.MaxInt, StaleSteps: math.MaxInt} }
				a := arbiter.New(arbiter.Config{Tools: reg, Workspace: b.TempDir(), Loops: unbounded})
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { defer close(done); a.Run(ctx) }()
				defer func() { cancel(); <-done }()
				b.ResetTimer()
				for i := range b.N {
					out, err := a.Submit(context.Background(), arbiter.Proposal{ID: fmt.Sprint(i), Lane: lock.Edge, Tool: "mcp.everything.echo", Input: args})
					if err != nil || !strings.Contains(string(out.Output), "bench") {
						b.Fatalf("Submit = %s, %v", out.Output, err)
					}
				}
			})
		})
	}
}

func BenchmarkStdioStart(b *testing.B) {
	node, script := everything(b)
	dir := b.TempDir()
	writeDecl(b, dir, "everything", map[string]any{"transport": "stdio", "command": node, "args": []string{script, "stdio"}})
	var pss float64
	for range b.N {
		set, err := Start(Config{Dir: dir, PinsFile: filepath.Join(dir, "none"), Workspace: b.TempDir(), Log: slog.New(slog.DiscardHandler)})
		if err != nil || len(set.Tools()) == 0 {
			b.Fatalf("Start = %d tools, %v", len(set.Tools()), err)
		}
		b.StopTimer()
		set.servers[0].mu.Lock()
		pid := set.servers[0].c.(client).pid()
		set.servers[0].mu.Unlock()
		pss = pssMiB(pid)
		set.Close()
		b.StartTimer()
	}
	b.ReportMetric(pss, "server-PSS-MiB")
}

// pssMiB is a process's proportional set size (FACTS.md: count memory
// with PSS).
func pssMiB(pid int) float64 {
	data, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "Pss:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}
