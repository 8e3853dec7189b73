package rpc

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// shortLimits are DefaultLimits with timeouts short enough to watch.
func shortLimits() Limits {
	l := DefaultLimits()
	l.ReadHeaderTimeout = 200 * time.Millisecond
	l.BodyTimeout = 200 * time.Millisecond
	l.StreamWriteTimeout = 200 * time.Millisecond
	l.Keepalive = 50 * time.Millisecond
	return l
}

// TestSilentConnectionIsClosed: a connection that never sends its headers
// is closed after ReadHeaderTimeout and its place freed.
func TestSilentConnectionIsClosed(t *testing.T) {
	srv := NewServer(&fakeHandler{}, shortLimits(), quietLogger())
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	sock, _ := agentSocket(t, srv, t.TempDir(), "a1")
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST /rpc/HEARTBEAT HTTP/1.1\r\nHost: x\r\n") // headers never end
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadAll(c); err != nil && isTimeout(err) {
		t.Fatal("the server kept a connection whose headers never ended")
	}
	waitFor(t, "the silent connection's place to be freed", func() bool { return srv.total.count() == 0 })
}

// TestSlowBodyIs408: a body that does not arrive within BodyTimeout is a
// 408 and never reaches the handler.
func TestSlowBodyIs408(t *testing.T) {
	h := &fakeHandler{}
	srv := NewServer(h, shortLimits(), quietLogger())
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	sock, _ := agentSocket(t, srv, t.TempDir(), "a1")
	srv.Open("s1", "a1", "t1")
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST /rpc/HEARTBEAT HTTP/1.1\r\nHost: x\r\nX-Choir-Session-Id: s1\r\nX-Choir-Request-Id: r\r\nAuthorization: Bearer t1\r\nContent-Length: 100\r\n\r\n{\"new_rev\":")
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), "request body not received within 200ms") {
		t.Errorf("stalled body → %d %s; want 408", resp.StatusCode, body)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.calls) != 0 {
		t.Errorf("the handler served %d calls; want none", len(h.calls))
	}
}

// TestStalledReaderLosesItsStream: a client that stops reading its event
// stream has it ended by the server within StreamWriteTimeout of the
// socket filling up; its place is freed and the session opens a new one.
func TestStalledReaderLosesItsStream(t *testing.T) {
	srv := NewServer(&fakeHandler{}, shortLimits(), quietLogger())
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	sock, _ := agentSocket(t, srv, t.TempDir(), "a1")
	srv.Open("s1", "a1", "t1")
	c := dialUDS(t, sock, "s1", "t1")
	stalled, err := c.Events(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	sess := func() *session { srv.mu.Lock(); defer srv.mu.Unlock(); return srv.m["s1"] }()
	streams := func() int { srv.mu.Lock(); defer srv.mu.Unlock(); return sess.streams }
	big := strings.Repeat("x", 64<<10)
	waitFor(t, "the stalled stream to be ended", func() bool {
		srv.Publish("s1", EventInject, Injection{Text: big}) // fills the socket; never read
		return streams() == 0
	})
	fresh, err := c.Events(context.Background(), "")
	if err != nil {
		t.Fatalf("a new stream after the stalled one ended: %v", err)
	}
	fresh.Close()
}
