package headless

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const (
	base    = "0123456789abcdef0123456789abcdef01234567"
	commit  = "89abcdef0123456789abcdef0123456789abcdef"
	patchID = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
)

func newDirector(t *testing.T) (*Director, context.Context) {
	t.Helper()
	d := New(NewMemStore())
	d.KnownAgent = func(id string) bool { return id == "alpha" || id == "beta" }
	return d, context.Background()
}

func mustItem(t *testing.T, d *Director, n NewWorkItem) WorkItem {
	t.Helper()
	if n.Agent == "" {
		n.Agent = "alpha"
	}
	if n.Description == "" {
		n.Description = "make the failing test pass"
	}
	if n.Acceptance == nil {
		n.Acceptance = []string{"go test ./... passes"}
	}
	it, err := d.AddWorkItem(context.Background(), n)
	if err != nil {
		t.Fatalf("AddWorkItem(%+v) = %v", n, err)
	}
	return it
}

func mustRun(t *testing.T, d *Director, item string) Run {
	t.Helper()
	r, err := d.StartRun(context.Background(), NewRun{WorkItem: item})
	if err != nil {
		t.Fatalf("StartRun(%s) = %v", item, err)
	}
	return r
}

func TestAddWorkItemRefusesBadInput(t *testing.T) {
	d, ctx := newDirector(t)
	dep := mustItem(t, d, NewWorkItem{})
	ok := func() NewWorkItem {
		return NewWorkItem{Agent: "alpha", Description: "fix it", Acceptance: []string{"tests pass"}}
	}
	for _, tc := range []struct {
		name, where string
		edit        func(*NewWorkItem)
	}{
		{"unknown agent", "agent", func(n *NewWorkItem) { n.Agent = "gamma" }},
		{"bad agent id", "agent", func(n *NewWorkItem) { n.Agent = "../x" }},
		{"empty description", "description", func(n *NewWorkItem) { n.Description = "  " }},
		{"huge description", "description", func(n *NewWorkItem) { n.Description = strings.Repeat("é", MaxDescription+1) }},
		{"invalid utf-8", "description", func(n *NewWorkItem) { n.Description = "a\xffb" }},
		{"NUL", "description", func(n *NewWorkItem) { n.Description = "a\x00b" }},
		{"no acceptance", "acceptance", func(n *NewWorkItem) { n.Acceptance = nil }},
		{"empty criterion", "acceptance[1]", func(n *NewWorkItem) { n.Acceptance = []string{"a", ""} }},
		{"duplicate criterion", "acceptance[1]", func(n *NewWorkItem) { n.Acceptance = []string{"a", "a"} }},
		{"too many criteria", "acceptance", func(n *NewWorkItem) { n.Acceptance = make([]string, MaxListItems+1) }},
		{"bad verifier", "verifiers[0]", func(n *NewWorkItem) { n.Verifiers = []string{"Go Test; rm -rf /"} }},
		{"bad risk", "risk", func(n *NewWorkItem) { n.Risk = "extreme" }},
		{"bad dependency id", "depends_on[0]", func(n *NewWorkItem) { n.DependsOn = []string{"w-nothex"} }},
		{"missing dependency", "depends_on[0]", func(n *NewWorkItem) { n.DependsOn = []string{"w-000000000000"} }},
		{"duplicate dependency", "depends_on[1]", func(n *NewWorkItem) { n.DependsOn = []string{dep.ID, dep.ID} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := ok()
			tc.edit(&n)
			_, err := d.AddWorkItem(ctx, n)
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Where != tc.where || ve.Fix == "" || !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("AddWorkItem() = %v; want a ValidationError at %s with a fix", err, tc.where)
			}
		})
	}
	if list, _ := d.WorkItems(ctx, WorkFilter{}); len(list) != 1 {
		t.Errorf("WorkItems() after refusals = %d items; want only the first", len(list))
	}
}

