package rpc

import (
	"context"
	"errors"
	"math"
	"net"
	"net/http"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"
)

// raiseFileLimit lifts the soft RLIMIT_NOFILE to the hard one (Go does the
// same at start on Linux; this is for runtimes that do not) and returns
// how many connections a flood may hold: want, or what the limit leaves
// after a margin for the server, the test and the race detector.
func raiseFileLimit(t testing.TB, want int) int {
	t.Helper()
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	if rl.Cur < rl.Max {
		rl.Cur = rl.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
			t.Logf("raise RLIMIT_NOFILE: %v", err)
		}
		syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl)
	}
	n := min(want, int(rl.Cur)-1024)
	if n < 1000 {
		t.Skipf("RLIMIT_NOFILE is %d: too low to hold a flood of connections", rl.Cur)
	}
	return n
}

// flood opens n connections to sock and holds them until the test ends.
// Dials the kernel refuses for a moment (the listen backlog is full while
// the server catches up) are retried; a flood that cannot reach n within
// a minute fails the test.
func flood(t testing.TB, sock string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	deadline := time.Now().Add(time.Minute)
	for len(conns) < n {
		c, err := net.Dial("unix", sock)
		if err != nil {
			if errors.Is(err, syscall.EAGAIN) && time.Now().Before(deadline) {
				runtime.Gosched()
				continue
			}
			t.Fatalf("flood: dial %d of %d: %v", len(conns)+1, n, err)
		}
		conns = append(conns, c)
	}
	return conns
}

// TestFloodedAgentSocketStarvesNoOne: 20,000 connections held open against
// agent 1's socket (fewer when RLIMIT_NOFILE, raised to its hard limit, is
// lower) leave the server holding at most MaxConnsPerAgent of them, and
// agent 2 still completes verbs and receives push events on its own socket;
// so does a server guarded like the admin socket.
func TestFloodedAgentSocketStarvesNoOne(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 20,000 connections")
	}
	n := raiseFileLimit(t, 20000)
	limits := DefaultLimits()
	srv := NewServer(&fakeHandler{}, limits, quietLogger())
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	dir := t.TempDir()
	sock1, _ := agentSocket(t, srv, dir, "a1")
	sock2, _ := agentSocket(t, srv, dir, "a2")
	srv.Open("s1", "a1", "t1")
	srv.Open("s2", "a2", "t2")
	adminSock, adminClient := adminLike(t, dir)
	goroutinesBefore := runtime.NumGoroutine()

	held := flood(t, sock1, n)
	t.Logf("holding %d connections to agent a1's socket", len(held))

	ep1 := endpointFor(t, srv, "a1")
	// Every connection past the cap is accepted and closed, none left
	// waiting in the kernel's backlog.
	waitFor(t, "a1's listener to refuse every connection over its cap", func() bool {
		return ep1.ln.refused.Load() >= int64(n-limits.MaxConnsPerAgent)
	})
	if got := ep1.ln.counters[0].count(); got > limits.MaxConnsPerAgent {
		t.Errorf("a1's listener holds %d connections; want at most %d", got, limits.MaxConnsPerAgent)
	}
	if got := srv.total.count(); got > limits.MaxConnsPerAgent {
		t.Errorf("the server holds %d connections in total; want at most %d (a1's cap)", got, limits.MaxConnsPerAgent)
	}
	// One goroutine per held connection at most, and no more.
	if g := runtime.NumGoroutine(); g > goroutinesBefore+2*limits.MaxConnsPerAgent+50 {
		t.Errorf("%d goroutines during the flood (%d before); want at most %d more", g, goroutinesBefore, 2*limits.MaxConnsPerAgent+50)
	}

	// Agent 2: a verb, and a push event on its stream.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c2 := dialUDS(t, sock2, "s2", "t2")
	if r, err := c2.Heartbeat(ctx, HeartbeatReq{BaseRev: 1, NewRev: 2}); err != nil || r.AckRev != 2 {
		t.Errorf("agent 2's heartbeat during the flood = %+v, %v; want ack_rev 2", r, err)
	}
	stream, err := c2.Events(ctx, "")
	if err != nil {
		t.Fatalf("agent 2's event stream during the flood: %v", err)
	}
	defer stream.Close()
	srv.Publish("s2", EventUserMessage, UserMessage{ID: "m1", Text: "still answering"})
	if ev, err := stream.Next(); err != nil || ev.Type != EventUserMessage {
		t.Errorf("agent 2's push during the flood = %+v, %v; want the user message", ev, err)
	}
	// The admin-like server, with its own budget, answers too.
	resp, err := adminClient.Get("http://admin/status")
	if err != nil {
		t.Fatalf("admin-like socket %s during the flood: %v", adminSock, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("admin-like socket during the flood: HTTP %d; want 200", resp.StatusCode)
	}
}

