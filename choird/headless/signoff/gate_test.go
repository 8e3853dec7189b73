package signoff_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/choird/approval"
	"choir/choird/approval/approvaltest"
	"choir/choird/headless"
	"choir/choird/headless/signoff"
)

const (
	base  = "0123456789abcdef0123456789abcdef01234567"
	patch = "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
)

// diff is the patch a run recorded: answer.txt changed, test.sh added, a
// binary file.
const diff = `diff --git a/answer.txt b/answer.txt
index 1111111..2222222 100644
--- a/answer.txt
+++ b/answer.txt
@@ -1 +1 @@
-41
+42
diff --git a/test.sh b/test.sh
new file mode 100755
index 0000000..3333333
--- /dev/null
+++ b/test.sh
@@ -0,0 +1,3 @@
+#!/bin/sh
+--- not a header
+echo ok
diff --git a/logo.png b/logo.png
index 4444444..5555555 100644
GIT binary patch
literal 3
KcmZ?wbN~PV00000

`

// patches is the object store: the one patch.
type patches struct{}

func (patches) Get(h string) ([]byte, error) {
	if h != patch {
		return nil, errors.New("no such object")
	}
	return []byte(diff), nil
}

var _ signoff.Patches = patches{}

// dm records what the agent's DM was shown.
type dm struct {
	mu                 sync.Mutex
	requested, decided []approval.Approval
}

func (d *dm) Requested(ctx context.Context, a approval.Approval) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.requested = append(d.requested, a)
	return nil
}

func (d *dm) Decided(ctx context.Context, a approval.Approval) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.decided = append(d.decided, a)
	return nil
}

func (d *dm) counts() (int, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.requested), len(d.decided)
}

type fixture struct {
	dir   *headless.Director
	gate  *signoff.Gate
	svc   *approval.Service
	store *approvaltest.Store
	clock *approvaltest.Clock
	dm    *dm
}

const timeout = time.Hour

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{dir: headless.New(headless.NewMemStore()), dm: &dm{}}
	f.dir.KnownAgent = func(id string) bool { return id == "alpha" }
	f.clock = approvaltest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	f.store = approvaltest.NewStore(f.clock.Now)
	f.gate = &signoff.Gate{Director: f.dir, Patches: patches{}}
	f.svc = approval.New(approval.Config{Store: f.store, Notifier: f.dm, Timeout: timeout, Clock: f.clock,
		OnDecision: func(ctx context.Context, a approval.Approval) error {
			if a.RequestType == signoff.Type {
				return f.gate.Decided(ctx, a)
			}
			return nil
		}})
	f.gate.Approvals = f.svc
	t.Cleanup(f.svc.Close)
	return f
}