func TestDependenciesMakeReadyAndRefuseCycles(t *testing.T) {
	d, ctx := newDirector(t)
	a := mustItem(t, d, NewWorkItem{})
	b := mustItem(t, d, NewWorkItem{DependsOn: []string{a.ID}})
	c := mustItem(t, d, NewWorkItem{DependsOn: []string{b.ID}})
	if a.Status != WorkReady || b.Status != WorkOpen || c.Status != WorkOpen {
		t.Fatalf("statuses = %s %s %s; want ready open open", a.Status, b.Status, c.Status)
	}
	// a → b → c; making a depend on c closes a loop.
	_, err := d.UpdateWorkItem(ctx, a.ID, WorkItemUpdate{DependsOn: &[]string{c.ID}})
	if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "cycle") || !strings.Contains(err.Error(), c.ID) {
		t.Fatalf("UpdateWorkItem(cycle) = %v; want a cycle named", err)
	}
	if _, err := d.UpdateWorkItem(ctx, a.ID, WorkItemUpdate{DependsOn: &[]string{a.ID}}); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("UpdateWorkItem(self) = %v; want refused", err)
	}
	if _, err := d.StartRun(ctx, NewRun{WorkItem: b.ID}); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), a.ID) {
		t.Errorf("StartRun(b) before a is done = %v; want refused naming %s", err, a.ID)
	}
	commitRun(t, d, mustRun(t, d, a.ID))
	if got, _ := d.WorkItem(ctx, b.ID); got.Status != WorkReady {
		t.Errorf("b after a committed = %s; want ready", got.Status)
	}
	if got, _ := d.WorkItem(ctx, a.ID); got.Status != WorkDone {
		t.Errorf("a after its commit = %s; want done", got.Status)
	}
	// Cancelling b blocks c.
	if _, err := d.CancelWorkItem(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := d.WorkItem(ctx, c.ID); got.Status != WorkBlocked {
		t.Errorf("c after b cancelled = %s; want blocked", got.Status)
	}
	if ready, _ := d.WorkItems(ctx, WorkFilter{Status: WorkReady}); len(ready) != 0 {
		t.Errorf("WorkItems(ready) = %v; want none", ready)
	}
}

// commitRun takes a queued run through to its commit.
func commitRun(t *testing.T, d *Director, r Run) {
	t.Helper()
	ctx := context.Background()
	steps := []func() error{
		func() error { _, _, err := d.MarkRunning(ctx, r.ID, base, "/wt/"+r.ID, ""); return err },
		func() error {
			_, _, err := d.Attest(ctx, r.ID, Attestation{Verifier: "go-test", Passed: true, Summary: "ok"}, "")
			return err
		},
		func() error {
			_, _, err := d.RequestCommit(ctx, r.ID, CommitRequest{Summary: "fix", Patch: patchID}, "")
			return err
		},
		func() error { _, _, err := d.DecideCommit(ctx, r.ID, true, PolicyDecider, "", ""); return err },
		func() error { _, _, err := d.RecordCommit(ctx, r.ID, commit, ""); return err },
	}
	for i, f := range steps {
		if err := f(); err != nil {
			t.Fatalf("commit run %s, step %d: %v", r.ID, i, err)
		}
	}
}

