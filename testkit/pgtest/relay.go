package pgtest

// The relay sits between the tests and the server. PGlite's socket server,
// serving one connection at a time, has three habits a real Postgres has not:
//
//   - it refuses a second connection outright ("Too many connections", or a
//     reset) instead of queueing it, and it notices a closed connection a few
//     milliseconds late, so even strictly sequential tests are refused;
//   - every connection talks to the same single backend session, so prepared
//     statements, SET ROLE and other session state leak from one connection
//     into the next (pgx then fails with "prepared statement stmtcache_...
//     already exists");
//   - it never answers an SSLRequest, so sslmode=prefer hangs.
//
// The relay accepts any number of connections; for each it answers SSL and
// GSS requests with "no", then dials the server and sends the startup message,
// retrying while the server refuses, until the server's one slot is free or
// the wait runs out (the client then gets an ErrorResponse saying why). When
// the client goes away it rolls back, runs DISCARD ALL and restores PGlite's
// search_path before closing, so the next connection starts with a fresh
// session, as on a real server. A real Postgres behind the relay is served
// the same way, which costs nothing there.

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// resetSQL brings PGlite's shared session back to how a new connection finds
// it: DISCARD ALL drops prepared statements, resets roles and settings; it
// also resets search_path to PGlite's boot value, pg_catalog, so the
// "SET search_path TO public" PGlite runs at start is repeated.
var resetSQL = []string{"ROLLBACK", "DISCARD ALL", "SET search_path TO public"}

type relay struct {
	ln       net.Listener
	upstream string        // host:port of the server
	wait     time.Duration // how long a connection may wait for the server's slot

	closing chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   map[net.Conn]bool // open connections: true for clients, false for the server side
}

// newRelay listens on a free loopback port and relays to upstream.
func newRelay(upstream string, wait time.Duration) (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("relay: listen: %w", err)
	}
	r := &relay{
		ln:       ln,
		upstream: upstream,
		wait:     wait,
		closing:  make(chan struct{}),
		conns:    map[net.Conn]bool{},
	}
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

// addr is the host:port tests connect to.
func (r *relay) addr() string { return r.ln.Addr().String() }

// close stops accepting and ends every relayed connection the way a
// departing client would, so that each server session is reset and closed
// cleanly: a connection PGlite sees fail (a reset, a broken pipe) keeps its
// only slot taken for good. Connections still open after a while are cut.
func (r *relay) close() {
	select {
	case <-r.closing:
		return
	default:
	}
	close(r.closing)
	r.ln.Close()
	r.mu.Lock()
	for c, client := range r.conns {
		if client {
			c.Close()
		}
	}
	r.mu.Unlock()
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return
	case <-time.After(time.Minute):
	}
	r.mu.Lock()
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	<-done
}

// track records an open connection (client or upstream) unless the relay
// is closing.
func (r *relay) track(c net.Conn, client bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.closing:
		return false
	default:
	}
	r.conns[c] = client
	return true
}

func (r *relay) untrack(c net.Conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
	c.Close()
}

func (r *relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		if !r.track(c, true) {
			c.Close()
			return
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer r.untrack(c)
			r.serve(c)
		}()
	}
}