// adminLike serves a trivial handler the way choird serves ctl.sock
// (AdminLimits().Apply) and returns its socket and a client.
func adminLike(t testing.TB, dir string) (string, *http.Client) {
	t.Helper()
	sock := dir + "/ctl.sock"
	l, err := ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })}
	al := AdminLimits()
	go hs.Serve(al.Apply(hs, l, al.MaxConnsShared))
	t.Cleanup(func() { hs.Close() })
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return sock, &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// endpointFor finds agentID's listener.
func endpointFor(t testing.TB, srv *Server, agentID string) *endpoint {
	t.Helper()
	srv.emu.Lock()
	defer srv.emu.Unlock()
	for ep := range srv.endpoints {
		if ep.agentID == agentID {
			return ep
		}
	}
	t.Fatalf("no listener for agent %s", agentID)
	return nil
}

// TestAdminLimitsCapConnections: a server guarded with Limits.Apply holds
// at most its cap; the connection over it is closed at once, and a place
// freed is reused.
func TestAdminLimitsCapConnections(t *testing.T) {
	dir := t.TempDir()
	sock := dir + "/ctl.sock"
	l, err := ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })}
	al := AdminLimits()
	ll := al.Apply(hs, l, 3).(*limitListener)
	go hs.Serve(ll)
	t.Cleanup(func() { hs.Close() })
	if hs.ReadHeaderTimeout != al.ReadHeaderTimeout || hs.IdleTimeout != al.IdleTimeout || hs.MaxHeaderBytes != al.MaxHeaderBytes || hs.WriteTimeout != 0 {
		t.Errorf("admin server limits = header %v idle %v max header %d write %v; want %v %v %d and no write timeout",
			hs.ReadHeaderTimeout, hs.IdleTimeout, hs.MaxHeaderBytes, hs.WriteTimeout, al.ReadHeaderTimeout, al.IdleTimeout, al.MaxHeaderBytes)
	}
	var held []net.Conn
	for range 3 {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	waitFor(t, "three connections admitted", func() bool { return ll.counters[0].count() == 3 })
	over, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	over.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := over.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Errorf("read on the connection over the cap = %v; want it closed at once", err)
	}
	held[0].Close()
	waitFor(t, "a place freed", func() bool { return ll.counters[0].count() == 2 })
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 12)
	if _, err := c.Read(buf); err != nil || string(buf) != "HTTP/1.1 200" {
		t.Errorf("request on a freed place = %q, %v; want HTTP/1.1 200", buf, err)
	}
	for _, c := range held[1:] {
		c.Close()
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// waitFor polls cond until it holds or 10 seconds pass.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// BenchmarkVerbLatencyDuringFlood measures HEARTBEAT round trips of agent 2
// on its own socket, quiet and while agent 1's socket holds 10,000 idle
// connections and a goroutine keeps opening and closing more, reporting
// p50 and p99 latency.
//
//	go test -run='^$' -bench=VerbLatencyDuringFlood -benchtime=5000x ./internal/rpc/
func BenchmarkVerbLatencyDuringFlood(b *testing.B) {
	limits := DefaultLimits()
	limits.Rate, limits.Burst = math.MaxFloat64, math.MaxInt32
	srv := NewServer(&fakeHandler{}, limits, quietLogger())
	b.Cleanup(func() { srv.Shutdown(context.Background()) })
	dir := b.TempDir()
	sock1, _ := agentSocket(b, srv, dir, "a1")
	sock2, _ := agentSocket(b, srv, dir, "a2")
	srv.Open("s1", "a1", "t1")
	srv.Open("s2", "a2", "t2")
	measure := func(b *testing.B) {
		c := dialUDS(b, sock2, "s2", "t2")
		ctx := context.Background()
		req := HeartbeatReq{BaseRev: 1, NewRev: 2}
		if _, err := c.Heartbeat(ctx, req); err != nil {
			b.Fatal(err)
		}
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			t0 := time.Now()
			if _, err := c.Heartbeat(ctx, req); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		b.StopTimer()
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	}
	b.Run("quiet", measure)
	b.Run("flooded", func(b *testing.B) {
		n := raiseFileLimit(b, 10000)
		flood(b, sock1, n)
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { // churn: new connections keep arriving at a1's socket
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if c, err := net.Dial("unix", sock1); err == nil {
					c.Close()
				}
			}
		}()
		defer func() { close(stop); <-done }()
		measure(b)
	})
}
