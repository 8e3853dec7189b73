package rpc

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Limits bound what one session, one listener and the whole server hold.
// Each is sized for one agent's real use: one event stream (plus one
// reconnect overlapping it), a heartbeat every few seconds, status reports,
// and a handful of host tool calls at once.
type Limits struct {
	// MaxPayload is the largest request body accepted (413 beyond).
	MaxPayload int64
	// Rate and Burst define each session's token bucket (429 beyond).
	Rate  float64 // requests per second
	Burst int
	// EventBacklog is how many recent push events a session keeps for
	// resumption with Last-Event-ID.
	EventBacklog int
	// Keepalive is the idle interval between SSE comment lines.
	Keepalive time.Duration

	// MaxConnsPerAgent caps the connections of one agent listener
	// (ListenAgent), and of one session on a shared listener once its
	// first authenticated request names it (429, connection closed).
	MaxConnsPerAgent int
	// MaxConnsShared caps the connections of one shared listener (Serve:
	// the TCP/HTTPS transport), authenticated or not.
	MaxConnsShared int
	// MaxConnsTotal caps the connections of all of a Server's listeners
	// together. A connection over any cap is closed as soon as it is
	// accepted: it costs a file descriptor for an instant and no goroutine.
	MaxConnsTotal int
	// MaxStreamsPerSession caps a session's open GET /events streams (429).
	MaxStreamsPerSession int
	// ReadHeaderTimeout bounds reading a request's headers (and the TLS
	// handshake); IdleTimeout closes a kept-alive connection with no
	// request. A connection that sends nothing is closed after
	// ReadHeaderTimeout.
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	// BodyTimeout bounds reading one request body (408 beyond).
	BodyTimeout time.Duration
	// StreamWriteTimeout bounds each write to an event stream: a reader
	// that stops reading loses its stream, not a goroutine forever.
	StreamWriteTimeout time.Duration
	// MaxHeaderBytes caps a request's header block (431 beyond).
	MaxHeaderBytes int
}

// DefaultLimits suit one agent: heartbeats every few seconds, bursts of tool
// calls, event batches of a few MiB at most. MaxConnsTotal is 4096, or half
// of the process's file descriptor limit when that is lower, so that
// Postgres, Docker, logs and the admin socket always keep descriptors.
func DefaultLimits() Limits {
	return Limits{
		MaxPayload: 4 << 20, Rate: 50, Burst: 200, EventBacklog: 256, Keepalive: 15 * time.Second,
		MaxConnsPerAgent: 64, MaxConnsShared: 1024, MaxConnsTotal: totalConnCap(4096),
		MaxStreamsPerSession: 4,
		ReadHeaderTimeout:    10 * time.Second, IdleTimeout: 2 * time.Minute,
		BodyTimeout: time.Minute, StreamWriteTimeout: 30 * time.Second,
		MaxHeaderBytes: 16 << 10,
	}
}

// ConnsPerAgent is what ForAgents budgets for each configured agent on a
// shared listener: its event stream and a reconnect overlapping it, its
// kept-alive heartbeat connection and one call beside it (an agent holds
// two when idle).
const ConnsPerAgent = 4

// connHeadroom is what ForAgents adds to the agents' budget: starts,
// restarts and clients that come and go.
const connHeadroom = 1024

// filesPerAgent is what choird holds for each agent besides its
// connections (the engine's wait and log stream, the agent's log file),
// and filesReserved what it holds whatever the agents (Postgres, the
// engine, logs, the admin socket): the descriptors ForAgents leaves them.
const (
	filesPerAgent = 3
	filesReserved = 512
)

