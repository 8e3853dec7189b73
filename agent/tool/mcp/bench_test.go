package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"choir/agent/arbiter"
	"choir/agent/lock"
	"choir/agent/tool"
	"choir/testkit/mcptest"
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
			benchCalls(b, set, reg, "mcp.everything.echo")
		})
	}
}

// BenchmarkCallHTTPFake is BenchmarkCall over Streamable HTTP against a
// loopback fake (testkit/mcptest, JSON answers) that answers at once, so
// that the arbiter's share is not lost in a real server's time:
//
//	go test -run '^$' -bench CallHTTPFake -benchtime 2000x -count 10 ./agent/tool/mcp
func BenchmarkCallHTTPFake(b *testing.B) {
	srv := httptest.NewServer(&mcptest.Server{Name: "fake", Tools: []json.RawMessage{
		json.RawMessage(`{"name":"echo","description":"Echoes.","inputSchema":{"type":"object","properties":{"message":{"type":"string"}}}}`)}})
	b.Cleanup(srv.Close)
	dir := b.TempDir()
	writeDecl(b, dir, "fake", map[string]any{"transport": "http", "url": srv.URL + "/mcp"})
	set, err := Start(Config{Dir: dir, PinsFile: filepath.Join(dir, "none"), Workspace: b.TempDir(), Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(set.Close)
	reg, err := tool.Load(set.Tools(), "", "")
	if err != nil || !reg.Has("mcp.fake.echo") {
		b.Fatalf("tools %v, %v", reg, err)
	}
	benchCalls(b, set, reg, "mcp.fake.echo")
}

// benchCalls runs raw (one tools/call of echo on the client), arbiter
// (the same call proposed to an arbiter) and paired (one of each per
// iteration, reporting the medians of both and of their difference, so
// that a load that changes during the run weighs on both alike) against
// set's only server.
func benchCalls(b *testing.B, set *Set, reg *tool.Registry, name string) {
	args := json.RawMessage(`{"message":"bench"}`)
	srv := set.servers[0]
	srv.mu.Lock()
	c := srv.c
	srv.mu.Unlock()
	raw := func(b *testing.B) {
		if _, err := c.CallTool(context.Background(), "echo", args); err != nil {
			b.Fatal(err)
		}
	}
	proposed := func(b *testing.B) func(i int) {
		unbounded := func() arbiter.LoopLimits { return arbiter.LoopLimits{Repeats: math.MaxInt, StaleSteps: math.MaxInt} }
		a := arbiter.New(arbiter.Config{Tools: reg, Workspace: b.TempDir(), Loops: unbounded})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); a.Run(ctx) }()
		b.Cleanup(func() { cancel(); <-done })
		return func(i int) {
			out, err := a.Submit(context.Background(), arbiter.Proposal{ID: fmt.Sprint(i), Lane: lock.Edge, Tool: name, Input: args})
			if err != nil || !strings.Contains(string(out.Output), "bench") {
				b.Fatalf("Submit = %s, %v", out.Output, err)
			}
		}
	}
	b.Run("raw", func(b *testing.B) {
		for range b.N {
			raw(b)
		}
	})
	b.Run("arbiter", func(b *testing.B) {
		submit := proposed(b)
		b.ResetTimer()
		for i := range b.N {
			submit(i)
		}
	})
	b.Run("paired", func(b *testing.B) {
		submit := proposed(b)
		var raws, arbs, diffs []float64
		b.ResetTimer()
		for i := range b.N {
			t0 := time.Now()
			raw(b)
			t1 := time.Now()
			submit(i)
			t2 := time.Now()
			r, a := float64(t1.Sub(t0))/1e3, float64(t2.Sub(t1))/1e3
			raws, arbs, diffs = append(raws, r), append(arbs, a), append(diffs, a-r)
		}
		b.ReportMetric(median(raws), "raw-p50-µs")
		b.ReportMetric(median(arbs), "arbiter-p50-µs")
		b.ReportMetric(median(diffs), "added-p50-µs")
	})
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
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