func (r *relay) serve(cl net.Conn) {
	clr := bufio.NewReader(cl)
	startup, err := r.readStartup(cl, clr)
	if err != nil {
		return // a cancel request (PGlite cannot cancel) or a broken client
	}
	up, upr, first, err := r.dialUpstream(startup)
	if err != nil {
		cl.Write(errorMessage("FATAL", "53300", err.Error()))
		return
	}
	defer r.untrack(up)

	clw := bufio.NewWriter(cl)
	clw.Write(first)
	clw.Flush()

	// Server to client, until the client leaves; then watch for the end of
	// the reset.
	token := make([]byte, 8)
	rand.Read(token)
	marker := []byte("pgtest-reset-" + hex.EncodeToString(token))
	var detached, ready atomic.Bool // client gone; startup finished
	resetDone := make(chan struct{})
	go func() {
		defer close(resetDone)
		seen := false
		for {
			typ, body, err := readMessage(upr)
			if err != nil {
				if !detached.Load() {
					cl.Close() // the server went away: so does the client
				}
				return
			}
			if !detached.Load() {
				if typ == 'Z' {
					ready.Store(true)
				}
				clw.Write(appendMessage(nil, typ, body))
				if upr.Buffered() == 0 {
					clw.Flush()
				}
				continue
			}
			switch {
			case typ == 'D' && bytes.Contains(body, marker):
				seen = true
			case typ == 'Z' && seen:
				return
			}
		}
	}()

	// Client to server, message by message, so that the reset below starts
	// on a message boundary; the client's Terminate is not passed on.
	upw := bufio.NewWriter(up)
	for {
		typ, body, err := readMessage(clr)
		if err != nil || typ == 'X' {
			break
		}
		upw.Write(appendMessage(nil, typ, body))
		if clr.Buffered() == 0 {
			if upw.Flush() != nil {
				return
			}
		}
	}
	detached.Store(true)
	if !ready.Load() {
		return // the client left during startup: there is no session to reset
	}

	// CopyFail ends a COPY the client left open (the server ignores it
	// otherwise) and Sync ends an unfinished extended-protocol exchange.
	reset := appendMessage(nil, 'f', query("pgtest: client went away"))
	reset = appendMessage(reset, 'S', nil)
	for _, sql := range resetSQL {
		reset = appendMessage(reset, 'Q', query(sql))
	}
	reset = appendMessage(reset, 'Q', query("SELECT '"+string(marker)+"'"))
	upw.Write(reset)
	if upw.Flush() != nil {
		return
	}
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case <-resetDone:
	case <-timer.C:
	}
}

// readStartup reads the client's first messages, declining SSL and GSS
// encryption, and returns its startup message.
func (r *relay) readStartup(cl net.Conn, clr *bufio.Reader) ([]byte, error) {
	cl.SetReadDeadline(time.Now().Add(time.Minute))
	defer cl.SetReadDeadline(time.Time{})
	for {
		code, msg, err := readUntagged(clr)
		if err != nil {
			return nil, err
		}
		switch code {
		case codeSSLRequest, codeGSSENC:
			if _, err := cl.Write([]byte{'N'}); err != nil {
				return nil, err
			}
		case codeCancel:
			return nil, errors.New("cancel request")
		default:
			return msg, nil
		}
	}
}

// dialUpstream connects to the server and sends the startup message,
// retrying while the server refuses the connection (its slot is taken),
// and returns the server's first answer. A server that is not listening at
// all is an error at once.
func (r *relay) dialUpstream(startup []byte) (net.Conn, *bufio.Reader, []byte, error) {
	deadline := time.Now().Add(r.wait)
	backoff := time.Millisecond
	var lastErr error
	for {
		up, err := net.DialTimeout("tcp", r.upstream, 10*time.Second)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("pgtest relay: nothing listens at %s: %v", r.upstream, err)
		}
		if !r.track(up, false) {
			up.Close()
			return nil, nil, nil, errors.New("pgtest relay: shutting down")
		}
		upr := bufio.NewReader(up)
		up.SetReadDeadline(time.Now().Add(time.Minute))
		typ, body, err := func() (byte, []byte, error) {
			if _, err := up.Write(startup); err != nil {
				return 0, nil, err
			}
			return readMessage(upr)
		}()
		if err == nil && (typ == 'R' || typ == 'E') {
			up.SetReadDeadline(time.Time{})
			return up, upr, appendMessage(nil, typ, body), nil
		}
		r.untrack(up)
		if err == nil {
			err = fmt.Errorf("unexpected first message %q", typ)
		}
		lastErr = err
		if time.Now().Add(backoff).After(deadline) {
			return nil, nil, nil, fmt.Errorf("pgtest relay: the server at %s refused connections for %v (last: %v); "+
				"PGlite serves one connection at a time: a test or another test binary held it that long, "+
				"or a pool was left open or given more than one connection", r.upstream, r.wait, lastErr)
		}
		select {
		case <-time.After(backoff):
		case <-r.closing:
			return nil, nil, nil, errors.New("pgtest relay: shutting down")
		}
		backoff = min(2*backoff, 50*time.Millisecond)
	}
}