func TestOneActiveRunPerWorkItem(t *testing.T) {
	d, ctx := newDirector(t)
	it := mustItem(t, d, NewWorkItem{})
	r := mustRun(t, d, it.ID)
	if r.Status != RunQueued || r.Mood != "CALM" || r.Trigger != "manual" || r.Agent != "alpha" {
		t.Errorf("StartRun() = %+v; want queued, CALM, manual, alpha", r)
	}
	if _, err := d.StartRun(ctx, NewRun{WorkItem: it.ID}); !errors.Is(err, ErrActiveRun) {
		t.Fatalf("second StartRun() = %v; want ErrActiveRun", err)
	}
	if got, _ := d.WorkItem(ctx, it.ID); got.Status != WorkRunning {
		t.Errorf("work item with a queued run = %s; want running", got.Status)
	}
	if _, _, err := d.EndRun(ctx, r.ID, RunCancelled, "operator changed their mind", ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := d.WorkItem(ctx, it.ID); got.Status != WorkReady {
		t.Errorf("work item after its run was cancelled = %s; want ready again", got.Status)
	}
	r2 := mustRun(t, d, it.ID)
	if runs, _ := d.Runs(ctx, "", it.ID); len(runs) != 2 || runs[0].ID != r2.ID {
		t.Errorf("Runs(item) = %v; want two, newest first", runs)
	}
	for _, bad := range []NewRun{{WorkItem: "nope"}, {WorkItem: it.ID, Mood: "calm; drop"}, {WorkItem: it.ID, Budgets: Budgets{Tokens: -1}}, {WorkItem: it.ID, Trigger: "a\nb"}} {
		if _, err := d.StartRun(ctx, bad); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("StartRun(%+v) = %v; want refused as invalid", bad, err)
		}
	}
}

