package rpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// agentSocket opens agentID's listener under dir and returns its path.
func agentSocket(t testing.TB, srv *Server, dir, agentID string) (string, io.Closer) {
	t.Helper()
	path := filepath.Join(dir, "socks", "agent", agentID, "choird.sock")
	c, err := srv.ListenAgent(path, agentID)
	if err != nil {
		t.Fatalf("ListenAgent(%s) = %v", agentID, err)
	}
	t.Cleanup(func() { c.Close() })
	return path, c
}

func dialUDS(t testing.TB, sock, session, token string) *Client {
	t.Helper()
	c, err := Dial(Options{Transport: TransportUDS, Socket: sock, SessionID: session, LeaseToken: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestListenAgentAdmitsOnlyItsAgent(t *testing.T) {
	srv := NewServer(&fakeHandler{}, DefaultLimits(), quietLogger())
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	dir := t.TempDir()
	sock1, _ := agentSocket(t, srv, dir, "a1")
	sock2, _ := agentSocket(t, srv, dir, "a2")
	srv.Open("s1", "a1", "t1")
	srv.Open("s2", "a2", "t2")
	ctx := context.Background()

	cases := []struct {
		name, sock, session, token string
		want                       string
	}{
		{"own session on own socket", sock1, "s1", "t1", `{"ack_rev":2,"config_version_latest":1}`},
		{"other agent's valid session", sock1, "s2", "t2", `error 401 unauthorized "" retry=0s`},
		{"wrong token", sock1, "s1", "t2", `error 401 unauthorized "" retry=0s`},
		{"second agent on its socket", sock2, "s2", "t2", `{"ack_rev":2,"config_version_latest":1}`},
		{"first agent on the second's socket", sock2, "s1", "t1", `error 401 unauthorized "" retry=0s`},
	}
	for _, tc := range cases {
		r, err := dialUDS(t, tc.sock, tc.session, tc.token).Heartbeat(ctx, HeartbeatReq{NewRev: 2})
		if got := outcome(r, err); got != tc.want {
			t.Errorf("%s: Heartbeat = %s; want %s", tc.name, got, tc.want)
		}
	}
	// The other agent's token did not reach the stream either.
	if _, err := dialUDS(t, sock1, "s2", "t2").Events(ctx, ""); err == nil || !strings.Contains(err.Error(), "unauthorized") {
		t.Errorf("Events of a2's session on a1's socket = %v; want unauthorized", err)
	}

	// A shared listener (TCP) admits every open session.
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(tl)
	for _, s := range [][2]string{{"s1", "t1"}, {"s2", "t2"}} {
		c, err := Dial(Options{Transport: TransportHTTP, Endpoint: "http://" + tl.Addr().String(), SessionID: s[0], LeaseToken: s[1]})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Heartbeat(ctx, HeartbeatReq{NewRev: 1}); err != nil {
			t.Errorf("session %s on the shared TCP listener: %v; want admitted", s[0], err)
		}
		c.Close()
	}
}

func TestListenAgentModes(t *testing.T) {
	srv := NewServer(&fakeHandler{}, DefaultLimits(), quietLogger())
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	dir := t.TempDir()
	sock, _ := agentSocket(t, srv, dir, "a1")
	for path, want := range map[string]os.FileMode{
		sock:                                 AgentSocketMode,
		filepath.Dir(sock):                   AgentSocketDirMode,
		filepath.Join(dir, "socks"):          0o700,
		filepath.Join(dir, "socks", "agent"): 0o700,
	} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("mode of %s = %o; want %o", path, got, want)
		}
	}
	// A live socket is refused; a stale one is replaced.
	if _, err := srv.ListenAgent(sock, "a1"); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("second ListenAgent on a live socket = %v; want in use", err)
	}
	if _, err := srv.ListenAgent(filepath.Join(dir, "x.sock"), ""); err == nil {
		t.Error("ListenAgent with an empty agent id succeeded")
	}
	stale := filepath.Join(dir, "socks", "agent", "a3", "choird.sock")
	os.MkdirAll(filepath.Dir(stale), 0o700)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	c, err := srv.ListenAgent(stale, "a3")
	if err != nil {
		t.Fatalf("ListenAgent over a stale socket = %v", err)
	}
	c.Close()
}

