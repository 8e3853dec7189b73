package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// hostile is one request an attacker with the socket (and maybe a token)
// sends, and the refusal it must get.
type hostile struct {
	name   string
	method string
	path   string
	header map[string][]string // replaces the good envelope's headers
	body   []byte
	// status and text are the refusal (text is in the body); wantBy
	// overrides status per transport.
	status int
	text   string
	wantBy map[string]int
}

// goodHeaders is a valid envelope of session s1.
func goodHeaders() map[string][]string {
	return map[string][]string{
		HeaderSessionID: {"s1"}, HeaderRequestID: {"req-1"},
		"Authorization": {"Bearer t1"}, "Content-Type": {"application/json"},
	}
}

func with(h map[string][]string, k string, v ...string) map[string][]string {
	if v == nil {
		delete(h, k)
	} else {
		h[k] = v
	}
	return h
}

// TestHostileRPC sends each hostile request on both transports (an agent's
// own socket and the shared HTTPS listener) and checks the refusal and that
// nothing changed: the handler was never called, the session's push log
// and stream and connection counts are as before, and the session still
// completes a heartbeat and receives a push event.
func TestHostileRPC(t *testing.T) {
	limits := DefaultLimits()
	limits.MaxPayload = 256 << 10
	limits.Rate, limits.Burst = 1e6, 1e6
	h := &fakeHandler{}
	srv := NewServer(h, limits, quietLogger())
	srv.Open("s1", testAgent, "t1")
	srv.Open("s-other", "a2", "t-other")
	srv.Publish("s1", EventInject, Injection{ID: "i1", Text: "before"})
	big := bytes.Repeat([]byte("x"), int(limits.MaxPayload)+1)
	hb := func(v any) []byte { return mustJSON(v) }
	rpcPath := "/rpc/" + string(VerbHeartbeat)

	cases := []hostile{
		// Authentication (§12.4): only "Bearer <token>".
		{name: "no Authorization", path: rpcPath, header: with(goodHeaders(), "Authorization"), status: 401},
		{name: "bare token", path: rpcPath, header: with(goodHeaders(), "Authorization", "t1"), status: 401},
		{name: "lower-case scheme", path: rpcPath, header: with(goodHeaders(), "Authorization", "bearer t1"), status: 401},
		{name: "upper-case scheme", path: rpcPath, header: with(goodHeaders(), "Authorization", "BEARER t1"), status: 401},
		{name: "Basic scheme", path: rpcPath, header: with(goodHeaders(), "Authorization", "Basic t1"), status: 401},
		{name: "scheme without token", path: rpcPath, header: with(goodHeaders(), "Authorization", "Bearer"), status: 401},
		{name: "empty token", path: rpcPath, header: with(goodHeaders(), "Authorization", "Bearer "), status: 401},
		{name: "two spaces", path: rpcPath, header: with(goodHeaders(), "Authorization", "Bearer  t1"), status: 401},
		{name: "two Authorization headers", path: rpcPath, header: with(goodHeaders(), "Authorization", "Bearer t1", "Bearer t1"), status: 401},
		{name: "token of another session", path: rpcPath, header: with(goodHeaders(), "Authorization", "Bearer t-other"), status: 401},
		{name: "unknown session", path: rpcPath, header: with(goodHeaders(), HeaderSessionID, "s-nope"), status: 401},
		{name: "no session id", path: rpcPath, header: with(goodHeaders(), HeaderSessionID), status: 401},
		{name: "another agent's valid session", path: rpcPath, body: hb(HeartbeatReq{}),
			header: with(with(goodHeaders(), HeaderSessionID, "s-other"), "Authorization", "Bearer t-other"),
			wantBy: map[string]int{"uds": 401, "https": 200}},
		// Routing and envelope.
		{name: "GET on a verb", method: http.MethodGet, path: rpcPath, status: 405, text: "use POST"},
		{name: "POST on /events", path: "/events", status: 405},
		{name: "unknown verb", path: "/rpc/SELF_DESTRUCT", body: []byte(`{}`), status: 404, text: "unknown verb"},
		{name: "lower-case verb", path: "/rpc/heartbeat", body: []byte(`{}`), status: 404, text: "unknown verb"},
		{name: "unknown endpoint", path: "/admin/v1/agents", status: 404},
		{name: "missing request id", path: rpcPath, header: with(goodHeaders(), HeaderRequestID), body: []byte(`{}`), status: 400, text: HeaderRequestID},
		{name: "headers over the cap", path: rpcPath, header: with(goodHeaders(), "X-Pad", strings.Repeat("p", 2*limits.MaxHeaderBytes)), body: []byte(`{}`), status: 431},
		// The heartbeat stream (heartbeats.go; its frames: TestHostileHeartbeatFrames).
		{name: "GET on the heartbeat stream", method: http.MethodGet, path: HeartbeatsPath, status: 405, text: "use POST"},
		{name: "heartbeat stream without a token", path: HeartbeatsPath, header: with(goodHeaders(), "Authorization"), body: []byte(frame(`{}`)), status: 401},
		{name: "heartbeat stream of another agent's session", path: HeartbeatsPath, body: []byte(frame(`{}`)),
			header: with(with(goodHeaders(), HeaderSessionID, "s-other"), "Authorization", "Bearer t-other"),
			wantBy: map[string]int{"uds": 401, "https": 200}},
		{name: "heartbeat stream without a request id", path: HeartbeatsPath, header: with(goodHeaders(), HeaderRequestID), body: []byte(frame(`{}`)), status: 400, text: HeaderRequestID},
		// Bodies.
		{name: "oversized body", path: rpcPath, body: big, status: 413, text: "payload larger than"},
		{name: "empty body", path: rpcPath, body: nil, status: 400, text: "empty body"},
		{name: "malformed JSON", path: rpcPath, body: []byte(`{"base_rev":`), status: 400, text: "malformed JSON"},
		{name: "unknown field", path: rpcPath, body: []byte(`{"launch_missiles":true}`), status: 400, text: "unknown field"},
		{name: "trailing data", path: rpcPath, body: []byte(`{} {}`), status: 400, text: "data after"},
		{name: "wrong type", path: rpcPath, body: []byte(`{"new_rev":"ten"}`), status: 400, text: "new_rev"},
		{name: "JSON array", path: rpcPath, body: []byte(`[1,2]`), status: 400},
		{name: "too many patches", path: rpcPath, body: hb(HeartbeatReq{Patches: patches(MaxPatches + 1)}), status: 400, text: "the limit is 1024 events"},
		// Verb payload bounds.
		{name: "oversized status", path: "/rpc/REPORT_STATUS", body: hb(statusOfSize(MaxStatusBytes + 1)), status: 400, text: "the limit is 4096 bytes"},
		{name: "unknown lane", path: "/rpc/REPORT_STATUS", body: hb(StatusReq{Lane: "core:../../etc"}), status: 400, text: `core:../../etc\" is not a lane`},
		{name: "lane in the wrong case", path: "/rpc/REPORT_STATUS", body: hb(StatusReq{Lane: "Edge"}), status: 400, text: "is not a lane"},
		{name: "empty lane", path: "/rpc/REPORT_STATUS", body: hb(StatusReq{State: "x"}), status: 400, text: "is not a lane"},
		{name: "too many budgets", path: "/rpc/REPORT_STATUS", body: hb(StatusReq{Lane: "edge", BudgetRemaining: budgets(17)}), status: 400, text: "budget_remaining"},
		{name: "too many secret names", path: "/rpc/GET_SECRETS", body: hb(SecretReq{Resources: names(65, 2)}), status: 400, text: "the limit is 64 names"},
		{name: "long terminate reason", path: "/rpc/TERMINATE_SELF", body: hb(TerminateReq{Reason: strings.Repeat("r", 2000)}), status: 400, text: "reason is 2000 bytes"},
		{name: "oversized approval payload", path: "/rpc/REQUEST_APPROVAL", body: hb(ApprovalReq{RequestType: "t", Payload: json.RawMessage(`"` + strings.Repeat("p", MaxApprovalPayload) + `"`)}), status: 400, text: "payload is"},
		{name: "long tool name", path: "/rpc/EXECUTE_HOST_TOOL", body: hb(HostToolReq{ToolName: strings.Repeat("t", 200)}), status: 400, text: "tool_name is 200 bytes"},
		// The push channel.
		{name: "Last-Event-ID not a number", method: http.MethodGet, path: "/events", header: with(goodHeaders(), "Last-Event-ID", "abc"), status: 400, text: "not an event id"},
		{name: "Last-Event-ID negative", method: http.MethodGet, path: "/events", header: with(goodHeaders(), "Last-Event-ID", "-1"), status: 400, text: "not an event id"},
		{name: "Last-Event-ID beyond the head", method: http.MethodGet, path: "/events", header: with(goodHeaders(), "Last-Event-ID", "99"), status: 400, text: "beyond this session's newest event 1"},
		{name: "Last-Event-ID overflowing", method: http.MethodGet, path: "/events", header: with(goodHeaders(), "Last-Event-ID", "18446744073709551616"), status: 400, text: "not an event id"},
	}
	for _, tr := range serve(t, srv) {
		t.Run(tr.name, func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					waitFor(t, "the last case's stream to end", func() bool { return snapshot(srv, h).streams == 0 })
					before := snapshot(srv, h)
					want := tc.status
					if w, ok := tc.wantBy[tr.name]; ok {
						want = w
					}
					st, body := send(t, tr, tc)
					if st != want || !strings.Contains(body, tc.text) {
						t.Fatalf("%s → %d %s; want %d containing %q", tc.name, st, clipTo(body, 300), want, tc.text)
					}
					if want != http.StatusOK {
						waitFor(t, "the state to settle", func() bool { return snapshot(srv, h).same(before) })
					}
					stillWorks(t, tr, srv)
				})
			}
		})
	}
}

