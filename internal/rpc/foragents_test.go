package rpc

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestSharedListenerHoldsEveryConfiguredAgent: sized for 700 agents, the
// shared listener (the HTTPS transport) admits each agent's two held
// connections, its event stream's and its heartbeats', 1,400 in all where
// the fixed cap of 1,024 refused the 513th agent's; one session still
// cannot hold more than MaxConnsPerAgent.
func TestSharedListenerHoldsEveryConfiguredAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 1,400 connections")
	}
	const agents = 700
	raiseFileLimit(t, 2*agents*2+1024)
	limits := DefaultLimits().ForAgents(agents)
	if limits.MaxConnsPerAgent != DefaultLimits().MaxConnsPerAgent {
		t.Errorf("ForAgents(%d).MaxConnsPerAgent = %d; want it unchanged, %d", agents, limits.MaxConnsPerAgent, DefaultLimits().MaxConnsPerAgent)
	}
	limits.Rate, limits.Burst = 1e6, 1e6
	srv := NewServer(&fakeHandler{}, limits, quietLogger())
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	heartbeat := func(c net.Conn, r *bufio.Reader, session string) string {
		c.SetDeadline(time.Now().Add(30 * time.Second))
		req := fmt.Sprintf("POST /rpc/HEARTBEAT HTTP/1.1\r\nHost: x\r\nX-Choir-Session-Id: %s\r\nX-Choir-Request-Id: r\r\nAuthorization: Bearer t-%s\r\nContent-Length: 2\r\n\r\n{}", session, session)
		if _, err := io.WriteString(c, req); err != nil {
			return err.Error()
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			return err.Error()
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.Status
	}
	for i := range agents {
		session := fmt.Sprintf("s%d", i)
		srv.Open(session, fmt.Sprintf("a%d", i), "t-"+session)
		for k := range 2 {
			c, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			if got := heartbeat(c, bufio.NewReader(c), session); got != "200 OK" {
				t.Fatalf("agent %d's connection %d (%d held): %s; want 200", i+1, k+1, 2*i+k, got)
			}
		}
	}
	// One session's connections past its cap are refused.
	refused := 0
	for range limits.MaxConnsPerAgent {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if got := heartbeat(c, bufio.NewReader(c), "s0"); got == "429 Too Many Requests" {
			refused++
		}
	}
	if refused != 2 {
		t.Errorf("agent 1 opened %d more connections beside its 2: %d refused; want 2 (its cap is %d)", limits.MaxConnsPerAgent, refused, limits.MaxConnsPerAgent)
	}
}

// TestForAgentsStaysWithinTheFileLimit: however many agents are
// configured, the caps leave descriptors for choird's other files.
func TestForAgentsStaysWithinTheFileLimit(t *testing.T) {
	soft := fileLimit()
	if soft == 0 {
		t.Skip("RLIMIT_NOFILE is unlimited or unreadable")
	}
	for _, n := range []int{0, 10, 1000, 10000, 1000000} {
		l := DefaultLimits().ForAgents(n)
		if l.MaxConnsTotal > soft || l.MaxConnsShared > l.MaxConnsTotal {
			t.Errorf("ForAgents(%d) with RLIMIT_NOFILE %d: shared %d, total %d; want shared <= total <= the limit", n, soft, l.MaxConnsShared, l.MaxConnsTotal)
		}
		if d := DefaultLimits(); l.MaxConnsShared < d.MaxConnsShared || l.MaxConnsTotal < d.MaxConnsTotal {
			t.Errorf("ForAgents(%d): shared %d, total %d; want at least the defaults %d, %d", n, l.MaxConnsShared, l.MaxConnsTotal, d.MaxConnsShared, d.MaxConnsTotal)
		}
	}
}
