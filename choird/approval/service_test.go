package approval_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/choird/approval"
	"choir/choird/approval/approvaltest"

	"choir/testkit"
)

// recorder is the notifier and the agent's side: what each was told.
type recorder struct {
	mu        sync.Mutex
	requested []approval.Approval
	decided   []approval.Approval
	agent     []approval.Approval
}

var _ approval.Notifier = (*recorder)(nil)

func (r *recorder) Requested(ctx context.Context, a approval.Approval) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requested = append(r.requested, a)
	return nil
}

func (r *recorder) Decided(ctx context.Context, a approval.Approval) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.decided = append(r.decided, a)
	return nil
}

func (r *recorder) onDecision(ctx context.Context, a approval.Approval) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.agent = append(r.agent, a)
	return nil
}

func (r *recorder) counts() (req, dec, agent int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.requested), len(r.decided), len(r.agent)
}

type fixture struct {
	svc   *approval.Service
	store *approvaltest.Store
	clock *approvaltest.Clock
	rec   *recorder
	logs  *testkit.Buffer
}

const timeout = 30 * time.Minute

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clock := approvaltest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	f := &fixture{store: approvaltest.NewStore(clock.Now), clock: clock, rec: &recorder{}, logs: &testkit.Buffer{}}
	f.svc = approval.New(approval.Config{
		Store: f.store, Notifier: f.rec, OnDecision: f.rec.onDecision, Timeout: timeout, Clock: clock,
		Log: slog.New(slog.NewJSONHandler(f.logs, nil)),
	})
	t.Cleanup(f.svc.Close)
	return f
}

func (f *fixture) request(t *testing.T, agent, summary string) approval.Approval {
	t.Helper()
	a, err := f.svc.Request(t.Context(), agent, "s-"+agent, "repo_change", summary, json.RawMessage(`{"branch":"proposal/x"}`))
	if err != nil {
		t.Fatalf("Request(%s) = %v", agent, err)
	}
	return a
}

func TestRequestDecideOnce(t *testing.T) {
	f := newFixture(t)
	a := f.request(t, "alpha", "add tool foo")
	if a.Status != approval.Pending || a.ID == "" || len("ap:"+a.ID+":y") > 64 {
		t.Fatalf("Request() = %+v; want a pending approval with a short id", a)
	}
	if req, _, _ := f.rec.counts(); req != 1 {
		t.Fatalf("notifier told of %d requests; want 1", req)
	}

	d, err := f.svc.Decide(t.Context(), a.ID, true, approval.BoundTo("telegram:1 (dm-a)", "alpha"))
	if err != nil || d.Status != approval.Approved || d.ResolvedBy != "telegram:1 (dm-a)" {
		t.Fatalf("Decide(approve) = %+v, %v; want approved by telegram:1", d, err)
	}
	if got := approval.OutcomeText(d); got != "Approved: add tool foo. Executing.\n(by telegram:1 (dm-a))" {
		t.Errorf("OutcomeText() = %q", got)
	}
	// A second press, and a late choirctl reject: nothing changes.
	again, err := f.svc.Decide(t.Context(), a.ID, false, approval.Operator("choirctl"))
	if !errors.Is(err, approval.ErrAlreadyDecided) || again.Status != approval.Approved || again.ResolvedBy != "telegram:1 (dm-a)" {
		t.Fatalf("second Decide() = %+v, %v; want the first decision and ErrAlreadyDecided", again, err)
	}
	if !strings.Contains(err.Error(), "already approved by telegram:1 (dm-a)") {
		t.Errorf("second Decide() error = %q; want it to say who decided", err)
	}
	if _, dec, agent := f.rec.counts(); dec != 1 || agent != 1 {
		t.Errorf("after two decisions: notifier told %d, agent told %d; want 1 and 1", dec, agent)
	}
	if f.rec.agent[0].Decision().Status != "approved" || f.rec.agent[0].Decision().ApprovalID != a.ID {
		t.Errorf("agent got %+v", f.rec.agent[0].Decision())
	}
	// The timeout was disarmed: passing it changes nothing.
	f.clock.Advance(2 * timeout)
	if got, _ := f.svc.Get(t.Context(), a.ID); got.Status != approval.Approved {
		t.Errorf("after the timeout passed, approval = %+v; want still approved", got)
	}
	for _, want := range []string{`"msg":"approval requested"`, `"msg":"approval decided"`, `"by":"telegram:1 (dm-a)"`, `"msg":"approval already decided; nothing changed"`} {
		if !strings.Contains(f.logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, f.logs)
		}
	}
}

func TestDecideScope(t *testing.T) {
	f := newFixture(t)
	a := f.request(t, "alpha", "change skill")
	for _, tc := range []struct {
		who approval.Decider
		ok  bool
	}{
		{approval.BoundTo("telegram:2 (dm-b)", "beta"), false},
		{approval.BoundTo("telegram:3 (dm-c)", ""), false},
		{approval.Decider{By: "nobody"}, false},
		{approval.Operator("telegram:9 (admin)"), true},
	} {
		_, err := f.svc.Decide(t.Context(), a.ID, false, tc.who)
		if tc.ok != (err == nil) || (!tc.ok && !errors.Is(err, approval.ErrNotAllowed)) {
			t.Errorf("Decide(%+v) = %v; want allowed=%v", tc.who, err, tc.ok)
		}
	}
	if _, err := f.svc.Decide(t.Context(), "no-such-id", true, approval.Operator("choirctl")); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("Decide(unknown) = %v; want ErrNotFound", err)
	}
}

