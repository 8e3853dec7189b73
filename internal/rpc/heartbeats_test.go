package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawStream is a heartbeat stream written by hand on the agent socket, to
// send what no Client sends.
type rawStream struct {
	t    *testing.T
	c    net.Conn
	resp *http.Response
	br   *bufio.Reader
}

func openRawStream(t *testing.T, sock, header string) *rawStream {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "POST "+HeartbeatsPath+" HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"+header+"\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to the stream's request: %v", err)
	}
	return &rawStream{t: t, c: c, resp: resp, br: bufio.NewReader(resp.Body)}
}

const goodStreamHeader = "X-Choir-Session-Id: s1\r\nX-Choir-Request-Id: r\r\nAuthorization: Bearer t1\r\n"

// send writes one chunk of the request's body.
func (s *rawStream) send(b string) {
	fmt.Fprintf(s.c, "%x\r\n%s\r\n", len(b), b)
}

// answer reads one answer frame: "<status> <retry> <body>", or "EOF" when
// the server ended the stream.
func (s *rawStream) answer() string {
	s.t.Helper()
	line, err := s.br.ReadString('\n')
	if errors.Is(err, io.EOF) && line == "" {
		return "EOF"
	}
	if err != nil {
		s.t.Fatalf("read an answer: %v", err)
	}
	var status, n, retry int
	if _, err := fmt.Sscanf(line, "%d %d %d\n", &status, &n, &retry); err != nil {
		s.t.Fatalf("answer header %q: %v", line, err)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(s.br, body); err != nil {
		s.t.Fatalf("answer body: %v", err)
	}
	return fmt.Sprintf("%d %d %s", status, retry, body)
}

func frame(body string) string { return fmt.Sprintf("HEARTBEAT %d\n%s", len(body), body) }

// TestHostileHeartbeatFrames: on a heartbeat stream each heartbeat is
// checked as a POST /rpc/HEARTBEAT is (strict JSON, the fields' bounds)
// and refused without reaching the handler, the stream going on; a frame
// that is not one is refused and ends the stream. Each answer is observed.
func TestHostileHeartbeatFrames(t *testing.T) {
	limits := DefaultLimits()
	limits.Rate, limits.Burst = 1e6, 1e6
	h := &fakeHandler{}
	srv := NewServer(h, limits, quietLogger())
	var mu sync.Mutex
	var observed []string
	srv.Observe = func(v Verb, code string, _ time.Duration) {
		mu.Lock()
		observed = append(observed, string(v)+" "+code)
		mu.Unlock()
	}
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	sock, _ := agentSocket(t, srv, t.TempDir(), testAgent)
	srv.Open("s1", testAgent, "t1")
	good := frame(`{"new_rev":3}`)
	const ack = `200 0 {"ack_rev":3,"config_version_latest":1}`
	tooMany := `{"patches":[{}` + strings.Repeat(`,{}`, MaxPatches) + `]}`
	cases := []struct {
		name, send, want string
		ends             bool
	}{
		{name: "malformed JSON", send: frame(`{"base_rev":`), want: `400 0 {"error":{"code":"bad_request","message":"malformed JSON payload`},
		{name: "unknown field", send: frame(`{"launch_missiles":true}`), want: `unknown field \"launch_missiles\"`},
		{name: "trailing data", send: frame(`{} {}`), want: `data after the JSON value`},
		{name: "empty body", send: frame(``), want: `empty body`},
		{name: "wrong type", send: frame(`{"new_rev":"ten"}`), want: `new_rev`},
		{name: "too many patches", send: frame(tooMany), want: `the limit is 1024 events`},
		{name: "length not a number", send: "HEARTBEAT x\n{}", want: `400 0 {"error":{"code":"bad_request","message":"heartbeat frame header`, ends: true},
		{name: "length with a leading zero", send: "HEARTBEAT 02\n{}", want: `heartbeat frame header`, ends: true},
		{name: "length with a sign", send: "HEARTBEAT +2\n{}", want: `heartbeat frame header`, ends: true},
		{name: "no length", send: "HEARTBEAT\n{}", want: `heartbeat frame header`, ends: true},
		{name: "another verb", send: "GET_SECRETS 2\n{}", want: `404 0 {"error":{"code":"unknown_verb"`, ends: true},
		{name: "lower-case verb", send: "heartbeat 2\n{}", want: `unknown_verb`, ends: true},
		{name: "over the frame cap", send: fmt.Sprintf("HEARTBEAT %d\n", MaxHeartbeatFrame+1), want: `413 0 {"error":{"code":"payload_too_large"`, ends: true},
		{name: "header line too long", send: "HEARTBEAT " + strings.Repeat("1", 8<<10), want: `header longer than`, ends: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := openRawStream(t, sock, goodStreamHeader)
			if s.resp.StatusCode != http.StatusOK || s.resp.Header.Get(HeaderFrameMax) != fmt.Sprint(MaxHeartbeatFrame) {
				t.Fatalf("stream answered %s, %s %q; want 200 with the frame cap", s.resp.Status, HeaderFrameMax, s.resp.Header.Get(HeaderFrameMax))
			}
			s.send(good)
			if got := s.answer(); got != ack {
				t.Fatalf("a good heartbeat = %s; want %s", got, ack)
			}
			h.mu.Lock()
			calls := len(h.calls)
			h.mu.Unlock()
			mu.Lock()
			observed = nil
			mu.Unlock()
			s.send(tc.send)
			if got := s.answer(); !strings.Contains(got, tc.want) {
				t.Fatalf("%s = %s; want it to contain %s", tc.name, clipTo(got, 300), tc.want)
			}
			h.mu.Lock()
			if len(h.calls) != calls {
				t.Errorf("the handler was called for a refused heartbeat")
			}
			h.mu.Unlock()
			mu.Lock()
			if len(observed) != 1 || observed[0] == "HEARTBEAT ok" {
				t.Errorf("observed %v; want the refusal", observed)
			}
			mu.Unlock()
			if tc.ends {
				if got := s.answer(); got != "EOF" {
					t.Fatalf("after %s the stream went on: %s", tc.name, got)
				}
				return
			}
			s.send(good)
			if got := s.answer(); got != ack {
				t.Fatalf("a good heartbeat after %s = %s; want %s", tc.name, got, ack)
			}
		})
	}
	waitFor(t, "every stream to end", func() bool { return beatsOf(srv, "s1") == 0 })
}