func TestRunStatusIsChecked(t *testing.T) {
	d, ctx := newDirector(t)
	it := mustItem(t, d, NewWorkItem{Verifiers: []string{"go-test"}})
	r := mustRun(t, d, it.ID)
	note := Note{Type: NoteObservation, Text: "the test fails on nil input"}
	if _, _, err := d.AddNote(ctx, r.ID, note, ""); !errors.Is(err, ErrConflict) {
		t.Errorf("AddNote on a queued run = %v; want refused", err)
	}
	if _, _, err := d.RequestCommit(ctx, r.ID, CommitRequest{Summary: "x", Patch: patchID}, ""); !errors.Is(err, ErrConflict) {
		t.Errorf("RequestCommit on a queued run = %v; want refused", err)
	}
	if _, _, err := d.MarkRunning(ctx, r.ID, base, "/wt/1", ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Attest(ctx, r.ID, Attestation{Verifier: "go-test", Passed: false, Signature: "TestX: nil deref"}, ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.RequestCommit(ctx, r.ID, CommitRequest{Summary: "x", Patch: patchID}, ""); err != nil {
		t.Fatal(err)
	}
	// The verifier failed: the policy refuses to approve.
	_, _, err := d.DecideCommit(ctx, r.ID, true, PolicyDecider, "", "")
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "go-test failed") {
		t.Fatalf("DecideCommit(approve) after a failed verifier = %v; want refused naming go-test", err)
	}
	if _, _, err := d.RecordCommit(ctx, r.ID, commit, ""); !errors.Is(err, ErrConflict) {
		t.Errorf("RecordCommit without approval = %v; want refused", err)
	}
	if _, _, err := d.EndRun(ctx, r.ID, RunFailed, "verifier go-test failed", ""); err != nil {
		t.Fatal(err)
	}
	// Nothing after an end: no commit of a failed run, no note, no verify.
	for name, f := range map[string]func() error{
		"commit": func() error { _, _, err := d.RecordCommit(ctx, r.ID, commit, ""); return err },
		"decide": func() error { _, _, err := d.DecideCommit(ctx, r.ID, true, PolicyDecider, "", ""); return err },
		"request": func() error {
			_, _, err := d.RequestCommit(ctx, r.ID, CommitRequest{Summary: "x", Patch: patchID}, "")
			return err
		},
		"note": func() error { _, _, err := d.AddNote(ctx, r.ID, note, ""); return err },
		"verify": func() error {
			_, _, err := d.Attest(ctx, r.ID, Attestation{Verifier: "go-test", Passed: true}, "")
			return err
		},
		"end": func() error { _, _, err := d.EndRun(ctx, r.ID, RunDiscarded, "again", ""); return err },
		"record": func() error {
			_, _, err := d.Record(ctx, r.ID, KindAnomaly, json.RawMessage(`{"x":1}`), nil, "")
			return err
		},
	} {
		if err := f(); !errors.Is(err, ErrRunEnded) {
			t.Errorf("%s on a failed run = %v; want ErrRunEnded", name, err)
		}
	}
	got, _ := d.Run(ctx, r.ID)
	if got.Status != RunFailed || got.Ended.IsZero() || got.Base != base || got.Worktree != "/wt/1" {
		t.Errorf("Run() = %+v; want failed with its end time, base and worktree", got)
	}
	rs, _ := d.Receipts(ctx, r.ID, 0)
	kinds := []string{}
	for i, rec := range rs {
		kinds = append(kinds, string(rec.Kind))
		if rec.Seq != int64(i+1) {
			t.Errorf("receipt %d has seq %d; want %d (no gaps)", i, rec.Seq, i+1)
		}
	}
	if want := "RunStarted VerifierResults CommitRequest RunEnded"; strings.Join(kinds, " ") != want {
		t.Errorf("receipts = %s; want %s", strings.Join(kinds, " "), want)
	}
}

func TestAppendIsIdempotentByKey(t *testing.T) {
	d, ctx := newDirector(t)
	r := mustRun(t, d, mustItem(t, d, NewWorkItem{}).ID)
	if _, _, err := d.MarkRunning(ctx, r.ID, base, "/wt/1", "start-1"); err != nil {
		t.Fatal(err)
	}
	// A resend of the start after a crash appends nothing and succeeds,
	// though the run is no longer queued.
	rec, fresh, err := d.MarkRunning(ctx, r.ID, base, "/wt/1", "start-1")
	if err != nil || fresh || rec.Seq != 1 {
		t.Fatalf("MarkRunning resent = %+v, %v, %v; want the first receipt, not fresh", rec, fresh, err)
	}
	note := Note{Type: NoteHypothesis, Text: "nil input panics", Test: "run TestNil", Budget: &Budgets{ToolCalls: 3}}
	first, fresh, err := d.AddNote(ctx, r.ID, note, "note-1")
	if err != nil || !fresh {
		t.Fatalf("AddNote() = %v, %v", fresh, err)
	}
	again, fresh, err := d.AddNote(ctx, r.ID, note, "note-1")
	if err != nil || fresh || again.Seq != first.Seq {
		t.Errorf("AddNote resent = seq %d, fresh %v, %v; want seq %d, not fresh", again.Seq, fresh, err, first.Seq)
	}
	other := note
	other.Text = "something else"
	if _, _, err := d.AddNote(ctx, r.ID, other, "note-1"); !errors.Is(err, ErrKeyReused) {
		t.Errorf("AddNote with a reused key and another body = %v; want ErrKeyReused", err)
	}
	if _, _, err := d.AddNote(ctx, r.ID, note, "bad key with spaces"); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("AddNote with a bad key = %v; want refused", err)
	}
	// The end's resend after the run ended is answered, not refused.
	if _, _, err := d.EndRun(ctx, r.ID, RunDiscarded, "crash recovery", "end-1"); err != nil {
		t.Fatal(err)
	}
	if _, fresh, err := d.EndRun(ctx, r.ID, RunDiscarded, "crash recovery", "end-1"); err != nil || fresh {
		t.Errorf("EndRun resent = %v, %v; want the first receipt", fresh, err)
	}
	if rs, _ := d.Receipts(ctx, r.ID, 0); len(rs) != 3 {
		t.Errorf("receipts after resends = %d; want 3", len(rs))
	}
}

