package gateway_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"choir/choird/approval"
	"choir/choird/approval/approvaltest"
	"choir/choird/gateway"
	"choir/choird/lease"
	"choir/choird/lifecycle"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/rpc"
	"choir/internal/telegram"
	"choir/testkit/telegramtest"

	"choir/testkit"
)

// The gateway is the lifecycle's Outbox.
var _ lifecycle.Outbox = (*gateway.Gateway)(nil)

const token = "424242:TEST-gateway-token"

// The configured users: one admin DM and two regular DMs on one bot.
const (
	adminUser int64 = 1001
	aliceUser int64 = 1002
	bobUser   int64 = 1003
	stranger  int64 = 9999
)

// signal wakes waiters whenever the fake control plane changes.
type signal struct {
	mu sync.Mutex
	ch chan struct{}
}

func (s *signal) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
	}
	s.ch = make(chan struct{})
}

func (s *signal) changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// wait waits until cond holds, re-checking at every change, and fails the
// test after a deadline.
func (s *signal) wait(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		ch := s.changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

type startCall struct {
	agent string
	o     lease.Overrides
}

// fakeControl is the control plane: DM bindings, agents, and a record of
// every call.
type fakeControl struct {
	sig signal
	ws  string // workspaces live under here, one directory per agent
	// workspaces is what Workspaces lists, when set (else one made-up one).
	workspaces []ctl.Workspace

	mu       sync.Mutex
	bound    map[string]string // dm → agent
	messages []rpc.UserMessage
	msgAgent []string
	injects  []string
	starts   []startCall
	stops    []string
	commands []gateway.Command
	onSend   func() // benchmarks: called at each SendUserMessage
	// edge, when set, is the edge lane's report in Status.
	edge *rpc.StatusReq
	// spend is Status's spend line (choird's ledger.Today).
	spend string
}

var _ gateway.Control = (*fakeControl)(nil)

func newFakeControl(t testing.TB) *fakeControl {
	return &fakeControl{ws: t.TempDir(), bound: map[string]string{}}
}

func (f *fakeControl) bind(dm, agent string) {
	f.mu.Lock()
	f.bound[dm] = agent
	f.mu.Unlock()
	os.MkdirAll(filepath.Join(f.ws, agent), 0o755)
}

func (f *fakeControl) AgentForDM(dm string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.bound[dm]
	return a, ok
}

func (f *fakeControl) running(agent string) bool {
	for _, a := range f.bound {
		if a == agent {
			return true
		}
	}
	return false
}

func (f *fakeControl) SendUserMessage(agent string, msg rpc.UserMessage) (string, error) {
	f.mu.Lock()
	if !f.running(agent) {
		f.mu.Unlock()
		return "", fmt.Errorf("%s: agent is not running", agent)
	}
	f.messages = append(f.messages, msg)
	f.msgAgent = append(f.msgAgent, agent)
	hook := f.onSend
	f.mu.Unlock()
	if hook != nil {
		hook()
	}
	f.sig.notify()
	return msg.ID, nil
}

func (f *fakeControl) Inject(agent, text string) error {
	f.mu.Lock()
	f.injects = append(f.injects, agent+": "+text)
	f.mu.Unlock()
	f.sig.notify()
	return nil
}

func (f *fakeControl) WorkspacePath(agent string) (string, error) {
	return filepath.Join(f.ws, agent), nil
}

func (f *fakeControl) Start(ctx context.Context, agent string, o lease.Overrides) (ctl.AgentStatus, error) {
	f.mu.Lock()
	f.starts = append(f.starts, startCall{agent, o})
	f.mu.Unlock()
	f.bind(o.DM, agent)
	f.sig.notify()
	return ctl.AgentStatus{AgentID: agent, State: "running", SessionID: "sess-" + agent}, nil
}

func (f *fakeControl) Stop(ctx context.Context, agent string) error {
	f.mu.Lock()
	f.stops = append(f.stops, agent)
	for dm, a := range f.bound {
		if a == agent {
			delete(f.bound, dm)
		}
	}
	f.mu.Unlock()
	f.sig.notify()
	return nil
}

func (f *fakeControl) Restart(ctx context.Context, agent string) (ctl.AgentStatus, error) {
	return ctl.AgentStatus{AgentID: agent, State: "running", SessionID: "sess2-" + agent}, nil
}

func (f *fakeControl) Status(agent string) (ctl.AgentStatus, error) {
	edge := rpc.StatusReq{Lane: "edge", State: "idle"}
	f.mu.Lock()
	if f.edge != nil {
		edge = *f.edge
	}
	spend := f.spend
	f.mu.Unlock()
	return ctl.AgentStatus{AgentID: agent, State: "running", SessionID: "sess-" + agent, Uptime: "5m", Spend: spend,
		Bindings: &rpc.ResourceBindings{Workspace: "ws-" + agent, LLM: "small", DM: "?"},
		Lanes:    map[string]rpc.StatusReq{"edge": edge}}, nil
}

func (f *fakeControl) List() []ctl.AgentStatus {
	return []ctl.AgentStatus{{AgentID: "alpha", State: "running"}, {AgentID: "gamma", State: "stopped"}}
}

func (f *fakeControl) Workspaces() []ctl.Workspace {
	if f.workspaces != nil {
		return f.workspaces
	}
	return []ctl.Workspace{{Name: "ws-alpha", Path: "/srv/ws/alpha", Holder: "alpha"}}
}

func (f *fakeControl) ResetWorkspace(ctx context.Context, name string) (ctl.ResetResult, error) {
	return ctl.ResetResult{Workspace: name, RemovedEntries: 3}, nil
}

func (f *fakeControl) SecretNames() []string { return []string{"postgres", "tg-work"} }

func (f *fakeControl) Command(ctx context.Context, c gateway.Command) (string, error) {
	f.mu.Lock()
	f.commands = append(f.commands, c)
	f.mu.Unlock()
	f.sig.notify()
	return "", gateway.ErrNotAvailable
}

func (f *fakeControl) userMessages() []rpc.UserMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.messages)
}