// beatsOf is how many heartbeat streams a session holds.
func beatsOf(srv *Server, session string) int {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if sess := srv.m[session]; sess != nil {
		return sess.beats
	}
	return -1
}

// TestHostileHeartbeatStreams: a stream is refused like a verb (the
// token, the method, the request id), a session holds at most
// MaxStreamsPerSession of them, and a stream that carries nothing for
// IdleTimeout, or that sends half a frame for BodyTimeout, is ended.
func TestHostileHeartbeatStreams(t *testing.T) {
	limits := shortLimits()
	limits.IdleTimeout = 300 * time.Millisecond
	h := &fakeHandler{}
	srv := NewServer(h, limits, quietLogger())
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	sock, _ := agentSocket(t, srv, t.TempDir(), testAgent)
	srv.Open("s1", testAgent, "t1")
	srv.Open("s-other", "a2", "t-other")
	for _, tc := range []struct{ name, header, want string }{
		{"no token", "X-Choir-Session-Id: s1\r\nX-Choir-Request-Id: r\r\n", "401"},
		{"wrong token", "X-Choir-Session-Id: s1\r\nX-Choir-Request-Id: r\r\nAuthorization: Bearer t2\r\n", "401"},
		{"another agent's session", "X-Choir-Session-Id: s-other\r\nX-Choir-Request-Id: r\r\nAuthorization: Bearer t-other\r\n", "401"},
		{"no request id", "X-Choir-Session-Id: s1\r\nAuthorization: Bearer t1\r\n", "400"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openRawStream(t, sock, tc.header) // the refusal comes without the body ending
			if !strings.HasPrefix(s.resp.Status, tc.want) {
				t.Errorf("stream with %s = %s; want %s", tc.name, s.resp.Status, tc.want)
			}
		})
	}
	t.Run("GET", func(t *testing.T) {
		c := dialUDS(t, sock, "s1", "t1")
		resp, err := c.do(context.Background(), http.MethodGet, HeartbeatsPath, nil, nil)
		if got := outcome(resp, err); !strings.Contains(got, "error 405") {
			t.Errorf("GET %s = %s; want 405", HeartbeatsPath, got)
		}
	})
	t.Run("streams per session", func(t *testing.T) {
		var open []*rawStream
		for range limits.MaxStreamsPerSession {
			open = append(open, openRawStream(t, sock, goodStreamHeader))
		}
		s := openRawStream(t, sock, goodStreamHeader)
		if s.resp.StatusCode != http.StatusTooManyRequests {
			t.Errorf("stream %d of the session = %s; want 429", limits.MaxStreamsPerSession+1, s.resp.Status)
		}
		for _, s := range open {
			s.c.Close()
		}
		waitFor(t, "the closed streams' places to be freed", func() bool { return beatsOf(srv, "s1") == 0 })
	})
	t.Run("idle", func(t *testing.T) {
		s := openRawStream(t, sock, goodStreamHeader)
		s.send(frame(`{}`))
		if got := s.answer(); !strings.HasPrefix(got, "200") {
			t.Fatalf("heartbeat = %s", got)
		}
		if got := s.answer(); got != "EOF" { // nothing sent for IdleTimeout
			t.Fatalf("an idle stream went on: %s", got)
		}
	})
	t.Run("half a frame", func(t *testing.T) {
		s := openRawStream(t, sock, goodStreamHeader)
		s.send("HEARTBEAT 100\n{\"new_rev\":")
		if got := s.answer(); !strings.HasPrefix(got, "408") {
			t.Fatalf("a stalled heartbeat = %s; want 408", got)
		}
		if got := s.answer(); got != "EOF" {
			t.Fatalf("after a stalled heartbeat the stream went on: %s", got)
		}
	})
	waitFor(t, "every stream to end", func() bool { return beatsOf(srv, "s1") == 0 })
}

