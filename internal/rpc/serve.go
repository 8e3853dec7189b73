package rpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// AgentSocketDirMode and AgentSocketMode are the modes ListenAgent gives an
// agent's socket directory and socket. Inside its container the agent runs
// as root without CAP_DAC_OVERRIDE, acting on files owned by choird's user,
// so the socket must be connectable by any uid there; the lease token is
// the authentication, and on the host the socks/ directory above stays
// 0700.
const (
	AgentSocketDirMode = 0o711
	AgentSocketMode    = 0o666
)

// endpoint is one listener a Server serves on, with its own http.Server.
type endpoint struct {
	s       *Server
	agentID string // "" on a shared listener: any open session is admitted
	what    string // for logs: "agent a1 socket", "shared listener 127.0.0.1:9400"
	hs      *http.Server
	ln      *limitListener
	ctx     context.Context
	cancel  context.CancelFunc

	mu    sync.Mutex
	conns map[net.Conn]*connInfo
	once  sync.Once
	err   error
}

// connInfo is what the server knows of one connection: the session its
// first authenticated request named, which it counts against.
type connInfo struct {
	sess *session // guarded by the server's lock
}

type endpointKey struct{}
type connKey struct{}

// serving is the Server's table of listeners and the connection budget
// they share.
type serving struct {
	emu       sync.Mutex
	endpoints map[*endpoint]struct{}
	down      bool
	total     *counter
	base      context.Context
	endAll    context.CancelFunc
}

// Serve serves s on a shared listener (the TCP/HTTPS transport, or a
// socket every agent reaches): any open session is admitted, under the
// limits of every listener (MaxConnsShared for the listener, MaxConnsTotal
// shared with the others, MaxConnsPerAgent per session). It returns
// http.ErrServerClosed after Shutdown.
func (s *Server) Serve(l net.Listener) error {
	ep, err := s.newEndpoint(l, "", "shared listener "+l.Addr().String(), s.limits.MaxConnsShared)
	if err != nil {
		l.Close()
		return err
	}
	return ep.hs.Serve(ep.ln)
}

// ListenAgent listens on a Unix socket at path for one agent and serves s
// on it. The socket's directory is created if missing (AgentSocketDirMode;
// missing directories above it 0700) and the socket gets AgentSocketMode;
// a stale socket is replaced, a live one refused. Only sessions opened for
// agentID are admitted: a valid token of another agent's session is a 401,
// like a wrong token. The listener holds at most MaxConnsPerAgent
// connections, drawn from the server-wide MaxConnsTotal.
//
// Close stops accepting, closes the listener's connections, ends its event
// streams and removes the socket file.
func (s *Server) ListenAgent(path, agentID string) (io.Closer, error) {
	if agentID == "" {
		return nil, errors.New("listen for an agent: empty agent id")
	}
	ul, err := listenUnix(path, AgentSocketDirMode, AgentSocketMode)
	if err != nil {
		return nil, err
	}
	ep, err := s.newEndpoint(ul, agentID, "agent "+agentID+" socket "+path, s.limits.MaxConnsPerAgent)
	if err != nil {
		ul.Close()
		return nil, err
	}
	go ep.hs.Serve(ep.ln)
	return ep, nil
}

// Shutdown ends every event stream, stops every listener (shared and per
// agent) and waits, until ctx ends, for the requests in flight; then it
// closes what is left.
func (s *Server) Shutdown(ctx context.Context) error {
	s.emu.Lock()
	s.down = true
	eps := make([]*endpoint, 0, len(s.endpoints))
	for ep := range s.endpoints {
		eps = append(eps, ep)
	}
	s.emu.Unlock()
	s.endAll()
	var errs []error
	for _, ep := range eps {
		if err := ep.hs.Shutdown(ctx); err != nil {
			ep.hs.Close()
			errs = append(errs, fmt.Errorf("stop %s: %w", ep.what, err))
		}
		s.dropEndpoint(ep)
	}
	return errors.Join(errs...)
}

func (s *Server) newEndpoint(l net.Listener, agentID, what string, maxConns int) (*endpoint, error) {
	s.emu.Lock()
	defer s.emu.Unlock()
	if s.down {
		return nil, errors.New("the agent protocol server is shut down")
	}
	ctx, cancel := context.WithCancel(s.base)
	ep := &endpoint{s: s, agentID: agentID, what: what, ctx: ctx, cancel: cancel, conns: map[net.Conn]*connInfo{}}
	ep.hs = &http.Server{
		Handler:     s,
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		BaseContext: func(net.Listener) context.Context { return context.WithValue(ctx, endpointKey{}, ep) },
		ConnContext: ep.connContext,
		ConnState:   ep.connState,
	}
	s.limits.configure(ep.hs)
	ep.ln = guard(ep.hs, l, &counter{max: maxConns}, s.total)
	ep.ln.onRefuse = ep.refused
	s.endpoints[ep] = struct{}{}
	return ep, nil
}

func (s *Server) dropEndpoint(ep *endpoint) {
	s.emu.Lock()
	delete(s.endpoints, ep)
	s.emu.Unlock()
}

// Close stops the listener: see ListenAgent.
func (ep *endpoint) Close() error {
	ep.once.Do(func() {
		ep.cancel()          // ends event streams at once
		err := ep.ln.Close() // unlinks the socket file now
		if e := ep.hs.Close(); e != nil && err == nil {
			err = e
		}
		if errors.Is(err, net.ErrClosed) {
			err = nil
		}
		ep.err = err
		ep.s.dropEndpoint(ep)
	})
	return ep.err
}

func (ep *endpoint) connContext(ctx context.Context, c net.Conn) context.Context {
	info := &connInfo{}
	ep.mu.Lock()
	ep.conns[c] = info
	ep.mu.Unlock()
	return context.WithValue(ctx, connKey{}, info)
}

func (ep *endpoint) connState(c net.Conn, st http.ConnState) {
	if st != http.StateClosed && st != http.StateHijacked {
		return
	}
	ep.mu.Lock()
	info := ep.conns[c]
	delete(ep.conns, c)
	ep.mu.Unlock()
	if info == nil {
		return
	}
	ep.s.mu.Lock()
	if info.sess != nil {
		info.sess.conns--
		info.sess = nil
	}
	ep.s.mu.Unlock()
}

// refused logs connections closed over a cap, at most once a minute per
// listener.
func (ep *endpoint) refused(n int64, report bool) {
	if report {
		ep.s.log.Warn("connection refused: listener at its connection cap", "listener", ep.what,
			"cap_listener", ep.ln.counters[0].max, "cap_total", ep.ln.counters[1].max, "refused_so_far", n)
	}
}

// attribute counts the request's connection against the session the first
// time an authenticated request on it names one; over MaxConnsPerAgent the
// request is refused with 429 and the connection closed.
func (s *Server) attribute(w http.ResponseWriter, r *http.Request, sess *session) bool {
	info, _ := r.Context().Value(connKey{}).(*connInfo)
	if info == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if info.sess != nil {
		return true
	}
	if sess.conns >= s.limits.MaxConnsPerAgent {
		w.Header().Set("Connection", "close")
		w.Header().Set("Retry-After", "1")
		writeError(w, Errorf(http.StatusTooManyRequests, CodeRateLimited,
			"this session already holds %d connections, the limit per session: reuse connections (keep-alive) instead of opening more", s.limits.MaxConnsPerAgent))
		return false
	}
	sess.conns++
	info.sess = sess
	return true
}

// refuseLogInterval spaces the warnings about refused connections.
const refuseLogInterval = time.Minute
