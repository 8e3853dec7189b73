// Package lifecycle runs agents: it starts each in its own container with
// the §15.3 profile after taking its leases all-or-nothing, opens its session
// (a 256-bit lease token admitted by the agent protocol server), answers the
// agent's verbs, notices crashes (a container that exits, or heartbeats that
// stop for crash_detection_threshold_ms), and ends sessions on stop, crash
// or terminate, releasing everything on every path.
package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"choir/choird/lease"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/docker"
	"choir/internal/rpc"
)

// Docker is what the lifecycle needs from the engine.
type Docker interface {
	ContainerCreate(ctx context.Context, name string, cfg *docker.ContainerConfig, hc *docker.HostConfig) (docker.CreateResponse, error)
	ContainerStart(ctx context.Context, id string) error
	ContainerStop(ctx context.Context, id string, timeout time.Duration) error
	ContainerRemove(ctx context.Context, id string, opts docker.ContainerRemoveOptions) error
	ContainerWait(ctx context.Context, id string, cond docker.WaitCondition) (docker.WaitResponse, error)
	ContainerInspect(ctx context.Context, id string) (docker.Container, error)
	ContainerList(ctx context.Context, opts docker.ContainerListOptions) ([]docker.ContainerSummary, error)
	ContainerLogs(ctx context.Context, id string, opts docker.LogsOptions) (*docker.LogStream, error)
	ImageInspect(ctx context.Context, ref string) (docker.Image, error)
}

// Session statuses, as Postgres records them.
const (
	StatusActive  = "active"
	StatusStopped = "stopped"
	StatusCrashed = "crashed"
)

// SessionRecord is a session as the store keeps it.
type SessionRecord struct {
	SessionID string
	AgentID   string
	LeaseID   string
	Status    string
	StartedAt time.Time
	Bindings  rpc.ResourceBindings
	Leases    []lease.Resource
	Image     string
	// Resume reopens the ended session SessionID instead of recording a
	// new one (§13.2).
	Resume bool
	// Instance is the choird instance that runs it (Manager.Instance;
	// "" for sessions recorded before replicas).
	Instance string
	// Kind is SessionRun for a run session (run_session.go), "" for an
	// interactive one; RunID names the run it performs.
	Kind, RunID string
}

// Store is what the lifecycle needs from Postgres.
type Store interface {
	CreateSession(ctx context.Context, s SessionRecord) error
	// EndSession records why the session ended (a start reads it back).
	EndSession(ctx context.Context, sessionID, status, reason string) error
	// LastEnded returns the agent's last session if it has ended, else
	// an error matching ErrNoSession.
	LastEnded(ctx context.Context, agentID string) (EndedSession, error)
	// Recovery returns the head of a session's stored log and its newest
	// snapshot (§13.2).
	Recovery(ctx context.Context, sessionID string) (rpc.Recovery, error)
	// EventsPage returns at most max stored events after rev and the hash
	// of rev; a rev the log does not hold matches ErrNoSession.
	EventsPage(ctx context.Context, sessionID string, rev int64, max int) (rpc.FetchEventsResp, error)
	ActiveSessions(ctx context.Context) ([]SessionRecord, error)
	// RecordLiveness records the last heartbeat of many sessions in one
	// statement and returns those it found no active session for
	// (liveness.go).
	RecordLiveness(ctx context.Context, beats []Liveness) (missing []string, err error)
	// Replicate stores a heartbeat's events and snapshot if the events
	// follow the session's stored log, else refuses with a
	// *ReplicationRefused and stores nothing (see Replication).
	Replicate(ctx context.Context, sessionID string, r Replication) (Replicated, error)
}

// Sessions is the agent protocol server's session table.
type Sessions interface {
	Open(sessionID, agentID, token string)
	Close(sessionID string)
	Publish(sessionID, typ string, data any) (string, bool)
}

// AgentSockets opens the control socket of one agent: a Unix socket at path
// that admits only that agent's sessions. Close removes it.
type AgentSockets interface {
	ListenAgent(path, agentID string) (io.Closer, error)
}

// Logs gives each agent its log and archives it at session end.
type Logs interface {
	Agent(id string) (*slog.Logger, error)
	AgentWriter(id string) (io.Writer, error)
	ArchiveAgent(id string) error
}

// Config returns the running configuration and its version.
type Config func() (*config.Loaded, int64)

// Run states.
const (
	StateStarting = "starting" // container started, waiting for INIT_HELLO
	StateRunning  = "running"
	StateStopping = "stopping"
)

