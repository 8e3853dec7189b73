// Package session is choir-agent's side of its session with choird: the
// opening handshake (INIT_HELLO, then GET_SECRETS for the bound resources),
// the heartbeat loop that replicates committed events and notices config
// changes, the push channel (shutdown, config and secret changes, and the
// messages later lanes consume), and the closing TERMINATE_SELF.
//
// The transport is chosen once, by whoever builds the rpc.ControlPlane;
// nothing here knows which one it is.
//
// No secret value leaves through the session in text: it holds a
// redact.Redactor fed by every GET_SECRETS answer, wraps its control plane
// with Redacted and its logger with the Redactor.
package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"choir/agent/redact"
	"choir/internal/rpc"
)

// Identity is what the container is told at start (non-secret, from env).
type Identity struct {
	AgentID   string
	SessionID string
}

// Secrets holds secret values in memory only; a refresh swaps the whole map.
type Secrets struct {
	m atomic.Pointer[map[string]string]
}

// Get returns one secret.
func (s *Secrets) Get(name string) (string, bool) {
	m := s.m.Load()
	if m == nil {
		return "", false
	}
	v, ok := (*m)[name]
	return v, ok
}

func (s *Secrets) swap(m map[string]string) { s.m.Store(&m) }

// String never shows values.
func (s *Secrets) String() string { return "secrets(in memory)" }

// Session is one run of the agent against choird.
type Session struct {
	cp       rpc.ControlPlane
	id       Identity
	version  rpc.ImageInfo
	log      *slog.Logger
	interval time.Duration

	Secrets  Secrets
	Bindings rpc.ResourceBindings
	// ModelProxy: choird carries the model calls (INIT_HELLO said so) and
	// grants no model key (agent/assembly/modelproxy.go).
	ModelProxy bool
	// Tunnel: the container has no network route; the agent's own
	// clients connect through choird (INIT_HELLO said so, agent/egress).
	Tunnel bool
	// NetFetch: the agent is in network policy mode (INIT_HELLO said so):
	// it offers choir.net.fetch (agent/assembly/run.go).
	NetFetch bool
	// RunBrief is the run brief when choird opened a headless run session.
	RunBrief *rpc.RunBrief
	Hooks    Hooks
	// Redactor holds every secret value the session has received; it is
	// set before the secrets themselves at each fetch, so no value is ever
	// usable before it is redacted. Everything the session sends choird
	// and logs passes it, and the runtime redacts with it too.
	Redactor *redact.Redactor

	// BacklogLimit is how many committed events choird may lack before
	// the user is told (Hooks.Notify); New sets DefaultBacklogLimit.
	BacklogLimit int64

	mu            sync.Mutex
	reported      map[string]rpc.StatusReq
	configVersion int64
	config        json.RawMessage
	repl          replState
	recovered     *Recovered
	// end stops Run from inside the agent (End); endReason keeps a
	// request made before Run could take it.
	end       func(reason string)
	endReason string
}

// Hooks connect the session to the rest of the runtime; nil ones are
// skipped.
type Hooks struct {
	// Opened runs once the session is open (bindings, secrets and config in
	// hand) and before the first heartbeat: the runtime builds its lanes
	// here. An error ends the session.
	Opened func(ctx context.Context) error
	// Push receives the push events the session does not handle itself:
	// user_message, inject, cancel, approval.
	Push func(ev rpc.PushEvent)
	// Events returns at most max committed events after rev, in order;
	// Head the newest committed revision; HashAt the chain hash at rev (""
	// at 0): what heartbeats replicate. The log they read keeps every
	// event, so the unacknowledged ones are always there to resend.
	Events func(afterRev int64, max int) []rpc.Event
	Head   func() int64
	HashAt func(rev int64) string
	// Stopping runs at a graceful stop, before the final heartbeat: the
	// lanes reach their safe point.
	Stopping func(ctx context.Context)
	// Summary makes the session summary (§11.8) after Stopping, at a stop
	// asked of the session (see summarize); the final heartbeat carries
	// it. It bounds itself (session_summary_timeout_ms) and returns nil,
	// having logged why, when there is none.
	Summary func(ctx context.Context) json.RawMessage
	// Status reports the lanes; changes are sent with REPORT_STATUS after
	// each heartbeat.
	Status func() []rpc.StatusReq
	// Snapshot takes the working-memory snapshot (§13.4, an rpc.Snapshot
	// as JSON) and the revision it describes; ok is false when none could
	// be taken. SnapshotCadence says how often: every revs revisions, or
	// after every when anything was committed since (nil: the config
	// defaults). See snapshotDue.
	Snapshot        func() (rev int64, doc json.RawMessage, ok bool)
	SnapshotCadence func() (revs int64, every time.Duration)
	// Notify tells the user something through the DM (the runtime's
	// notice path): here, that choird is behind.
	Notify func(text string)
	// TailFrom says, for a resumed session with a snapshot (§13.4, at
	// revision rev), after which revision the lanes need the stored
	// events to rehydrate (their oldest window and open job); nil, or
	// no snapshot, reads the whole log.
	TailFrom func(snapshot json.RawMessage, rev int64) int64
}