// waiting is a run of a work item of risk that passed its verifier and
// asked to commit patch.
func (f *fixture) waiting(t *testing.T, risk headless.Risk) headless.Run {
	t.Helper()
	ctx := t.Context()
	it, err := f.dir.AddWorkItem(ctx, headless.NewWorkItem{Agent: "alpha", Description: "make the failing test pass\nmore words",
		Acceptance: []string{"test.sh passes"}, Verifiers: []string{"test"}, Risk: risk})
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.dir.StartRun(ctx, headless.NewRun{WorkItem: it.ID, Mood: "CALM", Trigger: "manual"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.dir.MarkRunning(ctx, r.ID, base, "/wt/"+r.ID, ""); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"hash": patch, "files": []string{"answer.txt", "test.sh", "logo.png"}})
	if _, _, err := f.dir.Record(ctx, r.ID, headless.KindPatchReceipt, body, nil, ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.dir.Attest(ctx, r.ID, headless.Attestation{Verifier: "test", Passed: true, Summary: "passed in 0.1s", Patch: patch}, ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.dir.RequestCommit(ctx, r.ID, headless.CommitRequest{Summary: "set the answer", Patch: patch}, ""); err != nil {
		t.Fatal(err)
	}
	return r
}

// decisions are the run's CommitDecision bodies.
func (f *fixture) decisions(t *testing.T, runID string) []headless.CommitDecisionBody {
	t.Helper()
	rs, err := f.dir.Receipts(t.Context(), runID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []headless.CommitDecisionBody
	for _, rec := range rs {
		if rec.Kind == headless.KindCommitDecision {
			var b headless.CommitDecisionBody
			json.Unmarshal(rec.Body, &b)
			out = append(out, b)
		}
	}
	return out
}

func TestDiffStat(t *testing.T) {
	got := signoff.DiffStat([]byte(diff))
	want := []signoff.File{{Path: "answer.txt", Added: 1, Deleted: 1}, {Path: "test.sh", Added: 3}, {Path: "logo.png", Binary: true}}
	if len(got) != len(want) {
		t.Fatalf("DiffStat() = %+v; want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("DiffStat()[%d] = %+v; want %+v", i, got[i], want[i])
		}
	}
	if got := signoff.DiffStat(nil); len(got) != 0 {
		t.Errorf("DiffStat(nil) = %+v; want none", got)
	}
}

// A waiting run is asked about once, in the agent's DM, with what the
// person decides on; approving it records the run's decision as theirs.
func TestAwaitAsksOnceAndTheApprovalDecidesTheRun(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	r := f.waiting(t, headless.RiskHigh)
	if err := f.gate.Await(ctx, r.ID); err != nil {
		t.Fatalf("Await() = %v", err)
	}
	if err := f.gate.Await(ctx, r.ID); err != nil { // choird restarted while it waited
		t.Fatalf("Await() again = %v", err)
	}
	pending, _ := f.svc.List(ctx, "alpha")
	if req, _ := f.dm.counts(); req != 1 || len(pending) != 1 {
		t.Fatalf("DM asked %d times, %d pending; want one approval asked once", req, len(pending))
	}
	a := pending[0]
	if a.ID != signoff.ID(r.ID, patch) || a.RequestType != signoff.Type || a.AgentID != "alpha" {
		t.Errorf("approval = %+v; want %s of alpha under %s", a, signoff.Type, signoff.ID(r.ID, patch))
	}
	for _, want := range []string{r.ID, r.WorkItem, "make the failing test pass", "high risk", "3 files, +4 -1",
		"answer.txt +1 -1", "test.sh +3 -0", "logo.png (binary)", "test passed (" + r.ID + "#3)", r.ID + "#1-4"} {
		if !strings.Contains(a.Summary, want) {
			t.Errorf("summary %q lacks %q", a.Summary, want)
		}
	}
	if strings.Contains(a.Summary, "more words") || len("ap:"+a.ID+":y") > 64 {
		t.Errorf("summary %q or id %q: want one line, an id that fits a button", a.Summary, a.ID)
	}
	var p signoff.Payload
	if err := json.Unmarshal(a.Payload, &p); err != nil || p.Run != r.ID || p.Patch != patch || len(p.Verifiers) != 1 || p.Request != r.ID+"#4" {
		t.Errorf("payload = %s (%v)", a.Payload, err)
	}

	if _, err := f.svc.Decide(ctx, a.ID, true, approval.Operator("choirctl")); err != nil {
		t.Fatal(err)
	}
	ds := f.decisions(t, r.ID)
	if len(ds) != 1 || !ds[0].Approved || ds[0].By != "human:choirctl" || ds[0].Patch != patch {
		t.Fatalf("run's decisions = %+v; want one approval by human:choirctl", ds)
	}
	// choirctl run reject afterwards: the approval's decision stands.
	_, _, err := f.gate.DecideRun(ctx, r.ID, false, "bob", "changed my mind")
	if !errors.Is(err, approval.ErrAlreadyDecided) || !strings.Contains(err.Error(), "approved by choirctl") {
		t.Errorf("DecideRun(reject) after the approval = %v; want already approved by choirctl", err)
	}
	if ds := f.decisions(t, r.ID); len(ds) != 1 {
		t.Errorf("run's decisions after the late rejection = %+v; want the one approval", ds)
	}
}

// choirctl run reject decides the run's approval, with its reason; the
// DM's button pressed afterwards is told it is decided.
func TestDecideRunDecidesTheSameApproval(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	r := f.waiting(t, headless.RiskHigh)
	if err := f.gate.Await(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	rec, fresh, err := f.gate.DecideRun(ctx, r.ID, false, "bob", "not like this")
	if err != nil || !fresh || rec.Kind != headless.KindCommitDecision {
		t.Fatalf("DecideRun(reject) = %+v, %v, %v; want the CommitDecision", rec, fresh, err)
	}
	ds := f.decisions(t, r.ID)
	if len(ds) != 1 || ds[0].Approved || ds[0].By != "human:bob" || ds[0].Reason != "not like this" {
		t.Errorf("run's decisions = %+v; want bob's rejection with its reason", ds)
	}
	a, err := f.svc.Get(ctx, signoff.ID(r.ID, patch))
	if err != nil || a.Status != approval.Rejected || a.ResolvedBy != "bob" {
		t.Errorf("the run's approval = %+v, %v; want rejected by bob", a, err)
	}
	if _, err := f.svc.Decide(ctx, a.ID, true, approval.Operator("telegram:1 (dm)")); !errors.Is(err, approval.ErrAlreadyDecided) {
		t.Errorf("the button after run reject = %v; want ErrAlreadyDecided", err)
	}
	if ds := f.decisions(t, r.ID); len(ds) != 1 {
		t.Errorf("run's decisions after the button = %+v; want bob's only", ds)
	}
	if _, dec := f.dm.counts(); dec != 1 {
		t.Errorf("DM told %d outcomes; want one", dec)
	}
}

// choirctl run approve before the runner asked: the approval is made then
// and decided, and the runner's later ask finds it decided.
func TestDecideRunBeforeAwait(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	r := f.waiting(t, headless.RiskHigh)
	if _, _, err := f.gate.DecideRun(ctx, r.ID, true, "ann", ""); err != nil {
		t.Fatal(err)
	}
	if err := f.gate.Await(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if ds := f.decisions(t, r.ID); len(ds) != 1 || !ds[0].Approved || ds[0].By != "human:ann" {
		t.Errorf("run's decisions = %+v; want ann's approval once", ds)
	}
}

// Nobody decides: the timeout rejects the run.
func TestTimeoutRejectsTheRun(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	r := f.waiting(t, headless.RiskHigh)
	if err := f.gate.Await(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(timeout)
	ds := f.decisions(t, r.ID)
	if len(ds) != 1 || ds[0].Approved || ds[0].By != approval.ByTimeout || !strings.Contains(ds[0].Reason, "approval_timeout_ms") {
		t.Fatalf("run's decisions after the timeout = %+v; want a rejection by the timeout", ds)
	}
	if hr, _ := f.dir.Run(ctx, r.ID); hr.Status != headless.RunRunning {
		t.Errorf("run after the timeout is %s; want running (the loop ends it)", hr.Status)
	}
	if _, dec := f.dm.counts(); dec != 1 {
		t.Errorf("DM told %d outcomes; want the timeout once", dec)
	}
}

// choird killed after the approval was decided and before the run heard
// of it: when the run asks again at the next start, the decision is
// recorded, once.
func TestAwaitAppliesADecisionTheRunMissed(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	r := f.waiting(t, headless.RiskHigh)
	if err := f.gate.Await(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Resolve(ctx, signoff.ID(r.ID, patch), approval.Approved, "telegram:1 (dm)"); err != nil {
		t.Fatal(err)
	}
	if ds := f.decisions(t, r.ID); len(ds) != 0 {
		t.Fatalf("decisions before the restart = %+v; want none", ds)
	}
	for range 2 {
		if err := f.gate.Await(ctx, r.ID); err != nil {
			t.Fatal(err)
		}
	}
	if ds := f.decisions(t, r.ID); len(ds) != 1 || !ds[0].Approved || ds[0].By != "human:telegram:1 (dm)" {
		t.Errorf("decisions after the restart = %+v; want the missed approval once", ds)
	}
	if req, _ := f.dm.counts(); req != 1 {
		t.Errorf("DM asked %d times; want once", req)
	}
}

// A run that needs no human is decided on the director as before, and
// never asked about.
func TestDecideRunWithoutAHuman(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	r := f.waiting(t, headless.RiskLow)
	if err := f.gate.Await(ctx, r.ID); !errors.Is(err, signoff.ErrNotWaiting) {
		t.Errorf("Await(low risk) = %v; want ErrNotWaiting", err)
	}
	if _, _, err := f.gate.DecideRun(ctx, r.ID, true, "ann", ""); err != nil {
		t.Fatal(err)
	}
	if ds := f.decisions(t, r.ID); len(ds) != 1 || ds[0].By != "human:ann" {
		t.Errorf("decisions = %+v; want ann's", ds)
	}
	if pending, _ := f.svc.List(ctx, ""); len(pending) != 0 {
		t.Errorf("approvals = %+v; want none", pending)
	}
}