func TestNotesNeedTheirFields(t *testing.T) {
	b := &Budgets{Tokens: 1000}
	for _, tc := range []struct {
		name  string
		note  Note
		where string // "" means accepted
	}{
		{"observation", Note{Type: NoteObservation, Text: "x"}, ""},
		{"hypothesis without test", Note{Type: NoteHypothesis, Text: "x", Budget: b}, "test"},
		{"hypothesis without budget", Note{Type: NoteHypothesis, Text: "x", Test: "t"}, "budget"},
		{"hypothesis with empty budget", Note{Type: NoteHypothesis, Text: "x", Test: "t", Budget: &Budgets{}}, "budget"},
		{"hypothesis with negative budget", Note{Type: NoteHypothesis, Text: "x", Test: "t", Budget: &Budgets{Tokens: 5, ToolCalls: -1}}, "budget"},
		{"hypothesis", Note{Type: NoteHypothesis, Text: "x", Test: "t", Budget: b}, ""},
		{"hyperthesis without bound", Note{Type: NoteHyperthesis, Text: "x"}, "bound"},
		{"hyperthesis", Note{Type: NoteHyperthesis, Text: "x", Bound: "quarantine"}, ""},
		{"conjecture without scope", Note{Type: NoteConjecture, Claim: "c", Test: "t", Edge: "e", DeltaO: "d"}, "scope"},
		{"conjecture", Note{Type: NoteConjecture, Claim: "c", Test: "t", Edge: "e", DeltaO: "d", Scope: "s"}, ""},
		{"drive without anti-drive", Note{Type: NoteDrive, Text: "x"}, "anti_drive"},
		{"believe without effect", Note{Type: NoteBelieve, Text: "x", Trigger: "t"}, "effect"},
		{"observation with a test", Note{Type: NoteObservation, Text: "x", Test: "t"}, "test"},
		{"request verify", Note{Type: NoteRequestVerify, Text: "x", Verifiers: []string{"go-test"}}, ""},
		{"request help with verifiers", Note{Type: NoteRequestHelp, Text: "x", Verifiers: []string{"go-test"}}, "verifiers"},
		{"assert noted directly", Note{Type: "ASSERT", Text: "x"}, "type"},
		{"unknown type", Note{Type: "RUMOUR", Text: "x"}, "type"},
		{"lowercase type", Note{Type: "observation", Text: "x"}, "type"},
		{"bad citation", Note{Type: NoteObservation, Text: "x", Cites: []string{"r-000000000000#0"}}, "cites[0]"},
		{"bad retracts", Note{Type: NoteObservation, Text: "x", Retracts: "yesterday"}, "retracts"},
		{"huge text", Note{Type: NoteObservation, Text: strings.Repeat("x", MaxText+1)}, "text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.note.Check()
			var ve *ValidationError
			switch {
			case tc.where == "" && err != nil:
				t.Errorf("Check() = %v; want accepted", err)
			case tc.where != "" && (!errors.As(err, &ve) || ve.Where != tc.where || ve.Fix == ""):
				t.Errorf("Check() = %v; want refused at %s with a fix", err, tc.where)
			}
		})
	}
}