// New prepares a session; Run starts it. What it sends through cp and
// writes to log is redacted (see Redacted and redact.Redactor.Logger).
func New(cp rpc.ControlPlane, id Identity, v rpc.ImageInfo, heartbeat time.Duration, log *slog.Logger) *Session {
	r := redact.New(nil)
	return &Session{cp: Redacted(cp, r), id: id, version: v, interval: heartbeat, log: r.Logger(log), Redactor: r,
		BacklogLimit: DefaultBacklogLimit, repl: replState{snapAt: time.Now()}}
}

// Log is the session's logger, which redacts secret values.
func (s *Session) Log() *slog.Logger { return s.log }

// ID is the session's identity.
func (s *Session) ID() Identity { return s.id }

// ConfigVersion is the config version the agent runs with.
func (s *Session) ConfigVersion() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.configVersion
}

// End ends the session from inside the agent, as a graceful stop would:
// the lanes reach their safe point, a final heartbeat flushes the log, and
// TERMINATE_SELF carries reason (say why, for the operator's log). The
// first reason wins; End before Run ends the session as soon as it opens.
func (s *Session) End(reason string) {
	if reason == "" {
		reason = "ended by the agent"
	}
	s.mu.Lock()
	end := s.end
	if end == nil && s.endReason == "" {
		s.endReason = reason
	}
	s.mu.Unlock()
	if end != nil {
		end(reason)
	}
}

// Run opens the session, then heartbeats and follows the push channel until
// ctx ends or choird asks the agent to stop; either way it says goodbye with
// TERMINATE_SELF. It returns nil on a requested stop.
func (s *Session) Run(ctx context.Context) error {
	if err := s.open(ctx); err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	reason := "signal"
	var once sync.Once
	shutdown := func(why string) { once.Do(func() { reason = why; stop() }) }
	s.mu.Lock()
	s.end = shutdown
	pending := s.endReason
	s.mu.Unlock()
	if pending != "" {
		shutdown(pending)
	}

	followErr := make(chan error, 1)
	go func() {
		followErr <- rpc.Follow(runCtx, s.cp, func(ev rpc.PushEvent) { s.onPush(runCtx, ev, shutdown) })
	}()
	err := s.heartbeatLoop(runCtx)
	stop()
	if ferr := <-followErr; ferr != nil && !errors.Is(ferr, context.Canceled) {
		s.log.Warn("push channel ended", "error", ferr.Error())
	}
	// The lanes reach a safe point, their events are sent, the session
	// summary is made, then a final heartbeat flushes the rest with it,
	// then goodbye,
	// each on a bounded context of its own.
	byeCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if s.Hooks.Stopping != nil {
		s.Hooks.Stopping(byeCtx)
	}
	// What the lanes committed goes to choird before the summary call,
	// which may take session_summary_timeout_ms: an agent killed during it
	// then loses nothing but the summary.
	if _, rerr := s.replicate(byeCtx); rerr != nil {
		s.log.Warn("heartbeat before the session summary failed; the final heartbeat sends the events", "error", rerr.Error())
	}
	summary := s.summarize(ctx, err) // bounded by its own timeout
	byeCtx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s.flush(byeCtx, summary)
	once.Do(func() {}) // whoever set reason has finished
	if _, terr := s.cp.Terminate(byeCtx, rpc.TerminateReq{Reason: reason}); terr != nil {
		s.log.Warn("terminate failed", "error", terr.Error())
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func (s *Session) open(ctx context.Context) error {
	hello, err := s.cp.InitHello(ctx, rpc.InitHelloReq{
		AgentID: s.id.AgentID, SessionID: s.id.SessionID, ImageVersion: s.version.ImageVersion,
		GlobalRepoCommit: s.version.GlobalRepoCommit, AgentRepoCommit: s.version.AgentRepoCommit,
		ToolManifestHash: s.version.ToolManifestHash, SkillManifestHash: s.version.SkillManifestHash,
	})
	if err != nil {
		return fmt.Errorf("INIT_HELLO: %w", err)
	}
	s.Bindings, s.RunBrief = hello.ResourceBindings, hello.Run
	s.ModelProxy, s.Tunnel = hello.ModelProxy, hello.Tunnel
	s.NetFetch = hello.NetFetch
	// The config version stays 0 until the first FETCH_DYNAMIC_CONFIG
	// brings the config itself.
	s.log.Info("session opened", "status", hello.Status, "config_version", hello.ConfigVersion)
	if hello.Status == rpc.InitRecover {
		if hello.Recovery == nil {
			return fmt.Errorf("INIT_HELLO: choird resumes the session but sent no recovery state")
		}
		if err := s.recover(ctx, hello.Recovery); err != nil {
			return err
		}
	}
	if err := s.fetchSecrets(ctx); err != nil {
		return err
	}
	if err := s.syncConfig(ctx); err != nil {
		return err
	}
	if s.Hooks.Opened != nil {
		return s.Hooks.Opened(ctx)
	}
	return nil
}

// Config returns the dynamic config the agent runs with (config.Dynamic as
// JSON), swapped whole when choird publishes a new version.
func (s *Session) Config() json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.config
}

// fetchSecrets asks for every secret choird binds to this session; choird
// decides which those are, the agent never names others.
func (s *Session) fetchSecrets(ctx context.Context) error {
	resp, err := s.cp.GetSecrets(ctx, rpc.SecretReq{})
	if err != nil {
		return fmt.Errorf("GET_SECRETS: %w", err)
	}
	s.Redactor.Set(resp.Secrets) // first: no value is usable before it is redacted
	s.Secrets.swap(resp.Secrets)
	// Names only, never a value (§22.1).
	s.log.Info("secrets received", "count", len(resp.Secrets), "names", strings.Join(slices.Sorted(maps.Keys(resp.Secrets)), ","),
		"config_version", s.ConfigVersion())
	return nil
}

func (s *Session) syncConfig(ctx context.Context) error {
	resp, err := s.cp.FetchDynamicConfig(ctx, rpc.ConfigReq{CurrentConfigVersion: s.ConfigVersion()})
	if err != nil {
		return fmt.Errorf("FETCH_DYNAMIC_CONFIG: %w", err)
	}
	if resp.Config != nil {
		s.mu.Lock()
		was := s.configVersion
		s.configVersion, s.config = resp.ConfigVersion, resp.Config
		s.mu.Unlock()
		s.log.Info("config swapped in", "config_version", resp.ConfigVersion, "was", was, "bytes", len(resp.Config))
	}
	return nil
}

func (s *Session) heartbeatLoop(ctx context.Context) error {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		latest, err := s.replicate(ctx)
		if err != nil {
			var rerr *rpc.Error
			if errors.As(err, &rerr) && rerr.Status == 401 {
				return fmt.Errorf("choird ended this session: %w", err)
			}
			s.log.Warn("heartbeat failed; retrying at the next tick", "error", err.Error())
			continue
		}
		if latest > s.ConfigVersion() {
			// A new version may carry new secrets as well as new config.
			if err := s.fetchSecrets(ctx); err != nil {
				s.log.Warn("secret refresh failed; retrying at the next heartbeat", "error", err.Error())
			} else if err := s.syncConfig(ctx); err != nil {
				s.log.Warn("config sync failed; retrying at the next heartbeat", "error", err.Error())
			}
		}
	}
}

