package rpc

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Connections carried by choird (issue 25 item 1). An agent whose
// container has no network route (a run without network, an agent in
// network mode "policy") reaches the services its own tools speak to
// (search, Notion, TTS, mail) through a tunnel on its RPC endpoint,
// when InitHelloResp.Tunnel says so:
//
//	CONNECT <host>:<port> HTTP/1.1
//	Host: <host>:<port>
//	X-Choir-Session-Id, Authorization: Bearer <lease token> as for a verb
//
// The call is authenticated, rate-limited and counted like a verb; then
// TunnelDialer (choird) decides whether the session may reach exactly
// that host and port, and dials it itself. On 200 the connection carries
// bytes both ways, untouched: TLS stays between the agent and the
// service, so choird holds neither the keys nor the plaintext. A refusal
// is an *Error in the verbs' shape (403 for a destination outside the
// session's configuration). Tunnels end when either side closes, after
// TunnelIdle without a byte either way, or when the session is closed.

// VerbTunnel is what Server.Observe is told for a CONNECT.
const VerbTunnel Verb = "TUNNEL"

// MaxTunnelsPerSession bounds a session's open tunnels. A hijacked
// connection no longer counts against its listener's cap (guard releases
// its place at the hijack, limits.go), so this is what bounds them: a
// session holds at most this many tunnels beside the listener's cap
// (MaxConnsPerAgent on an agent socket, 64).
const MaxTunnelsPerSession = 16

// TunnelIdle ends a tunnel that carried nothing either way for so long.
const TunnelIdle = 15 * time.Minute

// TunnelCall is one connection an agent asked choird to carry.
type TunnelCall struct {
	SessionID string
	RequestID string
	// Target is the CONNECT's authority exactly as sent, "host:port"
	// (checked to split as one; the host lowercased).
	Target string
}

// TunnelDialer is choird's side of carried connections: it refuses a
// destination the session may not reach (an *Error chooses the status;
// any other error is a 502) or returns the connection to it.
type TunnelDialer interface {
	DialTunnel(ctx context.Context, call TunnelCall) (net.Conn, error)
}

// tunnels are a server's open tunnels by session, so that closing a
// session ends them.
type tunnels struct {
	mu sync.Mutex
	m  map[string]map[*tunnel]struct{}
}

type tunnel struct {
	a, b net.Conn
	once sync.Once
}

func (t *tunnel) close() {
	t.once.Do(func() {
		t.a.Close()
		t.b.Close()
	})
}

// add registers t for the session, or says false at the cap.
func (ts *tunnels) add(sessionID string, t *tunnel) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.m == nil {
		ts.m = map[string]map[*tunnel]struct{}{}
	}
	set := ts.m[sessionID]
	if len(set) >= MaxTunnelsPerSession {
		return false
	}
	if set == nil {
		set = map[*tunnel]struct{}{}
		ts.m[sessionID] = set
	}
	set[t] = struct{}{}
	return true
}

func (ts *tunnels) remove(sessionID string, t *tunnel) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	delete(ts.m[sessionID], t)
	if len(ts.m[sessionID]) == 0 {
		delete(ts.m, sessionID)
	}
}

// count is the session's open tunnels.
func (ts *tunnels) count(sessionID string) int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.m[sessionID])
}

// closeSession ends every tunnel of the session.
func (ts *tunnels) closeSession(sessionID string) {
	ts.mu.Lock()
	set := ts.m[sessionID]
	delete(ts.m, sessionID)
	ts.mu.Unlock()
	for t := range set {
		t.close()
	}
}

// TunnelTarget checks a CONNECT authority: "host:port" with a host and a
// decimal port 1-65535 written without a sign or leading zero. It returns
// it with the host lowercased; ok false for anything else (a bracketed
// IPv6 literal is kept as written, lowercased).
func TunnelTarget(authority string) (string, bool) {
	if len(authority) > 260 || strings.ContainsAny(authority, "/?#@ \t\r\n%\\") {
		return "", false
	}
	host, port, err := net.SplitHostPort(authority)
	if err != nil || host == "" || port == "" || port[0] == '0' {
		return "", false
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		return "", false
	}
	return net.JoinHostPort(strings.ToLower(host), port), true
}

