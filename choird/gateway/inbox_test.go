package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/choird/approval"
	"choir/choird/approval/approvaltest"
	"choir/choird/gateway"
	"choir/choird/store"
	"choir/internal/rpc"
	"choir/testkit"
)

// memInbox is choird/store's dm_inbox in memory, shared by two gateways
// as two replicas share Postgres; runs says which instance runs each DM's
// agent (the sessions table).
type memInbox struct {
	mu   sync.Mutex
	runs map[string][2]string // dm → instance, agent
	rows []store.Inbound
	done map[int64]bool
	keys map[string]bool
}

var _ gateway.InboxStore = (*memInbox)(nil)

func newMemInbox() *memInbox {
	return &memInbox{runs: map[string][2]string{}, done: map[int64]bool{}, keys: map[string]bool{}}
}

func (m *memInbox) InboundRoute(_ context.Context, dm, instance string) (store.DMRoute, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var r store.DMRoute
	if run, ok := m.runs[dm]; ok && run[0] != instance {
		r.Elsewhere, r.Agent = run[0], run[1]
	}
	for _, in := range m.rows {
		if in.DM == dm && !m.done[in.ID] {
			r.Waiting++
		}
	}
	return r, nil
}

func (m *memInbox) QueueInbound(_ context.Context, n store.NewInbound) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := fmt.Sprint(n.Bot, n.UpdateID)
	if m.keys[key] {
		return false, nil
	}
	m.keys[key] = true
	m.rows = append(m.rows, store.Inbound{ID: int64(len(m.rows) + 1), Bot: n.Bot, UpdateID: n.UpdateID, DM: n.DM, Instance: n.Instance, Body: n.Body})
	return true, nil
}

func (m *memInbox) QueuedInbound(_ context.Context, dms []string, limit int) ([]store.Inbound, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.Inbound
	for _, in := range m.rows {
		if !m.done[in.ID] && slices.Contains(dms, in.DM) && len(out) < limit {
			out = append(out, in)
		}
	}
	return out, nil
}

func (m *memInbox) InboundDelivered(_ context.Context, id int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.done[id] = true
	return nil
}

func (m *memInbox) PruneInbound(context.Context, time.Time) (int, error) { return 0, nil }

func (m *memInbox) delivered() (queued, delivered int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, in := range m.rows {
		if m.done[in.ID] {
			delivered++
		} else {
			queued++
		}
	}
	return queued, delivered
}

// replicas is a leader gateway polling the fake Telegram and a follower
// gateway beside it on the same bot, which polls nothing and runs its
// inbox; they share a memInbox.
type replicas struct {
	*harness                   // the leader
	follower *gateway.Gateway  // runs alice's agent alpha
	fc2      *fakeControl      // the follower's control plane
	inbox    *memInbox         // their Postgres
	logs2    *testkit.Buffer   // the follower's log
	svc2     *approval.Service // the follower's approvals
	told2    *decisions        // what the follower's agents were told
}

func newReplicas(t *testing.T) *replicas {
	inbox := newMemInbox()
	var follow gateway.Config
	h := newHarness(t, func(c *gateway.Config) {
		follow = *c
		c.Inbox, c.Instance, c.InboxPoll = inbox, "leader", 5*time.Millisecond
	})
	r := &replicas{harness: h, inbox: inbox, fc2: newFakeControl(t), logs2: &testkit.Buffer{}}
	follow.Control, follow.Log = r.fc2, slog.New(slog.NewJSONHandler(r.logs2, &slog.HandlerOptions{Level: slog.LevelDebug}))
	follow.Inbox, follow.Instance, follow.InboxPoll = inbox, "follower", 5*time.Millisecond
	gw, err := gateway.New(follow)
	if err != nil {
		t.Fatal(err)
	}
	r.follower = gw
	runInbox(t, gw)
	// alice's agent alpha runs on the follower, as its session records.
	r.fc2.bind("alice", "alpha")
	inbox.mu.Lock()
	inbox.runs["alice"] = [2]string{"follower", "alpha"}
	inbox.mu.Unlock()
	d := &decisions{}
	r.svc2 = approval.New(approval.Config{Store: approvaltest.NewStore(nil), Notifier: gw, OnDecision: d.record, Timeout: time.Hour})
	t.Cleanup(r.svc2.Close)
	gw.SetApprovals(r.svc2)
	r.told2 = d
	return r
}