// ForAgents sizes the shared listener's and the server's connection caps
// for n configured agents: ConnsPerAgent each plus connHeadroom, never
// below l's own, and the total never more than the process's file
// descriptor limit (RLIMIT_NOFILE's soft value) leaves once filesPerAgent
// for each agent and filesReserved are set aside (or half of it, if that
// is more). The per-agent and per-session caps stay as they are: one
// agent still cannot hold more than MaxConnsPerAgent of them.
func (l Limits) ForAgents(n int) Limits {
	need := n*ConnsPerAgent + connHeadroom
	total := max(l.MaxConnsTotal, need)
	if soft := fileLimit(); soft > 0 {
		left := max(soft-n*filesPerAgent-filesReserved, soft/2, 64)
		total = min(total, max(left, l.MaxConnsTotal))
	}
	l.MaxConnsTotal = total
	l.MaxConnsShared = min(max(l.MaxConnsShared, need), total)
	return l
}

// fileLimit is the soft RLIMIT_NOFILE, or 0 when it cannot be read.
func fileLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<30 {
		return 0
	}
	return int(rl.Cur)
}

// AdminLimits are the admin socket's (ctl.sock): the same header timeout,
// idle timeout and header cap, and its own budget of MaxConnsShared
// connections that no agent listener draws on. Its follow, log and chat
// streams are long-lived, so it has no write timeout.
func AdminLimits() Limits {
	l := DefaultLimits()
	l.MaxConnsShared = 256
	l.MaxConnsTotal = 256
	return l
}

// totalConnCap is want, or half the soft RLIMIT_NOFILE when lower (and at
// least 64).
func totalConnCap(want int) int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return want
	}
	half := rl.Cur / 2
	if half < uint64(want) {
		return max(int(half), 64)
	}
	return want
}

// Apply sets hs's header timeout, idle timeout and header cap from l and
// returns ln wrapped so that hs never holds more than max connections: one
// beyond is closed as soon as it is accepted. It is for servers other than
// Server (the admin socket); hs.ConnState must not be replaced afterwards.
func (l Limits) Apply(hs *http.Server, ln net.Listener, max int) net.Listener {
	l.configure(hs)
	return guard(hs, ln, &counter{max: max})
}

// configure sets the http.Server-level limits.
func (l Limits) configure(hs *http.Server) {
	hs.ReadHeaderTimeout = l.ReadHeaderTimeout
	hs.IdleTimeout = l.IdleTimeout
	hs.MaxHeaderBytes = l.MaxHeaderBytes
}

// counter counts connections against a cap.
type counter struct {
	mu  sync.Mutex
	n   int
	max int
}

func (c *counter) acquire() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n >= c.max {
		return false
	}
	c.n++
	return true
}

func (c *counter) release() {
	c.mu.Lock()
	c.n--
	c.mu.Unlock()
}

func (c *counter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// limitListener admits a connection only when every counter has room; any
// other is closed at once, inside Accept, so it never reaches the server.
// Admitted connections give their places back when the server reports them
// closed (guard installs that ConnState hook).
type limitListener struct {
	net.Listener
	counters []*counter
	refused  atomic.Int64
	lastLog  atomic.Int64 // unix nanoseconds of the last onRefuse report
	// onRefuse, when set, is told of refusals at most once per
	// refuseLogInterval, with the count so far.
	onRefuse func(refused int64, report bool)
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.acquire() {
			return c, nil
		}
		n := l.refused.Add(1)
		c.Close()
		if l.onRefuse != nil {
			now, last := time.Now().UnixNano(), l.lastLog.Load()
			if now-last >= int64(refuseLogInterval) && l.lastLog.CompareAndSwap(last, now) {
				l.onRefuse(n, true)
			}
		}
	}
}

func (l *limitListener) acquire() bool {
	for i, c := range l.counters {
		if !c.acquire() {
			for _, got := range l.counters[:i] {
				got.release()
			}
			return false
		}
	}
	return true
}

func (l *limitListener) release() {
	for _, c := range l.counters {
		c.release()
	}
}

// guard wraps ln with the counters and hooks hs so that a connection's
// places are released when it closes (or is hijacked); next, when set, is
// called after.
func guard(hs *http.Server, ln net.Listener, counters ...*counter) *limitListener {
	ll := &limitListener{Listener: ln, counters: counters}
	next := hs.ConnState
	hs.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateClosed || st == http.StateHijacked {
			ll.release()
		}
		if next != nil {
			next(c, st)
		}
	}
	return ll
}