func TestTimeoutRejects(t *testing.T) {
	f := newFixture(t)
	a := f.request(t, "alpha", "update image")
	f.clock.Advance(timeout - time.Second)
	if got, _ := f.svc.Get(t.Context(), a.ID); got.Status != approval.Pending {
		t.Fatalf("before the timeout, approval = %+v; want pending", got)
	}
	f.clock.Advance(time.Second)
	got, _ := f.svc.Get(t.Context(), a.ID)
	if got.Status != approval.Rejected || !got.TimedOut() {
		t.Fatalf("after the timeout, approval = %+v; want rejected by timeout", got)
	}
	if _, dec, agent := f.rec.counts(); dec != 1 || agent != 1 {
		t.Fatalf("after the timeout: notifier told %d, agent told %d; want 1 and 1", dec, agent)
	}
	if want := "Approval timed out: update image. Rejected automatically."; approval.OutcomeText(f.rec.decided[0]) != want {
		t.Errorf("OutcomeText = %q; want %q", approval.OutcomeText(f.rec.decided[0]), want)
	}
	if _, err := f.svc.Decide(t.Context(), a.ID, true, approval.Operator("choirctl")); !errors.Is(err, approval.ErrAlreadyDecided) {
		t.Errorf("late Decide() = %v; want ErrAlreadyDecided", err)
	}
	if !strings.Contains(f.logs.String(), `"msg":"approval timed out"`) {
		t.Errorf("log lacks the timeout:\n%s", f.logs)
	}
}

func TestStartRearms(t *testing.T) {
	f := newFixture(t)
	old := f.request(t, "alpha", "old one")
	f.clock.Advance(20 * time.Minute)
	fresh := f.request(t, "beta", "fresh one")
	// choird restarts 15 minutes later: a new Service over the same store.
	f.svc.Close()
	f.clock.Advance(15 * time.Minute)
	rec := &recorder{}
	svc := approval.New(approval.Config{Store: f.store, Notifier: rec, OnDecision: rec.onDecision, Timeout: timeout, Clock: f.clock})
	t.Cleanup(svc.Close)
	r, err := svc.Start(t.Context())
	if err != nil || r.Expired != 1 || r.Armed != 1 {
		t.Fatalf("Start() = %+v, %v; want 1 expired, 1 armed", r, err)
	}
	if got, _ := svc.Get(t.Context(), old.ID); !got.TimedOut() {
		t.Errorf("past-due approval after Start = %+v; want rejected by timeout", got)
	}
	f.clock.Advance(14 * time.Minute)
	if got, _ := svc.Get(t.Context(), fresh.ID); got.Status != approval.Pending {
		t.Errorf("approval with 15 minutes left, 14 later = %+v; want pending", got)
	}
	f.clock.Advance(time.Minute + time.Second)
	if got, _ := svc.Get(t.Context(), fresh.ID); !got.TimedOut() {
		t.Errorf("re-armed approval after its timeout = %+v; want rejected by timeout", got)
	}
	if _, dec, agent := rec.counts(); dec != 2 || agent != 2 {
		t.Errorf("told notifier %d, agent %d; want 2 and 2", dec, agent)
	}
}

func TestListAndSummarize(t *testing.T) {
	f := newFixture(t)
	f.request(t, "alpha", "one")
	f.request(t, "beta", "two")
	f.request(t, "alpha", "three")
	all, _ := f.svc.List(t.Context(), "")
	alpha, _ := f.svc.List(t.Context(), "alpha")
	if len(all) != 3 || len(alpha) != 2 || alpha[0].Summary != "one" || alpha[1].Summary != "three" {
		t.Errorf("List() = %d, List(alpha) = %+v; want 3 and [one three]", len(all), alpha)
	}
	a, err := f.svc.Request(t.Context(), "alpha", "", "tool_proposal", "", json.RawMessage(`{"name":"fetch","description":"Fetch a URL"}`))
	if err != nil || a.Summary != "Fetch a URL" {
		t.Errorf("Request without summary = %+v, %v; want the payload's description", a, err)
	}
	for _, tc := range []struct{ typ, payload, want string }{
		{"config_change", `{}`, "config_change"},
		{"config_change", `{"a":1}`, `config_change {"a":1}`},
		{"tool_proposal", `{"title":" T "}`, "T"},
		{"skill", `{"spec":{"name":"triage","states":{}},"rationale":"the user asked"}`, "new or changed skill triage: the user asked"},
		{"tool", `{"manifest":{"llm":{"name":"acme.wc"}},"rationale":"count words"}`, "new or changed tool acme.wc (manifest only; a person writes its code): count words"},
		{"config_change", `{"change":"use o3 for core","rationale":"harder tasks"}`, "configuration change: use o3 for core (harder tasks)"},
		{"repo_change", `{"branch":"proposal/s1/soul","description":"calmer"}`, "merge branch proposal/s1/soul into the agent's repo (review it first: git log -p proposal/s1/soul): calmer"},
	} {
		if got := approval.Summarize(tc.typ, json.RawMessage(tc.payload)); got != tc.want {
			t.Errorf("Summarize(%s, %s) = %q; want %q", tc.typ, tc.payload, got, tc.want)
		}
	}
}

