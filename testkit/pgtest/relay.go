package pgtest

// The relay sits between the tests and the server. PGlite's socket server
// (pglite-socket 0.0.22, run as npm ships it with -m 1) serves one
// connection at a time and has habits a real Postgres has not:
//
//   - it refuses a second connection outright ("Too many connections", or a
//     reset) instead of queueing it, and it notices a closed connection a few
//     milliseconds late, so even strictly sequential clients are refused;
//   - a connection that ends with a reset instead of a clean close (as the
//     kernel ends one whose process died with unread data) keeps its only
//     slot taken until the server restarts;
//   - a connection that arrives just after another closed, before the
//     server has freed that one's slot, is refused by pglite-socket rather
//     than by Node; pglite-socket never reads what it sent, so Node counts
//     it open for good and, with -m 1, drops every later connection;
//   - it never answers an SSLRequest, so sslmode=prefer hangs.
//
// The relay accepts any number of connections; for each it answers SSL and
// GSS requests with "no", then waits for its turn: one connection at a time
// among all relays on this machine (a flock, see turn), kept until a moment
// after the connection closed. Then it dials the server and sends the
// startup message, retrying while the server refuses (a client that is not
// a relay has it), until the server's one slot is free or the wait runs out
// (the client then gets an ErrorResponse saying why). From there it copies bytes both ways, untouched. When the
// client goes away, however it goes (a Terminate, a close, a reset, a
// SIGKILL), the relay half-closes its side towards the server and reads
// until the server closes too, so the server always sees a clean close and
// frees its slot.
//
// What the relay does not do is reset the server's session: every
// connection to PGlite shares its one backend session, so prepared
// statements, session settings and SET ROLE of one connection are there
// for the next, as for anyone using that server (the server itself only
// rolls back a transaction its client left open). Tests therefore meet
// what users meet, and the store is written to work on it. A real Postgres
// behind the relay gives each connection a fresh backend, as always.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// settle is how long the server is given to free its slot after a
// connection closed before the next one may connect (see serve).
const settle = 20 * time.Millisecond

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
// departing client would, so that the server sees each one close cleanly: a
// connection PGlite sees fail (a reset, a broken pipe) keeps its only slot
// taken for good. Connections still open after a while are cut.
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
	up, upr, first, tn, err := r.dialUpstream(startup)
	if err != nil {
		cl.Write(errorMessage("FATAL", "53300", err.Error()))
		return
	}
	defer func() {
		r.untrack(up)
		// pglite-socket frees the slot a moment after the socket closes
		// (on its next event-loop turn); a connection that comes before is
		// refused by pglite-socket itself, which never reads what that
		// connection sent, so Node counts it open forever and, with -m 1,
		// refuses everything after. The turn is kept until the slot is free.
		time.Sleep(settle)
		tn.done()
	}()

	// Server to client until the server closes. Once the client is gone
	// the rest is read and dropped: leaving it unread would turn the close
	// below into a reset.
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		_, werr := cl.Write(first)
		buf := make([]byte, 32<<10)
		for {
			n, err := upr.Read(buf)
			if n > 0 && werr == nil {
				_, werr = cl.Write(buf[:n])
			}
			if err != nil {
				cl.Close() // the server went away: so does the client
				return
			}
		}
	}()

	// Client to server until the client goes, then a clean end towards the
	// server: half-close, and wait (bounded) until it closes its side.
	copyTo(up, clr)
	if tc, ok := up.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case <-drained:
	case <-timer.C:
	}
}

// copyTo copies src to dst until either fails.
func copyTo(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
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
func (r *relay) dialUpstream(startup []byte) (net.Conn, *bufio.Reader, []byte, *turn, error) {
	deadline := time.Now().Add(r.wait)
	refused := func(why any) error {
		return fmt.Errorf("pgtest relay: the server at %s refused connections for %v (last: %v); "+
			"PGlite serves one connection at a time: a test or another test binary held it that long, "+
			"or a pool was left open or given more than one connection", r.upstream, r.wait, why)
	}
	tn, err := takeTurn(r.turnPath(), deadline, r.closing)
	switch {
	case errors.Is(err, errTurnTimeout):
		return nil, nil, nil, nil, refused("another connection of these tests had it")
	case err != nil:
		return nil, nil, nil, nil, fmt.Errorf("pgtest relay: %v", err)
	}
	backoff := time.Millisecond
	var lastErr error
	for {
		up, err := net.DialTimeout("tcp", r.upstream, 10*time.Second)
		if err != nil {
			tn.done()
			return nil, nil, nil, nil, fmt.Errorf("pgtest relay: nothing listens at %s: %v", r.upstream, err)
		}
		if !r.track(up, false) {
			up.Close()
			tn.done()
			return nil, nil, nil, nil, errShuttingDown
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
			return up, upr, appendMessage(nil, typ, body), tn, nil
		}
		r.untrack(up)
		if err == nil {
			err = fmt.Errorf("unexpected first message %q", typ)
		}
		lastErr = err
		if time.Now().Add(backoff).After(deadline) {
			tn.done()
			return nil, nil, nil, nil, refused(lastErr)
		}
		select {
		case <-time.After(backoff):
		case <-r.closing:
			tn.done()
			return nil, nil, nil, nil, errShuttingDown
		}
		backoff = min(2*backoff, 50*time.Millisecond)
	}
}

// turnPath is the lock file of the server's turn (see turn).
func (r *relay) turnPath() string {
	return filepath.Join(os.TempDir(), "pgtest-turn-"+strings.NewReplacer(":", "_", "/", "_", "[", "", "]", "").Replace(r.upstream)+".lock")
}

// Errors of the turn.
var (
	errTurnTimeout  = errors.New("waited too long for the turn")
	errShuttingDown = errors.New("pgtest relay: shutting down")
)