// TestHeartbeatStreamEndsWithItsSession: closing a session ends its
// heartbeat stream at once; the client's next heartbeat is a 401.
func TestHeartbeatStreamEndsWithItsSession(t *testing.T) {
	srv := NewServer(&fakeHandler{}, DefaultLimits(), quietLogger())
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	sock, _ := agentSocket(t, srv, t.TempDir(), testAgent)
	srv.Open("s1", testAgent, "t1")
	c := dialUDS(t, sock, "s1", "t1")
	ctx := context.Background()
	if _, err := c.Heartbeat(ctx, HeartbeatReq{NewRev: 1}); err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	sess := srv.m["s1"]
	srv.mu.Unlock()
	srv.Close("s1")
	waitFor(t, "the session's stream to end", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return sess.beats == 0
	})
	_, err := c.Heartbeat(ctx, HeartbeatReq{NewRev: 2})
	if got := outcome(nil, err); !strings.HasPrefix(got, "error 401 unauthorized") {
		t.Errorf("heartbeat after the session closed = %s; want 401", got)
	}
}

// streamCalls splits the heartbeats a handler served by how they came:
// on a stream (request id "<stream's>.<n>") or as POSTs.
func streamCalls(h *fakeHandler) (stream, post int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.calls {
		if strings.Contains(c.RequestID, ".") {
			stream++
		} else {
			post++
		}
	}
	return stream, post
}