// TestHostileStreams: a session may hold MaxStreamsPerSession event
// streams; one more is a 429 that changes nothing, and closing one frees
// its place.
func TestHostileStreams(t *testing.T) {
	limits := DefaultLimits()
	h := &fakeHandler{}
	srv := NewServer(h, limits, quietLogger())
	srv.Open("s1", testAgent, "t1")
	for _, tr := range serve(t, srv) {
		t.Run(tr.name, func(t *testing.T) {
			ctx := context.Background()
			c := tr.dial(t, "s1", "t1")
			var open []*EventStream
			for range limits.MaxStreamsPerSession {
				s, err := c.Events(ctx, "")
				if err != nil {
					t.Fatalf("stream %d: %v", len(open)+1, err)
				}
				open = append(open, s)
			}
			before := snapshot(srv, h)
			_, err := c.Events(ctx, "")
			want := fmt.Sprintf("error 429 rate_limited \"this session already has %d open event streams", limits.MaxStreamsPerSession)
			if got := outcome(nil, err); !strings.HasPrefix(got, want) {
				t.Errorf("one stream more = %s; want %s…", got, want)
			}
			if after := snapshot(srv, h); !after.same(before) {
				t.Errorf("state after the refused stream = %+v; want %+v", after, before)
			}
			open[0].Close()
			waitFor(t, "the closed stream's place to be freed", func() bool { return snapshot(srv, h).streams == limits.MaxStreamsPerSession-1 })
			s, err := c.Events(ctx, "")
			if err != nil {
				t.Fatalf("a stream after one closed: %v", err)
			}
			open = append(open[1:], s)
			for _, s := range open {
				s.Close()
			}
			waitFor(t, "every stream's place to be freed", func() bool { return snapshot(srv, h).streams == 0 })
		})
	}
}