func TestSplitCoversTheParent(t *testing.T) {
	d, ctx := newDirector(t)
	dep := mustItem(t, d, NewWorkItem{})
	parent := mustItem(t, d, NewWorkItem{Acceptance: []string{"parser handles nil", "docs updated"}, Verifiers: []string{"go-test"}, Risk: RiskMedium, DependsOn: []string{dep.ID}})
	after := mustItem(t, d, NewWorkItem{DependsOn: []string{parent.ID}})

	half := []NewWorkItem{
		{Description: "parser", Acceptance: []string{"parser handles nil"}, Verifiers: []string{"go-test"}},
		{Description: "docs", Acceptance: []string{"README mentions nil"}},
	}
	_, _, err := d.SplitWorkItem(ctx, parent.ID, half)
	if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "docs updated") {
		t.Fatalf("SplitWorkItem(not covering) = %v; want refused naming the uncovered criterion", err)
	}
	if _, _, err := d.SplitWorkItem(ctx, parent.ID, half[:1]); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("SplitWorkItem(one child) = %v; want refused", err)
	}
	half[1].Agent = "beta"
	half[1].Acceptance = []string{"docs updated"}
	if _, _, err := d.SplitWorkItem(ctx, parent.ID, half); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("SplitWorkItem(child of another agent) = %v; want refused", err)
	}
	half[1].Agent = ""
	p, kids, err := d.SplitWorkItem(ctx, parent.ID, half)
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != WorkSplit || len(kids) != 2 {
		t.Fatalf("SplitWorkItem() = %s, %d children; want split, 2", p.Status, len(kids))
	}
	for _, k := range kids {
		if k.Parent != parent.ID || k.Agent != "alpha" || k.Risk != RiskMedium || len(k.DependsOn) != 1 || k.DependsOn[0] != dep.ID || k.Status != WorkOpen {
			t.Errorf("child = %+v; want the parent's agent, risk and dependency, open", k)
		}
	}
	if _, err := d.StartRun(ctx, NewRun{WorkItem: parent.ID}); !errors.Is(err, ErrConflict) {
		t.Errorf("StartRun(split parent) = %v; want refused", err)
	}
	if _, _, err := d.SplitWorkItem(ctx, parent.ID, half); !errors.Is(err, ErrConflict) {
		t.Errorf("SplitWorkItem twice = %v; want refused", err)
	}
	// What depended on the parent waits for every child.
	commitRun(t, d, mustRun(t, d, dep.ID))
	commitRun(t, d, mustRun(t, d, kids[0].ID))
	if got, _ := d.WorkItem(ctx, after.ID); got.Status != WorkOpen {
		t.Errorf("dependent with one child left = %s; want open", got.Status)
	}
	commitRun(t, d, mustRun(t, d, kids[1].ID))
	if got, _ := d.WorkItem(ctx, after.ID); got.Status != WorkReady {
		t.Errorf("dependent with every child done = %s; want ready", got.Status)
	}
	if kidsOf, _ := d.Children(ctx, parent.ID); len(kidsOf) != 2 {
		t.Errorf("Children() = %v", kidsOf)
	}
}