// Run is one running agent session.
type Run struct {
	AgentID, SessionID, ContainerID, Image, ImageVersion string
	Bindings                                             rpc.ResourceBindings
	Resources                                            []lease.Resource
	StartedAt                                            time.Time
	// ModelProxy: the session's model calls go through choird
	// (choird/modelproxy.go) and GET_SECRETS grants no model key; set at
	// start, from agents.<id>.model_proxy or for a run without network.
	ModelProxy bool
	// Offline: the container has no network route (NetworkMode none: a
	// run without network, or agents.<id>.network.mode "policy"); its
	// agent's own clients reach their services through choird's tunnel,
	// and its network attempts are counted (netattempts.go).
	Offline bool

	token    string
	socket   io.Closer            // the agent's own control socket
	started  rpc.ResourceBindings // as resolved at start; Bindings may change (model set)
	resume   *resumeInfo          // set when this run resumes an ended session
	perf     *performing          // set for a run session (run_session.go)
	ready    chan struct{}        // closed at INIT_HELLO
	exited   chan struct{}        // closed when the container has exited
	exitCode int64

	mu            sync.Mutex
	state         string
	lastHeartbeat time.Time
	// beating counts the session's heartbeats choird is still serving
	// (storing their events): the agent reached choird and waits on it, so
	// the crash monitor does not count that wait against it.
	beating       int
	configVersion int64
	lanes         map[string]rpc.StatusReq
	terminating   string // TERMINATE_SELF's reason
	refused       string // why INIT_HELLO was refused (checkImage)
	approvals     int    // REQUEST_APPROVALs so far (at most MaxApprovalsPerSession)
	repl          replication
	held          held      // what the store holds of the session's log (liveness.go)
	beatRecorded  time.Time // the newest heartbeat the store holds
	beaten        bool      // a heartbeat came: the opening calls no longer count (liveness.go)

	// Faults seen while the session runs, shown by `agent status`.
	hbRefused      int       // heartbeats refused or failed in a row
	hbRefusedSince time.Time // the first of them
	hbRefusedWhy   string    // the last one's error
	engineLost     time.Time // when the wait on the container lost the engine; zero when it answers
	engineWhy      string

	net netWatch // the container's network-attempt counters (netattempts.go)
}

// Manager starts, watches and stops agents.
type Manager struct {
	// Docker is choird's engine: the images it built, and the agent boxes
	// when Runtime is nil.
	Docker Docker
	// Runtime runs the agent boxes (runtime.go); nil means Local on Docker.
	Runtime  Runtime
	Store    Store
	Sessions Sessions
	Leases   *lease.Table
	Logs     Logs
	Outbox   Outbox
	Config   Config
	// RequestApproval stores an agent's proposal for a human decision and
	// returns its id and status (the approval service).
	RequestApproval func(ctx context.Context, agentID, sessionID, requestType string, payload json.RawMessage) (id, status string, err error)
	// HostTools runs the host tools other rooms provide (choir.memory.query,
	// choir.memory.upsert), by name, for the calling agent and session. A
	// handler's output is its tool result; an error becomes a tool error
	// whose code is the error's ToolCode() when it has one.
	HostTools map[string]func(ctx context.Context, agentID, sessionID string, input json.RawMessage) (json.RawMessage, error)
	Home      config.Home
	Log       *slog.Logger
	// Sockets opens each agent's own control socket (the protocol server).
	Sockets AgentSockets
	// HTTP, when set, is the HTTP transport (§12.1): agents reach choird's
	// shared HTTPS endpoint instead of a socket of their own.
	HTTP *HTTPEndpoint
	// Instance labels this choird's containers (see LabelInstance).
	Instance string
	// Replicated says another choird shares the database (choird
	// --replica, issue 26): the sessions it records under its own instance
	// are its, and this one's start leaves them alone. A single choird
	// sweeps every active session, whatever instance recorded it (its home
	// may have moved, which changes its instance).
	Replicated bool
	// ReadyTimeout bounds how long a start waits for INIT_HELLO.
	ReadyTimeout time.Duration
	// Now is the clock (tests may replace it).
	Now func() time.Time
	// Health lists what is wrong for every agent (Postgres or the engine
	// unreachable: the control plane's probes); nil means nothing.
	Health func() []string
	// EngineRetry is the first wait before the lifecycle asks an engine it
	// lost again (doubling up to MaxEngineRetry); zero means
	// DefaultEngineRetry.
	EngineRetry time.Duration
	// AfterFunc schedules the restart policy's restarts (see restart.go);
	// nil means time.AfterFunc. f must run on a goroutine of its own.
	AfterFunc func(d time.Duration, f func()) Timer
	// SessionOpened is told each time a session's agent first says hello
	// (the session runs): the browser worker makes the agent's context
	// (choird/browser). It must not block. Nil means nobody.
	SessionOpened func(agentID, sessionID string)
	// SessionClosed is told, on a goroutine of its own, each time a
	// session ends (stopped or crashed), once its end is recorded: the
	// memory pipeline chunks it (choird/memory). Nil means nobody.
	SessionClosed func(agentID, sessionID, status string)
	// LivenessEvery is how often the heartbeats of idle sessions are
	// recorded in the store (liveness.go); zero means DefaultLivenessEvery.
	LivenessEvery time.Duration
	// EventsStored is told the events of each stored heartbeat; those up
	// to rev after were stored before (choird's metrics). Nil means nobody.
	EventsStored func(agentID string, after int64, events []rpc.Event)
	// NetworkAttempts is told, on a goroutine of its own, each time the
	// network attempts counted in an interactive offline session's
	// container rise (netattempts.go): total so far, added since the last
	// time. choird tells the admin DMs. Nil means nobody.
	NetworkAttempts func(agentID, sessionID string, total, added int64)
	// Images is the build's record of the images it made; INIT_HELLO is
	// checked against it (checkImage). Nil compares the version only.
	Images ImageRecords

	imageRefused map[string]string // agent → why its last INIT_HELLO was refused

	restarts  restarter
	mu        sync.Mutex
	runs      map[string]*Run // by agent id
	sessions  map[string]*Run // by session id
	ending    map[string]int  // agents whose session end is still finishing (see end)
	agentMu   map[string]*sync.Mutex
	leftovers map[string]string // containers whose removal failed: id → agent
	stale     []SessionRecord   // sessions CrashStaleSessions ended, for AfterStart
	boxOps    chan struct{}     // places for boxes being stopped and removed (endBox)
	boxOpsOne sync.Once

	livenessFailing bool // the last RecordLiveness failed (liveness.go); under mu
}