// TestHostileConnectionsPerSession: on a shared listener a session holds at
// most MaxConnsPerAgent connections; the next one's request is a 429 and
// that connection is closed, while the session's others keep working.
func TestHostileConnectionsPerSession(t *testing.T) {
	limits := DefaultLimits()
	limits.MaxConnsPerAgent = 4
	limits.Rate, limits.Burst = 1e6, 1e6
	h := &fakeHandler{}
	srv := NewServer(h, limits, quietLogger())
	srv.Open("s1", testAgent, "t1")
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	request := "POST /rpc/HEARTBEAT HTTP/1.1\r\nHost: x\r\nX-Choir-Session-Id: s1\r\nX-Choir-Request-Id: r\r\nAuthorization: Bearer t1\r\nContent-Length: 2\r\n\r\n{}"
	readers := map[net.Conn]*bufio.Reader{}
	status := func(c net.Conn) string {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, request); err != nil {
			return err.Error()
		}
		if readers[c] == nil {
			readers[c] = bufio.NewReader(c)
		}
		resp, err := http.ReadResponse(readers[c], nil)
		if err != nil {
			return err.Error()
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.Status
	}
	var conns []net.Conn
	for range limits.MaxConnsPerAgent + 1 {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	for i, c := range conns[:limits.MaxConnsPerAgent] {
		if got := status(c); got != "200 OK" {
			t.Fatalf("connection %d: %s; want 200", i+1, got)
		}
	}
	if got := status(conns[limits.MaxConnsPerAgent]); got != "429 Too Many Requests" {
		t.Errorf("connection %d of the session: %s; want 429", limits.MaxConnsPerAgent+1, got)
	}
	if got := status(conns[limits.MaxConnsPerAgent]); strings.HasPrefix(got, "200") || strings.HasPrefix(got, "429") {
		t.Errorf("a second request on the refused connection: %s; want it closed", got)
	}
	if got := snapshot(srv, h).conns; got != limits.MaxConnsPerAgent {
		t.Errorf("connections counted for the session = %d; want %d", got, limits.MaxConnsPerAgent)
	}
	conns[0].Close()
	waitFor(t, "the closed connection's place to be freed", func() bool { return snapshot(srv, h).conns == limits.MaxConnsPerAgent-1 })
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := status(c); got != "200 OK" {
		t.Errorf("a new connection after one closed: %s; want 200", got)
	}
}

// state is what a refused request must leave unchanged (conns, the
// connections counted for the session, is transport bookkeeping that comes
// and goes with the client's connections; it is not compared).
type state struct {
	calls, streams, conns int
	head                  uint64
}

func (s state) same(o state) bool {
	return s.calls == o.calls && s.streams == o.streams && s.head == o.head
}

func snapshot(srv *Server, h *fakeHandler) state {
	h.mu.Lock()
	calls := len(h.calls)
	h.mu.Unlock()
	srv.mu.Lock()
	sess := srv.m["s1"]
	srv.mu.Unlock()
	if sess == nil {
		return state{calls: calls}
	}
	srv.mu.Lock()
	st := state{calls: calls, streams: sess.streams, conns: sess.conns}
	srv.mu.Unlock()
	st.head = sess.events.head()
	return st
}

// send writes tc on tr's endpoint and returns the status and body.
func send(t *testing.T, tr transport, tc hostile) (int, string) {
	t.Helper()
	method := tc.method
	if method == "" {
		method = http.MethodPost
	}
	var body io.Reader
	if tc.body != nil {
		body = bytes.NewReader(tc.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, tr.base+tc.path, body)
	if err != nil {
		t.Fatal(err)
	}
	hdr := tc.header
	if hdr == nil {
		hdr = goodHeaders()
	}
	for k, vs := range hdr {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := tr.hc.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", tc.name, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, string(b)
}

// stillWorks checks that session s1 completes a verb and gets a push event.
func stillWorks(t *testing.T, tr transport, srv *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := tr.dial(t, "s1", "t1")
	if r, err := c.Heartbeat(ctx, HeartbeatReq{NewRev: 7}); err != nil || r.AckRev != 7 {
		t.Fatalf("heartbeat after the refusal = %+v, %v; want ack_rev 7", r, err)
	}
	s, err := c.Events(ctx, "")
	if err != nil {
		t.Fatalf("events after the refusal: %v", err)
	}
	defer s.Close()
	if ev, err := s.Next(); err != nil || ev.ID != "1" {
		t.Fatalf("first event after the refusal = %+v, %v; want event 1", ev, err)
	}
}
