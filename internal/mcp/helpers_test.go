package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"choir/internal/mcp"
	"choir/testkit/mcptest"
)

// pipeServer serves srv over in-process pipes and connects a client to it.
func pipeServer(t testing.TB, srv *mcptest.Server, opts mcp.Options) *mcp.Client {
	t.Helper()
	cr, sw := io.Pipe() // server → client
	sr, cw := io.Pipe() // client → server
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.ServeStdio(sr, sw)
		sw.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := mcp.Connect(ctx, mcp.NewStdioPipes(cr, cw), opts)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() {
		c.Close()
		<-done
	})
	return c
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

var echoTool = raw(`{"name":"echo","description":"Echo the message","inputSchema":{"type":"object","properties":{"message":{"type":"string"}}}}`)

// rawServer is a hostile stdio server: respond sees each message the
// client sends (decoded loosely) and writes whatever lines it likes.
// initialize is answered normally unless respond handles it.
type rawMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Line   string          `json:"-"`
}

type rawServer struct {
	mu   sync.Mutex
	got  []rawMsg
	cond *sync.Cond
}

func (s *rawServer) messages() []rawMsg {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]rawMsg(nil), s.got...)
}

// waitFor waits (with a deadline) until some received message matches.
func (s *rawServer) waitFor(t testing.TB, what string, match func(rawMsg) bool) rawMsg {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	s.mu.Lock()
	defer s.mu.Unlock()
	tm := time.AfterFunc(10*time.Second, func() { s.mu.Lock(); s.cond.Broadcast(); s.mu.Unlock() })
	defer tm.Stop()
	for {
		for _, m := range s.got {
			if match(m) {
				return m
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server never received %s", what)
		}
		s.cond.Wait()
	}
}

func startRaw(t testing.TB, opts mcp.Options, respond func(m rawMsg, send func(string)) bool) (*mcp.Client, *rawServer, error) {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	s := &rawServer{}
	s.cond = sync.NewCond(&s.mu)
	var wmu sync.Mutex
	send := func(line string) {
		wmu.Lock()
		defer wmu.Unlock()
		if line == "\x00close" {
			sw.Close()
			return
		}
		sw.Write([]byte(line + "\n"))
	}
	go func() {
		sc := bufio.NewScanner(sr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m rawMsg
			json.Unmarshal(sc.Bytes(), &m)
			m.Line = sc.Text()
			s.mu.Lock()
			s.got = append(s.got, m)
			s.cond.Broadcast()
			s.mu.Unlock()
			if respond(m, send) {
				continue
			}
			if m.Method == "initialize" {
				send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"0"}}}`)
			}
		}
		sw.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := mcp.Connect(ctx, mcp.NewStdioPipes(cr, cw), opts)
	if err == nil {
		t.Cleanup(func() { c.Close() })
	} else {
		cw.Close()
	}
	return c, s, err
}

// logRecorder is a slog handler that keeps messages.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.msgs = append(l.msgs, r.Message)
	l.mu.Unlock()
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }
func (l *logRecorder) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.msgs...)
}

var errClose = errors.New("close the server's output")

// closeOutput makes the raw server close its stdout: send an empty marker
// the goroutine recognises.
func closeOutput(send func(string)) { send("\x00close") }

func slogOf(h slog.Handler) *slog.Logger { return slog.New(h) }
