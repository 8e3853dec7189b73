package rpc

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// bigFetch answers FETCH_EVENTS with a page larger than the server's
// response buffer (sent chunked, with no Content-Length).
type bigFetch struct{ fakeHandler }

func (h *bigFetch) HandleFetchEvents(ctx context.Context, r FetchEventsReq) (FetchEventsResp, error) {
	payload := json.RawMessage(`"` + strings.Repeat("x", 64<<10) + `"`)
	return FetchEventsResp{Events: []Event{{Rev: r.AfterRev + 1, Type: "UserMsg", Hash: "h", Payload: payload}}}, nil
}

// TestClientKeepsItsConnection: an agent's heartbeats, one after the
// other, travel on one heartbeat stream, and the calls between them,
// answered or refused, on one more connection that both sides keep open
// (an idle agent costs choird no connection set-up per heartbeat); a
// second or third when the client's pool races its next call (below).
func TestClientKeepsItsConnection(t *testing.T) {
	srv := NewServer(&bigFetch{}, DefaultLimits(), quietLogger())
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	sock := filepath.Join(t.TempDir(), "choird.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln := &countingListener{Listener: ul}
	go srv.Serve(ln)
	srv.Open("s1", testAgent, "t1")
	c := dialUDS(t, sock, "s1", "t1")
	ctx := context.Background()
	for i := range 20 {
		if _, err := c.Heartbeat(ctx, HeartbeatReq{BaseRev: int64(i), NewRev: int64(i)}); err != nil {
			t.Fatalf("heartbeat %d: %v", i, err)
		}
		if i%5 == 0 { // a refusal (404) on the same connection
			if _, err := c.Call(ctx, "NO_SUCH_VERB", []byte(`{}`)); err == nil {
				t.Fatal("an unknown verb was answered")
			}
		}
		if i%6 == 0 { // a large answer
			if _, err := c.FetchEvents(ctx, FetchEventsReq{AfterRev: int64(i)}); err != nil {
				t.Fatalf("fetch %d: %v", i, err)
			}
		}
		if i%7 == 0 {
			if _, err := c.ReportStatus(ctx, StatusReq{Lane: LaneEdge, State: "idle"}); err != nil {
				t.Fatalf("status %d: %v", i, err)
			}
		}
	}
	// The heartbeats travel on their stream's connection. net/http's
	// Transport puts a connection back in its pool from the connection's
	// read loop, after the caller already has its answer: the next call
	// may find the pool empty and dial. So "kept alive" is a handful of
	// connections for the 11 calls, never one per call.
	if n := ln.n.Load(); n > 1+3 {
		t.Errorf("20 heartbeats and the 11 calls between them opened %d connections; want at most 4 (the heartbeat stream's and 3), kept alive", n)
	}
}