func TestListenAgentCloseEndsEverything(t *testing.T) {
	srv := NewServer(&fakeHandler{}, DefaultLimits(), quietLogger())
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	dir := t.TempDir()
	sock1, l1 := agentSocket(t, srv, dir, "a1")
	sock2, _ := agentSocket(t, srv, dir, "a2")
	srv.Open("s1", "a1", "t1")
	srv.Open("s2", "a2", "t2")
	ctx := context.Background()
	stream, err := dialUDS(t, sock1, "s1", "t1").Events(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	beats := dialUDS(t, sock1, "s1", "t1")
	if _, err := beats.Heartbeat(ctx, HeartbeatReq{}); err != nil { // opens its heartbeat stream
		t.Fatal(err)
	}
	srv.mu.Lock()
	sess1 := srv.m["s1"]
	srv.mu.Unlock()
	idle, err := net.Dial("unix", sock1) // a connection that never sends
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	other, err := dialUDS(t, sock2, "s2", "t2").Events(ctx, "")
	if err != nil {
		t.Fatal(err)
	}

	if err := l1.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if _, err := stream.Next(); err == nil {
		t.Error("the event stream is still open after Close")
	}
	waitFor(t, "the heartbeat stream to end", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return sess1.beats == 0
	})
	idle.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := idle.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Errorf("read on an idle connection after Close = %v; want EOF", err)
	}
	if _, err := os.Lstat(sock1); !os.IsNotExist(err) {
		t.Errorf("socket file after Close: %v; want removed", err)
	}
	if _, err := net.Dial("unix", sock1); err == nil {
		t.Error("a new connection succeeded after Close")
	}
	// The session and the other agent are untouched.
	srv.Publish("s2", EventInject, map[string]string{"text": "still here"})
	if ev, err := other.Next(); err != nil || ev.Type != EventInject {
		t.Errorf("a2's stream after a1's listener closed: %+v, %v; want the inject", ev, err)
	}
	if _, err := srv.ListenAgent(sock1, "a1"); err != nil {
		t.Errorf("ListenAgent again after Close = %v", err)
	} else if _, err := dialUDS(t, sock1, "s1", "t1").Heartbeat(ctx, HeartbeatReq{}); err != nil {
		t.Errorf("the session on a reopened socket: %v", err)
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) || errors.Is(err, http.ErrServerClosed)
}

// TestFollowStartsOverWhenTheLogRestarted: when the session's event log
// restarts (reopened, as after a choird restart) the agent's Last-Event-ID
// is beyond its head: the server answers 400 and Follow delivers a gap,
// then the new log's events.
func TestFollowStartsOverWhenTheLogRestarted(t *testing.T) {
	srv := NewServer(&fakeHandler{}, DefaultLimits(), quietLogger())
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	sock, _ := agentSocket(t, srv, t.TempDir(), "a1")
	srv.Open("s1", "a1", "t1")
	for i := range 3 {
		srv.Publish("s1", EventInject, Injection{ID: fmt.Sprint(i)})
	}
	got := make(chan PushEvent, 16)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go Follow(ctx, dialUDS(t, sock, "s1", "t1"), func(ev PushEvent) { got <- ev })
	next := func() PushEvent {
		select {
		case ev := <-got:
			return ev
		case <-time.After(20 * time.Second):
			t.Fatal("no event within 20s")
			return PushEvent{}
		}
	}
	for range 3 {
		next()
	}
	srv.Open("s1", "a1", "t1") // a fresh log: its head is 0
	if ev := next(); ev.Type != EventGap {
		t.Errorf("first event after the log restarted = %+v; want gap", ev)
	}
	srv.Publish("s1", EventCancel, CancelCore{JobName: "x"})
	if ev := next(); ev.Type != EventCancel || ev.ID != "1" {
		t.Errorf("event after the gap = %+v; want cancel with id 1", ev)
	}
}