func TestCancelWorkItem(t *testing.T) {
	d, ctx := newDirector(t)
	it := mustItem(t, d, NewWorkItem{})
	r := mustRun(t, d, it.ID)
	// A queued run is cancelled with its item.
	got, err := d.CancelWorkItem(ctx, it.ID)
	if err != nil || got.Status != WorkCancelled {
		t.Fatalf("CancelWorkItem() = %+v, %v", got, err)
	}
	if run, _ := d.Run(ctx, r.ID); run.Status != RunCancelled {
		t.Errorf("queued run after its item was cancelled = %s; want cancelled", run.Status)
	}
	if _, err := d.CancelWorkItem(ctx, it.ID); !errors.Is(err, ErrConflict) {
		t.Errorf("CancelWorkItem twice = %v; want refused", err)
	}
	// A running run keeps its item.
	it2 := mustItem(t, d, NewWorkItem{})
	r2 := mustRun(t, d, it2.ID)
	if _, _, err := d.MarkRunning(ctx, r2.ID, base, "/wt/2", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := d.CancelWorkItem(ctx, it2.ID); !errors.Is(err, ErrActiveRun) || !strings.Contains(err.Error(), r2.ID) {
		t.Errorf("CancelWorkItem with a running run = %v; want refused naming %s", err, r2.ID)
	}
	if _, err := d.CancelWorkItem(ctx, "w-000000000000"); !errors.Is(err, ErrNotFound) {
		t.Errorf("CancelWorkItem(unknown) = %v; want ErrNotFound", err)
	}
}

func TestHighRiskNeedsAHuman(t *testing.T) {
	d, ctx := newDirector(t)
	r := mustRun(t, d, mustItem(t, d, NewWorkItem{Risk: RiskHigh, Verifiers: []string{"go-test"}}).ID)
	d.MarkRunning(ctx, r.ID, base, "/wt/1", "")
	d.Attest(ctx, r.ID, Attestation{Verifier: "go-test", Passed: true}, "")
	d.RequestCommit(ctx, r.ID, CommitRequest{Summary: "x", Patch: patchID}, "")
	c, err := d.CommitCheck(ctx, r.ID)
	if err != nil || !c.Ready || !c.NeedsHuman {
		t.Fatalf("CommitCheck() = %+v, %v; want ready, needing a human", c, err)
	}
	if _, _, err := d.DecideCommit(ctx, r.ID, true, PolicyDecider, "", ""); !errors.Is(err, ErrConflict) {
		t.Errorf("DecideCommit by policy on a high-risk item = %v; want refused", err)
	}
	if _, _, err := d.DecideCommit(ctx, r.ID, true, "human:alice", "looks right", ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.RecordCommit(ctx, r.ID, commit, ""); err != nil {
		t.Fatal(err)
	}
}

func TestPatchAfterVerifyNeedsVerifyingAgain(t *testing.T) {
	d, ctx := newDirector(t)
	r := mustRun(t, d, mustItem(t, d, NewWorkItem{Verifiers: []string{"go-test", "vet"}}).ID)
	d.MarkRunning(ctx, r.ID, base, "/wt/1", "")
	d.Attest(ctx, r.ID, Attestation{Verifier: "go-test", Passed: true}, "")
	d.Attest(ctx, r.ID, Attestation{Verifier: "vet", Passed: true}, "")
	if _, _, err := d.Record(ctx, r.ID, KindPatchReceipt, json.RawMessage(`{"diff": "`+patchID+`"}`), []string{patchID}, ""); err != nil {
		t.Fatal(err)
	}
	d.Attest(ctx, r.ID, Attestation{Verifier: "go-test", Passed: true}, "")
	d.RequestCommit(ctx, r.ID, CommitRequest{Summary: "x", Patch: patchID}, "")
	c, _ := d.CommitCheck(ctx, r.ID)
	if c.Ready || len(c.Missing) != 1 || !strings.Contains(c.Missing[0], "vet") {
		t.Errorf("CommitCheck() = %+v; want not ready, vet missing since the patch", c)
	}
	for _, bad := range []struct {
		kind Kind
		body string
	}{{KindCommitReceipt, `{}`}, {KindNote, `{}`}, {KindAnomaly, `[1]`}, {KindAnomaly, `null`}, {KindAnomaly, `{"a":` + strings.Repeat(" ", MaxBody) + `1}`}} {
		if _, _, err := d.Record(ctx, r.ID, bad.kind, json.RawMessage(bad.body), nil, ""); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("Record(%s, %.20s) = %v; want refused", bad.kind, bad.body, err)
		}
	}
}

// An attestation of another patch than the one asked to commit does not
// count, and the decision names the patch it approved.
func TestAttestationOfAnotherPatchDoesNotCount(t *testing.T) {
	d, ctx := newDirector(t)
	r := mustRun(t, d, mustItem(t, d, NewWorkItem{Verifiers: []string{"go-test"}}).ID)
	other := strings.Repeat("c", 64)
	d.MarkRunning(ctx, r.ID, base, "/wt/1", "")
	d.Attest(ctx, r.ID, Attestation{Verifier: "go-test", Passed: true, Patch: other}, "")
	d.RequestCommit(ctx, r.ID, CommitRequest{Summary: "x", Patch: patchID}, "")
	if c, _ := d.CommitCheck(ctx, r.ID); c.Ready || c.Patch != patchID {
		t.Fatalf("CommitCheck() with only another patch verified = %+v; want not ready", c)
	}
	if _, _, err := d.Attest(ctx, r.ID, Attestation{Verifier: "go-test", Passed: true, Patch: "nothex"}, ""); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("Attest(bad patch) = %v; want refused", err)
	}
	d.Attest(ctx, r.ID, Attestation{Verifier: "go-test", Passed: true, Patch: patchID}, "")
	rec, _, err := d.DecideCommit(ctx, r.ID, true, PolicyDecider, "", "")
	if err != nil {
		t.Fatal(err)
	}
	var b CommitDecisionBody
	if json.Unmarshal(rec.Body, &b); !b.Approved || b.Patch != patchID || b.By != PolicyDecider {
		t.Errorf("CommitDecision body = %s; want approved for %s by policy", rec.Body, patchID)
	}
}