// serveTunnel serves a CONNECT of an authenticated session.
func (s *Server) serveTunnel(w http.ResponseWriter, r *http.Request, sessionID string) {
	if s.Tunnels == nil {
		writeError(w, Errorf(http.StatusNotFound, CodeNotFound, "this choird carries no connections: the agent reaches the network directly"))
		return
	}
	target, ok := TunnelTarget(r.RequestURI)
	if !ok {
		writeError(w, Errorf(http.StatusBadRequest, CodeBadRequest, "CONNECT target %q is not host:port (a host name or IP address, a port 1-65535)", clipTo(r.RequestURI, 200)))
		return
	}
	reqID := r.Header.Get(HeaderRequestID)
	if reqID == "" {
		reqID = NewRequestID()
	}
	w.Header().Set(HeaderRequestID, reqID)
	if s.tunnels.count(sessionID) >= MaxTunnelsPerSession {
		w.Header().Set("Retry-After", "1")
		writeError(w, Errorf(http.StatusTooManyRequests, CodeRateLimited, "this session already holds %d tunnels, the limit: close one before opening another", MaxTunnelsPerSession))
		return
	}
	ctx := WithCall(r.Context(), Call{RequestID: reqID, SessionID: sessionID})
	up, err := s.Tunnels.DialTunnel(ctx, TunnelCall{SessionID: sessionID, RequestID: reqID, Target: target})
	if err != nil {
		var rerr *Error
		if !errors.As(err, &rerr) {
			rerr = Errorf(http.StatusBadGateway, CodeUnavailable, "connect to %s: %v", target, err)
		}
		writeError(w, rerr)
		return
	}
	t := &tunnel{b: up}
	down, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		up.Close()
		writeError(w, Errorf(http.StatusInternalServerError, CodeInternal, "this connection cannot carry a tunnel: %v", err))
		return
	}
	t.a = down
	if !s.tunnels.add(sessionID, t) {
		t.close() // the cap was reached meanwhile
		return
	}
	defer s.tunnels.remove(sessionID, t)
	defer t.close()
	down.SetDeadline(time.Time{}) // the server's header and body deadlines
	if _, err := buf.WriteString("HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	if err := buf.Flush(); err != nil {
		return
	}
	// What the agent sent after its CONNECT is the tunnel's first bytes.
	var first []byte
	if n := buf.Reader.Buffered(); n > 0 {
		first, _ = buf.Reader.Peek(n)
		first = append([]byte(nil), first...)
	}
	splice(t, first, TunnelIdle)
}

// splice copies both ways until either side ends or idle passes without
// a byte either way, then closes both.
func splice(t *tunnel, first []byte, idle time.Duration) {
	var last sync.Mutex
	seen := time.Now()
	touch := func() {
		last.Lock()
		seen = time.Now()
		last.Unlock()
	}
	quiet := func() time.Duration {
		last.Lock()
		defer last.Unlock()
		return time.Since(seen)
	}
	// copyDir copies src to dst. Its end closes the tunnel, except an EOF
	// that can be passed on as a half-close: the other way goes on.
	copyDir := func(dst, src net.Conn, pre []byte) {
		if len(pre) > 0 {
			if _, err := dst.Write(pre); err != nil {
				t.close()
				return
			}
		}
		b := make([]byte, 32<<10)
		for {
			src.SetReadDeadline(time.Now().Add(idle))
			n, err := src.Read(b)
			if n > 0 {
				touch()
				if _, werr := dst.Write(b[:n]); werr != nil {
					t.close()
					return
				}
			}
			if err == nil {
				continue
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && quiet() < idle {
				continue // the other way is busy
			}
			if errors.Is(err, io.EOF) && closeWrite(dst) {
				return
			}
			t.close()
			return
		}
	}
	done := make(chan struct{})
	go func() {
		copyDir(t.b, t.a, first)
		close(done)
	}()
	copyDir(t.a, t.b, nil)
	<-done
	t.close()
}

// closeWrite half-closes c when it can (false otherwise: the tunnel ends).
func closeWrite(c net.Conn) bool {
	cw, ok := c.(interface{ CloseWrite() error })
	return ok && cw.CloseWrite() == nil
}
