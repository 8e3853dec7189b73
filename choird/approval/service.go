package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Store keeps approvals (choird's pending_approvals table; see the postgres
// subpackage).
type Store interface {
	// Create stores a pending request (SessionID, AgentID, RequestType,
	// Summary and Payload of a) and returns it with its id and CreatedAt:
	// a new one, or a.ID when set. An a.ID in use stores nothing and
	// returns the stored approval with an error wrapping ErrExists.
	Create(ctx context.Context, a Approval) (Approval, error)
	// Resolve decides a pending request once. Deciding it again changes
	// nothing and returns the stored approval with an error wrapping
	// ErrAlreadyDecided; an unknown id is ErrNotFound.
	Resolve(ctx context.Context, id string, status Status, by string) (Approval, error)
	// Get returns one approval, or ErrNotFound.
	Get(ctx context.Context, id string) (Approval, error)
	// Pending returns the undecided approvals of agentID, or of every agent
	// for "", oldest first.
	Pending(ctx context.Context, agentID string) ([]Approval, error)
}

// Notifier tells the human (the gateway, for the agent's bound DM).
type Notifier interface {
	// Requested shows a new request with its [Approve] [Reject] buttons.
	Requested(ctx context.Context, a Approval) error
	// Decided shows the outcome of a decided request (OutcomeText).
	Decided(ctx context.Context, a Approval) error
}

// Handoff says which choird hands a decision on (tells the agent, shows
// the outcome in the DM, applies it) when two choird replicas share the
// store (issue 26): the one running the session that asked, which alone
// can tell its agent; the one that decided, when no other replica runs
// that session. The postgres subpackage implements it over told_at.
type Handoff interface {
	// Claim records that this choird hands on the decision of approval id,
	// once: false when it was handed on already, or when another replica
	// runs its session (whose Untold takes it).
	Claim(ctx context.Context, id string) (bool, error)
	// Untold takes the decided approvals this choird is to hand on and
	// nobody did: those of its sessions decided on another replica, and
	// orphans (decided, then nobody handed them on).
	Untold(ctx context.Context) ([]Approval, error)
	// Pending returns the pending approvals whose timeouts this choird
	// keeps: all but those of sessions another replica runs (which armed
	// them when its agent asked).
	Pending(ctx context.Context) ([]Approval, error)
}

// Clock is the time the Service keeps timeouts by.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a scheduled call that can be cancelled.
type Timer interface{ Stop() bool }

type realClock struct{}

func (realClock) Now() time.Time                            { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Config builds a Service.
type Config struct {
	Store Store
	// Notifier may be nil (no gateway): requests are then decided through
	// choirctl only.
	Notifier Notifier
	// OnDecision tells the agent: choird publishes a.Decision() as an
	// rpc.EventApproval on the agent's session. nil drops it.
	OnDecision func(ctx context.Context, a Approval) error
	// Apply carries out an approved request (§8.10, §20: commit, build,
	// update). It runs in the background under the service's context,
	// which Close ends; nil applies nothing.
	Apply func(ctx context.Context, a Approval)
	// Handoff is nil when this choird hands on every decision it makes
	// (no other replica shares the store).
	Handoff Handoff
	// Timeout is approval_timeout_ms; <= 0 means requests never time out.
	Timeout time.Duration
	// Log gets a line per request, decision, refusal and timeout.
	Log *slog.Logger
	// Clock is nil for the real one.
	Clock Clock
}

// Service is the approval pipeline. It is safe for concurrent use.
type Service struct {
	cfg   Config
	clock Clock
	log   *slog.Logger

	mu     sync.Mutex
	base   context.Context // the timeouts' context: Start's, until Close
	cancel context.CancelFunc
	timers map[string]Timer
	closed bool
	wg     sync.WaitGroup // running timeouts

	polled atomic.Bool // RunHandoff runs: a failed Claim is left to it
}

// retryExpire is how long a timeout the store failed to record waits
// before it tries again.
const retryExpire = time.Minute

// opTimeout bounds the store and notifier work a timeout does.
const opTimeout = 30 * time.Second

// Log keys of this package (internal/logs holds the shared ones).
const (
	keyApproval    = "approval_id"
	keyAgent       = "agent_id"
	keySession     = "session_id"
	keyRequestType = "request_type"
	keySummary     = "summary"
	keyStatus      = "status"
	keyBy          = "by"
	keyError       = "error"
)

// New returns a Service; call Start to re-arm the timeouts of requests
// left pending by an earlier run.
func New(cfg Config) *Service {
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Service{cfg: cfg, clock: cfg.Clock, log: cfg.Log, base: ctx, cancel: cancel, timers: map[string]Timer{}}
}

// Rearmed says what Start found pending.
type Rearmed struct {
	Armed   int // timeouts scheduled
	Expired int // already past due: rejected now
}

// Start re-arms the timeout of every request still pending (choird
// restarted while they waited), or with a Handoff of those it keeps;
// those already past due are rejected at once, with the timeout's message.
func (s *Service) Start(ctx context.Context) (Rearmed, error) {
	var r Rearmed
	var pending []Approval
	var err error
	if s.cfg.Handoff != nil {
		pending, err = s.cfg.Handoff.Pending(ctx)
	} else {
		pending, err = s.cfg.Store.Pending(ctx, "")
	}
	if err != nil {
		return r, fmt.Errorf("re-arm approval timeouts: %w", err)
	}
	if s.cfg.Timeout <= 0 {
		return r, nil
	}
	now := s.clock.Now()
	for _, a := range pending {
		if left := a.CreatedAt.Add(s.cfg.Timeout).Sub(now); left > 0 {
			s.arm(a.ID, left)
			r.Armed++
			continue
		}
		if s.expire(ctx, a.ID) {
			r.Expired++
		}
	}
	s.log.Info("approval timeouts re-armed", "armed", r.Armed, "expired", r.Expired)
	return r, nil
}

// Close stops every timeout; requests stay pending in the store for the
// next Start. It waits for a timeout already running.
func (s *Service) Close() {
	s.mu.Lock()
	s.closed = true
	for id, t := range s.timers {
		t.Stop()
		delete(s.timers, id)
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}

// Request stores a pending request from agentID's session, arms its
// timeout and shows it to the human. An empty summary is made from the
// payload (Summarize). A failing notification is logged, not returned:
// the request stands and can be decided through choirctl.
func (s *Service) Request(ctx context.Context, agentID, sessionID, requestType, summary string, payload json.RawMessage) (Approval, error) {
	if agentID == "" || requestType == "" {
		return Approval{}, errors.New("approval request: agent id and request type are required")
	}
	if summary == "" {
		summary = Summarize(requestType, payload)
	}
	a, err := s.cfg.Store.Create(ctx, Approval{SessionID: sessionID, AgentID: agentID, RequestType: requestType, Summary: summary, Payload: payload})
	if err != nil {
		return Approval{}, fmt.Errorf("approval request of %s: %w", agentID, err)
	}
	s.requested(ctx, a)
	return a, nil
}

// requested logs a stored request, arms its timeout and shows it.
func (s *Service) requested(ctx context.Context, a Approval) {
	s.log.Info("approval requested", keyApproval, a.ID, keyAgent, a.AgentID, keySession, a.SessionID,
		keyRequestType, a.RequestType, keySummary, a.Summary, "requested_at", a.CreatedAt)
	if s.cfg.Timeout > 0 {
		s.arm(a.ID, s.cfg.Timeout)
	}
	if s.cfg.Notifier != nil {
		if err := s.cfg.Notifier.Requested(ctx, a); err != nil {
			s.log.Warn("approval request not shown in a DM; decide it with choirctl", keyApproval, a.ID, keyAgent, a.AgentID, keyError, err.Error())
		}
	}
}

// MaxID is the longest id a caller may choose (RequestOnce): a UUID's
// length, so that "ap:<id>:y" fits a Telegram button's callback data.
const MaxID = 36

// RequestOnce is Request for a request its asker may come back to, under
// an id it chose (at most MaxID bytes of [A-Za-z0-9._-]): a headless
// run's commit, asked again whenever choird restarts while the run waits.
// The first call stores a.ID's request (AgentID, SessionID, RequestType,
// Summary and Payload of a), arms its timeout and shows it as Request
// does: created is true. A later call changes nothing, shows nothing
// again and returns the stored approval, pending or decided: the asker
// learns a decision it may have missed.
func (s *Service) RequestOnce(ctx context.Context, a Approval) (_ Approval, created bool, _ error) {
	if err := checkID(a.ID); err != nil {
		return Approval{}, false, err
	}
	if a.AgentID == "" || a.RequestType == "" {
		return Approval{}, false, errors.New("approval request: agent id and request type are required")
	}
	if a.Summary == "" {
		a.Summary = Summarize(a.RequestType, a.Payload)
	}
	got, err := s.cfg.Store.Create(ctx, Approval{ID: a.ID, SessionID: a.SessionID, AgentID: a.AgentID, RequestType: a.RequestType, Summary: a.Summary, Payload: a.Payload})
	if errors.Is(err, ErrExists) {
		return got, false, nil
	}
	if err != nil {
		return Approval{}, false, fmt.Errorf("approval request %s of %s: %w", a.ID, a.AgentID, err)
	}
	s.requested(ctx, got)
	return got, true, nil
}

func checkID(id string) error {
	ok := id != "" && len(id) <= MaxID
	for _, c := range id {
		ok = ok && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-')
	}
	if !ok {
		return fmt.Errorf("approval id %q: want 1 to %d of [A-Za-z0-9._-] (it goes into a Telegram button's callback data)", id, MaxID)
	}
	return nil
}

// Decide approves or rejects a pending request for who. It returns the
// decided approval; ErrNotFound for an unknown id; ErrNotAllowed when who
// may not decide this agent's approvals (nothing is recorded); and, when the
// request was decided before, the decision that stands with an error
// wrapping ErrAlreadyDecided (nothing changes, nobody is told again).
func (s *Service) Decide(ctx context.Context, id string, approve bool, who Decider) (Approval, error) {
	if who.By == "" {
		return Approval{}, errors.New("decide approval: who decides is required")
	}
	a, err := s.cfg.Store.Get(ctx, id)
	if err != nil {
		return Approval{}, err
	}
	if !who.May(a.AgentID) {
		s.log.Warn("approval decision refused", keyApproval, a.ID, keyAgent, a.AgentID, keyBy, who.By, "scope", who.Agent)
		return Approval{}, fmt.Errorf("approval %s belongs to agent %s, which %s may not decide for: %w", a.ID, a.AgentID, who.By, ErrNotAllowed)
	}
	if a.Status != Pending {
		return a, s.already(a, who)
	}
	status := Rejected
	if approve {
		status = Approved
	}
	d, err := s.cfg.Store.Resolve(ctx, id, status, who.By)
	if errors.Is(err, ErrAlreadyDecided) {
		return d, s.already(d, who)
	}
	if err != nil {
		return Approval{}, err
	}
	s.disarm(id)
	s.decided(d)
	s.handOn(ctx, d)
	return d, nil
}

func (s *Service) already(a Approval, who Decider) error {
	s.log.Info("approval already decided; nothing changed", keyApproval, a.ID, keyAgent, a.AgentID,
		keyStatus, a.Status, "decided_by", a.ResolvedBy, keyBy, who.By)
	return fmt.Errorf("approval %s was already %s by %s at %s: %w", a.ID, a.Status, a.ResolvedBy,
		a.ResolvedAt.UTC().Format(time.RFC3339), ErrAlreadyDecided)
}

// decided logs a decision this choird recorded.
func (s *Service) decided(a Approval) {
	s.log.Info("approval decided", keyApproval, a.ID, keyAgent, a.AgentID, keySession, a.SessionID,
		keyRequestType, a.RequestType, keySummary, a.Summary, keyStatus, a.Status, keyBy, a.ResolvedBy,
		"requested_at", a.CreatedAt, "decided_at", a.ResolvedAt)
}

// handOn hands on a decision this choird recorded, unless the Handoff
// leaves it to the replica running its session. A Claim that fails is
// left to RunHandoff when it runs (the row stays untold), else handed on
// here: better told twice than never.
func (s *Service) handOn(ctx context.Context, a Approval) {
	if h := s.cfg.Handoff; h != nil {
		mine, err := h.Claim(ctx, a.ID)
		switch {
		case err != nil && s.polled.Load():
			s.log.Warn("approval decision not recorded as handed on; the next look hands it on", keyApproval, a.ID, keyAgent, a.AgentID, keyError, err.Error())
			return
		case err != nil:
			s.log.Warn("approval decision not recorded as handed on; handing it on", keyApproval, a.ID, keyAgent, a.AgentID, keyError, err.Error())
		case !mine:
			s.log.Info("approval decision left to the replica running its session", keyApproval, a.ID, keyAgent, a.AgentID, keySession, a.SessionID)
			return
		}
	}
	s.finish(ctx, a)
}

// RunHandoff hands on, every interval until ctx ends, the decisions the
// Handoff finds untold for this choird: decided on the other replica (by
// choirctl there, or a timeout it kept) for a session this one runs. It
// returns at once without a Handoff.
func (s *Service) RunHandoff(ctx context.Context, every time.Duration) {
	h := s.cfg.Handoff
	if h == nil {
		return
	}
	s.polled.Store(true)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.handOnUntold(ctx, h)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// handOnUntold hands on the decisions h finds untold (handOn is for those
// this choird decides).
func (s *Service) handOnUntold(ctx context.Context, h Handoff) {
	untold, err := h.Untold(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("approval decisions to hand on not read; looking again", keyError, err.Error())
		}
		return
	}
	for _, a := range untold {
		s.disarm(a.ID)
		s.log.Info("approval decided elsewhere; handing it on", keyApproval, a.ID, keyAgent, a.AgentID, keySession, a.SessionID,
			keyStatus, a.Status, keyBy, a.ResolvedBy, "decided_at", a.ResolvedAt)
		s.finish(ctx, a)
	}
}

// finish hands a decision on: tells the agent and the human, and applies
// an approval.
func (s *Service) finish(ctx context.Context, a Approval) {
	if s.cfg.OnDecision != nil {
		if err := s.cfg.OnDecision(ctx, a); err != nil {
			s.log.Warn("approval decision not delivered to the agent", keyApproval, a.ID, keyAgent, a.AgentID, keySession, a.SessionID, keyError, err.Error())
		}
	}
	if s.cfg.Notifier != nil {
		if err := s.cfg.Notifier.Decided(ctx, a); err != nil {
			s.log.Warn("approval outcome not shown in the DM", keyApproval, a.ID, keyAgent, a.AgentID, keyError, err.Error())
		}
	}
	if a.Status == Approved && s.cfg.Apply != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed {
			s.log.Warn("approved while choird stops: not applied", keyApproval, a.ID, keyAgent, a.AgentID)
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.cfg.Apply(s.base, a)
		}()
	}
}

// List returns the pending approvals of agentID, or of all agents for "".
func (s *Service) List(ctx context.Context, agentID string) ([]Approval, error) {
	return s.cfg.Store.Pending(ctx, agentID)
}

// Get returns one approval, decided or not.
func (s *Service) Get(ctx context.Context, id string) (Approval, error) {
	return s.cfg.Store.Get(ctx, id)
}

func (s *Service) arm(id string, after time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if old, ok := s.timers[id]; ok {
		old.Stop()
	}
	s.timers[id] = s.clock.AfterFunc(after, func() {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		delete(s.timers, id)
		s.wg.Add(1)
		base := s.base
		s.mu.Unlock()
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(base, opTimeout)
		defer cancel()
		s.expire(ctx, id)
	})
}

func (s *Service) disarm(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.timers[id]; ok {
		t.Stop()
		delete(s.timers, id)
	}
}

// expire rejects a request nobody answered; it reports whether this call
// decided it.
func (s *Service) expire(ctx context.Context, id string) bool {
	a, err := s.cfg.Store.Resolve(ctx, id, Rejected, ByTimeout)
	if errors.Is(err, ErrAlreadyDecided) {
		return false
	}
	if err != nil {
		s.log.Error("approval timeout not recorded; trying again later", keyApproval, id, "retry_in", retryExpire, keyError, err.Error())
		s.arm(id, retryExpire)
		return false
	}
	s.log.Info("approval timed out", keyApproval, a.ID, keyAgent, a.AgentID, "timeout", s.cfg.Timeout)
	s.decided(a)
	s.handOn(ctx, a)
	return true
}