// A message to a DM whose agent the other replica runs reaches that agent,
// through the inbox, as the message it would have polled itself; in the
// order sent; and the leader, which polled it, neither handles it nor
// answers it.
func TestInboxForwardsMessagesToTheReplicaRunningTheAgent(t *testing.T) {
	r := newReplicas(t)
	for _, text := range []string{"one", "two", "three"} {
		r.srv.InjectText(r.bot, aliceUser, text)
	}
	got := r.fc2.waitMessages(t, 3)
	var texts []string
	for _, m := range got {
		texts = append(texts, m.Text)
		if !strings.HasPrefix(m.ID, fmt.Sprintf("tg-work-%d-", aliceUser)) || m.From != "alice" {
			t.Errorf("message on the follower = %+v; want the id and DM of a message it polled itself", m)
		}
	}
	if !slices.Equal(texts, []string{"one", "two", "three"}) {
		t.Errorf("the follower's agent got %q; want one, two, three in order", texts)
	}
	if m := r.fc.userMessages(); len(m) != 0 {
		t.Errorf("the leader handed %+v to an agent of its own", m)
	}
	r.srv.Wait(t, "the updates recorded delivered", func() bool { q, d := r.inbox.delivered(); return q == 0 && d == 3 })
	if sent := r.srv.Sent(r.bot, aliceUser); len(sent) != 0 {
		t.Errorf("alice was answered %q; want nothing (her agent got the messages)", sent[0].Text)
	}

	// A DM whose agent runs nowhere is answered by the leader, as ever.
	if got := r.say(bobUser, "anyone?"); !strings.Contains(got, "No agent is running") {
		t.Errorf("bob, with no agent anywhere, was answered %q", got)
	}
}

// An approval asked by an agent on the follower is shown by the follower;
// its button, polled by the leader, decides it on the follower, which
// tells its agent and edits the request.
func TestInboxForwardsApprovalButtons(t *testing.T) {
	r := newReplicas(t)
	before := len(r.srv.Sent(r.bot, aliceUser))
	a, err := r.svc2.Request(t.Context(), "alpha", "sess-alpha", "repo_change", "merge proposal/x", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	msg := r.srv.WaitSent(t, r.bot, aliceUser, before+1)[before]
	ans := r.press(aliceUser, msg.MessageID, "ap:"+a.ID+":y")
	if ans.Text != "Approved" {
		t.Errorf("the press was answered %q; want Approved", ans.Text)
	}
	if got := r.told2.all(); len(got) != 1 || got[0] != (rpc.ApprovalDecision{ApprovalID: a.ID, Status: "approved", By: "telegram:1002 (alice)"}) {
		t.Errorf("the follower's agent was told %+v; want the approval", got)
	}
	m, _ := r.srv.Message(r.bot, aliceUser, msg.MessageID)
	if !strings.HasPrefix(m.Text, "Approved: merge proposal/x") || m.Keyboard != nil {
		t.Errorf("the request now reads %q with %v; want the outcome without buttons", m.Text, m.Keyboard)
	}
}

// While updates of a DM wait in the inbox (queued for a replica that
// died, say), a new one waits behind them even when the agent now runs on
// the leader: the agent gets them in the order sent.
func TestInboxKeepsOrderBehindWaitingUpdates(t *testing.T) {
	r := newReplicas(t)
	r.fc2.Stop(t.Context(), "alpha") // the follower is gone: nothing takes its updates
	r.srv.InjectText(r.bot, aliceUser, "first")
	r.srv.Wait(t, "the first message queued", func() bool { q, _ := r.inbox.delivered(); return q == 1 })
	// alpha comes back on the leader (an operator started it there).
	r.inbox.mu.Lock()
	delete(r.inbox.runs, "alice")
	r.inbox.mu.Unlock()
	r.fc.bind("alice", "alpha")
	r.srv.InjectText(r.bot, aliceUser, "second")
	runInbox(t, r.gw)
	got := r.fc.waitMessages(t, 2)
	if got[0].Text != "first" || got[1].Text != "second" {
		t.Errorf("alpha on the leader got %q then %q; want first, second", got[0].Text, got[1].Text)
	}
}

// runInbox runs a gateway's inbox until the test ends.
func runInbox(t *testing.T, gw *gateway.Gateway) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); gw.RunInbox(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}