func (m *Manager) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// ErrNotRunning says an agent has no session.
var ErrNotRunning = errors.New("agent is not running")

// agentLock serialises start/stop of one agent.
func (m *Manager) agentLock(id string) *sync.Mutex {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.agentMu == nil {
		m.agentMu = map[string]*sync.Mutex{}
	}
	l := m.agentMu[id]
	if l == nil {
		l = &sync.Mutex{}
		m.agentMu[id] = l
	}
	return l
}

func (m *Manager) run(agentID string) *Run {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.runs[agentID]
}

func (m *Manager) bySession(sessionID string) *Run {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sessions[sessionID]
}

// Status reports one agent.
func (m *Manager) Status(agentID string) (ctl.AgentStatus, error) {
	l, _ := m.Config()
	if _, ok := l.Config.Agents[agentID]; !ok {
		return ctl.AgentStatus{}, fmt.Errorf("no agent named %q in config.json (have: %s)", agentID, strings.Join(config.SortedNames(l.Config.Agents), ", "))
	}
	r := m.run(agentID)
	if r == nil {
		state := "stopped"
		if m.isEnding(agentID) {
			state = StateStopping // its leases are not free yet: a start would be refused
		}
		return ctl.AgentStatus{AgentID: agentID, State: state, Restart: m.restartStatus(agentID, nil), Degraded: append(m.lastImageRefusal(agentID), m.health()...)}, nil
	}
	b := r.bindings()
	restart := m.restartStatus(agentID, r)
	r.mu.Lock()
	defer r.mu.Unlock()
	lanes := map[string]rpc.StatusReq{}
	for k, v := range r.lanes {
		lanes[k] = v
	}
	return ctl.AgentStatus{
		AgentID: agentID, State: r.state, SessionID: r.SessionID, Container: shortID(r.ContainerID), Image: r.Image,
		StartedAt: r.StartedAt, Uptime: m.now().Sub(r.StartedAt).Round(time.Second).String(),
		LastHeartbeat: r.lastHeartbeat, ConfigVersion: r.configVersion, Bindings: &b, Lanes: lanes, Replication: r.replicationStatus(), Resumed: r.resumed(),
		Overrides: overrides(l.Config.Agents[agentID].Defaults, r.started, r.Bindings),
		Restart:   restart,
		Degraded:  append(r.faults(m.now()), m.health()...),
	}, nil
}

// health is what is wrong for every agent now.
func (m *Manager) health() []string {
	if m.Health == nil {
		return nil
	}
	return m.Health()
}

// faults describes what is wrong with the run now, with r.mu held.
func (r *Run) faults(now time.Time) []string {
	var out []string
	if r.hbRefused > 0 {
		out = append(out, fmt.Sprintf("heartbeats refused: %d in a row since %s ago, the last: %s; committed events are not being stored (see choird.log)",
			r.hbRefused, now.Sub(r.hbRefusedSince).Round(time.Second), r.hbRefusedWhy))
	}
	if !r.engineLost.IsZero() {
		out = append(out, fmt.Sprintf("the Docker engine stopped answering %s ago while choird watched the container (%s); the session goes on, and choird checks the container again when the engine is back",
			now.Sub(r.engineLost).Round(time.Second), r.engineWhy))
	}
	return out
}

// List reports every configured agent, sorted by id.
func (m *Manager) List() []ctl.AgentStatus {
	l, _ := m.Config()
	ids := config.SortedNames(l.Config.Agents)
	sort.Strings(ids)
	out := make([]ctl.AgentStatus, 0, len(ids))
	for _, id := range ids {
		st, _ := m.Status(id)
		out = append(out, st)
	}
	return out
}

// Running counts running sessions.
func (m *Manager) Running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.runs)
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// Broadcast pushes an event to every running session.
func (m *Manager) Broadcast(typ string, data any) int {
	m.mu.Lock()
	ids := make([]string, 0, len(m.sessions))
	for id := range m.sessions {
		ids = append(ids, id)
	}
	m.mu.Unlock()
	n := 0
	for _, id := range ids {
		if _, ok := m.Sessions.Publish(id, typ, data); ok {
			n++
		}
	}
	return n
}

// bindings returns the session's bindings; model set may change them.
func (r *Run) bindings() rpc.ResourceBindings {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Bindings
}