func (f *fakeControl) startCalls() []startCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.starts)
}

func (f *fakeControl) stopCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.stops)
}

// waitMessages waits until the agents got n user messages.
func (f *fakeControl) waitMessages(t testing.TB, n int) []rpc.UserMessage {
	t.Helper()
	f.sig.wait(t, fmt.Sprintf("%d user messages", n), func() bool { return len(f.userMessages()) >= n })
	return f.userMessages()
}

// harness is a running gateway against the fake Bot API.
type harness struct {
	t    testing.TB
	srv  *telegramtest.Server
	bot  telegramtest.BotID
	fc   *fakeControl
	gw   *gateway.Gateway
	logs *testkit.Buffer
	stop func() // stops the gateway and waits for Run to return
}

// newHarness starts a gateway with one bot and three DMs; tweak adjusts
// its Config before New.
func newHarness(t testing.TB, tweak func(*gateway.Config)) *harness {
	t.Helper()
	srv := telegramtest.New(t)
	bot := srv.AddBot(token, "choir_bot")
	fc := newFakeControl(t)
	logs := &testkit.Buffer{}
	cfg := gateway.Config{
		Gateways: map[string]config.Gateway{"work": {Type: "telegram", APIBase: srv.URL(), Secret: "tg-work"}},
		DMs: map[string]config.DM{
			"admin": {Gateway: "work", UserID: fmt.Sprint(adminUser), Admin: true},
			"alice": {Gateway: "work", UserID: fmt.Sprint(aliceUser)},
			"bob":   {Gateway: "work", UserID: fmt.Sprint(bobUser)},
		},
		Secrets:     config.Secrets{"tg-work": token},
		Control:     fc,
		Log:         slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		PollTimeout: time.Second,
		BackoffMin:  time.Millisecond,
		BackoffMax:  5 * time.Millisecond,
		Limiter:     telegram.LimiterConfig{PerChatInterval: time.Millisecond, DefaultRetryAfter: time.Millisecond},
	}
	if tweak != nil {
		tweak(&cfg)
	}
	gw, err := gateway.New(cfg)
	if err != nil {
		t.Fatalf("gateway.New() = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		gw.Run(ctx)
	}()
	stop := sync.OnceFunc(func() {
		cancel()
		<-done
	})
	t.Cleanup(stop)
	srv.WaitPolling(t, bot)
	return &harness{t: t, srv: srv, bot: bot, fc: fc, gw: gw, logs: logs, stop: stop}
}

// approvals connects an approval Service over an in-memory store.
func (h *harness) approvals(clock *approvaltest.Clock, timeout time.Duration) (*approval.Service, *decisions) {
	d := &decisions{}
	cfg := approval.Config{Store: approvaltest.NewStore(nil), Notifier: h.gw, OnDecision: d.record, Timeout: timeout}
	if clock != nil {
		cfg.Clock = clock
		cfg.Store = approvaltest.NewStore(clock.Now)
	}
	svc := approval.New(cfg)
	h.t.Cleanup(svc.Close)
	h.gw.SetApprovals(svc)
	return svc, d
}

// decisions records what agents were told.
type decisions struct {
	mu  sync.Mutex
	got []rpc.ApprovalDecision
}

func (d *decisions) record(ctx context.Context, a approval.Approval) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, a.Decision())
	return nil
}

func (d *decisions) all() []rpc.ApprovalDecision {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.got)
}

// say sends text from user and waits for the bot's answer number n (1-based)
// in that chat, returning its text.
func (h *harness) say(user int64, text string) string {
	h.t.Helper()
	before := len(h.srv.Sent(h.bot, user))
	h.srv.InjectText(h.bot, user, text)
	sent := h.srv.WaitSent(h.t, h.bot, user, before+1)
	return sent[before].Text
}

// sayAll sends text and waits for n answers, returning their texts.
func (h *harness) sayAll(user int64, text string, n int) []string {
	h.t.Helper()
	before := len(h.srv.Sent(h.bot, user))
	h.srv.InjectText(h.bot, user, text)
	sent := h.srv.WaitSent(h.t, h.bot, user, before+n)
	var out []string
	for _, s := range sent[before:] {
		out = append(out, s.Text)
	}
	return out
}