// reportStatus sends REPORT_STATUS for each lane whose report changed.
func (s *Session) reportStatus(ctx context.Context) {
	if s.Hooks.Status == nil {
		return
	}
	for _, st := range s.Hooks.Status() {
		s.mu.Lock()
		prev, ok := s.reported[st.Lane]
		s.mu.Unlock()
		if ok && reflect.DeepEqual(prev, st) {
			continue
		}
		if _, err := s.cp.ReportStatus(ctx, st); err != nil {
			s.log.Warn("status report failed", "lane", st.Lane, "error", err.Error())
			continue
		}
		s.mu.Lock()
		if s.reported == nil {
			s.reported = map[string]rpc.StatusReq{}
		}
		s.reported[st.Lane] = st
		s.mu.Unlock()
	}
}

func (s *Session) onPush(ctx context.Context, ev rpc.PushEvent, shutdown func(string)) {
	switch ev.Type {
	case rpc.EventShutdown:
		var body struct {
			Reason string `json:"reason"`
		}
		json.Unmarshal(ev.Data, &body)
		s.log.Info("shutdown requested", "reason", body.Reason)
		shutdown("shutdown requested: " + body.Reason)
	case rpc.EventSecretsChanged:
		if err := s.fetchSecrets(ctx); err != nil {
			s.log.Warn("secret refresh failed", "error", err.Error())
		}
	case rpc.EventConfigChanged, rpc.EventGap:
		// A new config may bind a new model, whose key comes with it.
		if err := s.fetchSecrets(ctx); err != nil {
			s.log.Warn("secret refresh failed", "error", err.Error())
		}
		if err := s.syncConfig(ctx); err != nil {
			s.log.Warn("config sync failed", "error", err.Error())
		}
	default:
		if s.Hooks.Push != nil {
			s.Hooks.Push(ev)
		} else {
			s.log.Debug("push event not handled", "type", ev.Type, "id", ev.ID)
		}
	}
}