// TestClientHeartbeatsOnTheStream: the client sends its heartbeats on
// one stream, those over the frame cap as POSTs, and again on a new stream
// when the server ended its stream (idle) or the caller gave up on one.
func TestClientHeartbeatsOnTheStream(t *testing.T) {
	limits := DefaultLimits()
	limits.IdleTimeout = 300 * time.Millisecond
	h := &slowBeats{release: make(chan struct{})}
	srv := NewServer(h, limits, quietLogger())
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	sock, _ := agentSocket(t, srv, t.TempDir(), testAgent)
	srv.Open("s1", testAgent, "t1")
	c := dialUDS(t, sock, "s1", "t1")
	ctx := context.Background()
	beat := func(req HeartbeatReq) {
		t.Helper()
		if r, err := c.Heartbeat(ctx, req); err != nil || r.AckRev != req.NewRev {
			t.Fatalf("heartbeat %d = %+v, %v", req.NewRev, r, err)
		}
	}
	for i := range 3 {
		beat(HeartbeatReq{NewRev: int64(i)})
	}
	big := HeartbeatReq{NewRev: 9, Snapshot: json.RawMessage(`"` + strings.Repeat("s", MaxHeartbeatFrame) + `"`)}
	if _, err := c.Heartbeat(ctx, big); err == nil || !strings.Contains(err.Error(), "snapshot is not a JSON object") {
		t.Fatalf("a heartbeat over the frame cap = %v; want the POST's refusal of its snapshot", err)
	}
	if stream, post := streamCalls(&h.fakeHandler); stream != 3 || post != 0 {
		t.Errorf("heartbeats on the stream, as POSTs = %d, %d; want 3, 0 (the refused one reaches no handler)", stream, post)
	}
	waitFor(t, "the idle stream to end", func() bool { return beatsOf(srv, "s1") == 0 })
	beat(HeartbeatReq{NewRev: 4}) // on a new stream

	// A caller that gives up on its heartbeat closes the stream.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := c.Heartbeat(short, HeartbeatReq{NewRev: slowRev}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a heartbeat past its deadline = %v; want the deadline", err)
	}
	close(h.release) // the abandoned heartbeat is served now, on its own
	beat(HeartbeatReq{NewRev: 5})
	waitFor(t, "the 6 heartbeats on streams, none as a POST", func() bool {
		stream, post := streamCalls(&h.fakeHandler)
		return stream == 6 && post == 0
	})
}

// slowRev is the revision slowBeats holds until released.
const slowRev = 99

type slowBeats struct {
	fakeHandler
	release chan struct{}
}

func (h *slowBeats) HandleHeartbeat(ctx context.Context, r HeartbeatReq) (HeartbeatResp, error) {
	if r.NewRev == slowRev {
		<-h.release
	}
	return h.fakeHandler.HandleHeartbeat(ctx, r)
}

// TestClientHeartbeatsWithoutStreams: against a server that serves no
// heartbeat streams (404) the client sends POSTs, and asks once.
func TestClientHeartbeatsWithoutStreams(t *testing.T) {
	h := &fakeHandler{}
	srv := NewServer(h, DefaultLimits(), quietLogger())
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	var asked int
	var mu sync.Mutex
	old := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == HeartbeatsPath {
			mu.Lock()
			asked++
			mu.Unlock()
			writeError(w, Errorf(http.StatusNotFound, CodeNotFound, "no such endpoint"))
			return
		}
		srv.ServeHTTP(w, r)
	})
	sock := filepath.Join(t.TempDir(), "choird.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: old}
	go hs.Serve(l)
	t.Cleanup(func() { hs.Close() })
	srv.Open("s1", testAgent, "t1")
	c := dialUDS(t, sock, "s1", "t1")
	for i := range 3 {
		if r, err := c.Heartbeat(context.Background(), HeartbeatReq{NewRev: int64(i)}); err != nil || r.AckRev != int64(i) {
			t.Fatalf("heartbeat %d = %+v, %v", i, r, err)
		}
	}
	if stream, post := streamCalls(h); stream != 0 || post != 3 {
		t.Errorf("heartbeats on a stream, as POSTs = %d, %d; want 0, 3", stream, post)
	}
	if asked != 1 {
		t.Errorf("the client asked for a stream %d times; want once", asked)
	}
}