// TestApprovedRequestsAreApplied: an approval runs Apply once with the
// approved request, in the background; a rejection and a timeout never
// do; Close waits for an Apply in progress.
func TestApprovedRequestsAreApplied(t *testing.T) {
	clock := approvaltest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	var mu sync.Mutex
	var applied []approval.Approval
	svc := approval.New(approval.Config{Store: approvaltest.NewStore(clock.Now), Timeout: timeout, Clock: clock,
		Apply: func(ctx context.Context, a approval.Approval) {
			mu.Lock()
			applied = append(applied, a)
			mu.Unlock()
		}})
	ctx := t.Context()
	ask := func(summary string) approval.Approval {
		a, err := svc.Request(ctx, "alpha", "s-1", "skill", summary, json.RawMessage(`{"spec":{}}`))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	yes, no, late := ask("skill yes"), ask("skill no"), ask("skill late")
	if _, err := svc.Decide(ctx, yes.ID, true, approval.Operator("choirctl")); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Decide(ctx, no.ID, false, approval.Operator("choirctl")); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * timeout) // late times out: rejected
	svc.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(applied) != 1 || applied[0].ID != yes.ID || applied[0].Status != approval.Approved || string(applied[0].Payload) != `{"spec":{}}` {
		t.Fatalf("applied %+v; want only %s (approved), with its payload", applied, yes.ID)
	}
	if got, _ := svc.Get(ctx, late.ID); got.Status == approval.Approved {
		t.Error("the timed-out request was approved")
	}
}

// A request asked under its own id is shown once: asked again (its asker
// came back after a restart) it is the same approval, pending or decided,
// and nobody is asked twice.
func TestRequestOnceAsksOnce(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	ask := approval.Approval{ID: "run-r-0123456789ab-abcdef012345", AgentID: "alpha", RequestType: "run_commit", Summary: "commit run r-0123456789ab"}
	a, created, err := f.svc.RequestOnce(ctx, ask)
	if err != nil || !created || a.ID != ask.ID || a.Status != approval.Pending {
		t.Fatalf("RequestOnce() = %+v, %v, %v; want a new pending approval under its id", a, created, err)
	}
	again, created, err := f.svc.RequestOnce(ctx, ask)
	if err != nil || created || again.ID != a.ID || !again.CreatedAt.Equal(a.CreatedAt) {
		t.Fatalf("RequestOnce() again = %+v, %v, %v; want the stored one, not created", again, created, err)
	}
	if req, _, _ := f.rec.counts(); req != 1 {
		t.Errorf("the DM was asked %d times; want once", req)
	}
	if _, err := f.svc.Decide(ctx, a.ID, true, approval.Operator("choirctl")); err != nil {
		t.Fatal(err)
	}
	decided, created, err := f.svc.RequestOnce(ctx, ask)
	if err != nil || created || decided.Status != approval.Approved || decided.ResolvedBy != "choirctl" {
		t.Errorf("RequestOnce() after the decision = %+v, %v, %v; want the approval as decided", decided, created, err)
	}
	// Its timeout was armed once, and disarmed by the decision.
	f.clock.Advance(2 * timeout)
	if got, _ := f.svc.Get(ctx, a.ID); got.Status != approval.Approved {
		t.Errorf("after its timeout passed = %s; want the decision to stand", got.Status)
	}
	for _, bad := range []string{"", "has:colon", "has space", strings.Repeat("x", approval.MaxID+1)} {
		if _, _, err := f.svc.RequestOnce(ctx, approval.Approval{ID: bad, AgentID: "alpha", RequestType: "run_commit"}); err == nil {
			t.Errorf("RequestOnce(id %q) = nil; want the id refused", bad)
		}
	}
}

// An approval asked once times out like any other.
func TestRequestOnceTimesOut(t *testing.T) {
	f := newFixture(t)
	a, _, err := f.svc.RequestOnce(t.Context(), approval.Approval{ID: "run-r-1", AgentID: "alpha", RequestType: "run_commit", Summary: "commit run r-1"})
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(timeout)
	got, err := f.svc.Get(t.Context(), a.ID)
	if err != nil || !got.TimedOut() {
		t.Fatalf("after the timeout = %+v, %v; want rejected by timeout", got, err)
	}
	if _, dec, agent := f.rec.counts(); dec != 1 || agent != 1 {
		t.Errorf("after the timeout the DM heard %d outcomes and the asker %d; want one each", dec, agent)
	}
}