// TestHeartbeatStreamRateLimit: opening a stream and each heartbeat on it
// spend the session's rate tokens as calls do; one over is a 429 with its
// Retry-After, and the stream goes on.
func TestHeartbeatStreamRateLimit(t *testing.T) {
	limits := DefaultLimits()
	limits.Rate, limits.Burst = 1, 3
	h := &fakeHandler{}
	srv := NewServer(h, limits, quietLogger())
	frozen := time.Unix(1700000000, 0)
	srv.now = func() time.Time { return frozen } // no refill during the test
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	sock, _ := agentSocket(t, srv, t.TempDir(), testAgent)
	srv.Open("s1", testAgent, "t1")
	c := dialUDS(t, sock, "s1", "t1")
	var got []string
	for i := range 4 {
		r, err := c.Heartbeat(context.Background(), HeartbeatReq{NewRev: int64(i)})
		got = append(got, outcome(r, err))
	}
	want := []string{`{"ack_rev":0,"config_version_latest":1}`, `{"ack_rev":1,"config_version_latest":1}`,
		`error 429 rate_limited "more than 1 requests per second from this session; retry after 1s" retry=1s`}
	want = append(want, want[2])
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("heartbeats = %q; want %q (the stream's request spent a token)", got, want)
	}
	if stream, post := streamCalls(h); stream != 2 || post != 0 || beatsOf(srv, "s1") != 1 {
		t.Errorf("heartbeats served on the stream, as POSTs, streams = %d, %d, %d; want 2, 0, 1", stream, post, beatsOf(srv, "s1"))
	}
}

// refusingBeats refuses every heartbeat as choird refuses events that do
// not follow its stored log.
type refusingBeats struct{ fakeHandler }

func (h *refusingBeats) HandleHeartbeat(ctx context.Context, r HeartbeatReq) (HeartbeatResp, error) {
	e := Errorf(http.StatusConflict, CodeReplicationRefused, "heartbeat refused, nothing stored: a gap")
	e.Head = &ChainHead{Rev: 4, Hash: "h4"}
	return HeartbeatResp{}, e
}

// TestClientGetsTheRefusalsHead: a replication_refused reaches the agent
// with the head to resend from, on the stream and as a POST alike.
func TestClientGetsTheRefusalsHead(t *testing.T) {
	srv := NewServer(&refusingBeats{}, DefaultLimits(), quietLogger())
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	sock, _ := agentSocket(t, srv, t.TempDir(), testAgent)
	srv.Open("s1", testAgent, "t1")
	c := dialUDS(t, sock, "s1", "t1")
	big := []Event{{Rev: 10, Type: "UserMsg", Hash: "h10", Payload: json.RawMessage(`"` + strings.Repeat("s", MaxHeartbeatFrame) + `"`)}}
	for _, req := range []HeartbeatReq{{BaseRev: 9, NewRev: 9}, {BaseRev: 9, NewRev: 10, Patches: big}} { // the second over the frame cap: a POST
		_, err := c.Heartbeat(context.Background(), req)
		var rerr *Error
		if !errors.As(err, &rerr) || rerr.Code != CodeReplicationRefused || rerr.Head == nil || *rerr.Head != (ChainHead{Rev: 4, Hash: "h4"}) {
			t.Errorf("refused heartbeat of %d events = %v (%+v); want replication_refused with head 4 h4", len(req.Patches), err, rerr)
		}
	}
}
