package store

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"choir/choird/headless"
)

const (
	hlBase   = "0123456789abcdef0123456789abcdef01234567"
	hlCommit = "89abcdef0123456789abcdef0123456789abcdef"
	hlPatch  = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// A run through its whole life on Postgres: the rows read back as the
// Director wrote them, and the state vector rebuilds from them.
func TestHeadlessRunLifecycle(t *testing.T) {
	s := newStore(t, Config{}, "alpha", "beta")
	ctx := ctxT(t)
	d := headless.New(s.Headless())
	dep, err := d.AddWorkItem(ctx, headless.NewWorkItem{Agent: "alpha", Description: "first", Acceptance: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	it, err := d.AddWorkItem(ctx, headless.NewWorkItem{Agent: "alpha", Description: "make TestNil pass",
		Acceptance: []string{"go test passes", "no test deleted"}, Verifiers: []string{"go-test"}, Risk: headless.RiskMedium, DependsOn: []string{dep.ID}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.WorkItem(ctx, it.ID)
	want := it
	want.Status = headless.WorkOpen
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("WorkItem() = %+v, %v;\nwant %+v", got, err, want)
	}
	if _, err := d.AddWorkItem(ctx, headless.NewWorkItem{Agent: "gamma", Description: "x", Acceptance: []string{"a"}}); !errors.Is(err, headless.ErrNotFound) {
		t.Errorf("AddWorkItem(agent not in the database) = %v; want ErrNotFound", err)
	}
	if _, err := d.StartRun(ctx, headless.NewRun{WorkItem: it.ID}); !errors.Is(err, headless.ErrConflict) {
		t.Errorf("StartRun before its dependency is done = %v; want refused", err)
	}
	// The dependency is done once a run commits it.
	commitThrough(t, d, dep.ID, "go-test")
	if got, _ := d.WorkItem(ctx, it.ID); got.Status != headless.WorkReady {
		t.Fatalf("work item after its dependency's commit = %s; want ready", got.Status)
	}

	r, err := d.StartRun(ctx, headless.NewRun{WorkItem: it.ID, Mood: "SKEPTICAL", Trigger: "ready:" + it.ID, Budgets: headless.Budgets{Tokens: 5000}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.StartRun(ctx, headless.NewRun{WorkItem: it.ID}); !errors.Is(err, headless.ErrActiveRun) {
		t.Errorf("second StartRun() = %v; want ErrActiveRun", err)
	}
	// The database holds the rule too, whatever the caller checked.
	dup := r
	dup.ID = headless.NewRunID()
	if err := s.Headless().InsertRun(ctx, dup); !errors.Is(err, headless.ErrActiveRun) {
		t.Errorf("InsertRun(second active run) = %v; want ErrActiveRun", err)
	}
	if _, _, err := d.MarkRunning(ctx, r.ID, hlBase, "/wt/"+r.ID, "start"); err != nil {
		t.Fatal(err)
	}
	obs, _, err := d.AddNote(ctx, r.ID, headless.Note{Type: headless.NoteObservation, Text: "TestNil: nil map write", Cites: []string{}}, "n1")
	if err != nil {
		t.Fatal(err)
	}
	att, _, err := d.Attest(ctx, r.ID, headless.Attestation{Verifier: "go-test", Passed: true, Summary: "1 passed", Artifacts: []string{hlPatch}, Supports: []string{obs.Ref()}}, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if len(att.Objects) != 1 || att.Objects[0] != hlPatch {
		t.Errorf("attestation receipt objects = %v; want its artifact", att.Objects)
	}
	if again, fresh, err := d.Attest(ctx, r.ID, headless.Attestation{Verifier: "go-test", Passed: true, Summary: "1 passed", Artifacts: []string{hlPatch}, Supports: []string{obs.Ref()}}, "v1"); err != nil || fresh || again.Seq != att.Seq {
		t.Errorf("Attest resent = seq %d fresh %v %v; want seq %d, nothing appended", again.Seq, fresh, err, att.Seq)
	}
	if _, _, err := d.Attest(ctx, r.ID, headless.Attestation{Verifier: "go-test", Passed: false}, "v1"); !errors.Is(err, headless.ErrKeyReused) {
		t.Errorf("Attest with a reused key = %v; want ErrKeyReused", err)
	}
	if _, _, err := d.RequestCommit(ctx, r.ID, headless.CommitRequest{Summary: "fix the nil map", Patch: hlPatch}, "c1"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.DecideCommit(ctx, r.ID, true, headless.PolicyDecider, "verified", "d1"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.RecordCommit(ctx, r.ID, hlCommit, "k1"); err != nil {
		t.Fatal(err)
	}
	// A resend of the commit after a crash is answered from the receipt.
	if _, fresh, err := d.RecordCommit(ctx, r.ID, hlCommit, "k1"); err != nil || fresh {
		t.Errorf("RecordCommit resent = %v, %v; want the first receipt", fresh, err)
	}
	if _, _, err := d.EndRun(ctx, r.ID, headless.RunFailed, "too late", ""); !errors.Is(err, headless.ErrRunEnded) {
		t.Errorf("EndRun after the commit = %v; want ErrRunEnded", err)
	}
	run, err := d.Run(ctx, r.ID)
	if err != nil || run.Status != headless.RunCommitted || run.Ended.IsZero() || run.Base != hlBase || run.Budgets.Tokens != 5000 || run.Mood != "SKEPTICAL" {
		t.Errorf("Run() = %+v, %v; want committed with its base and budgets", run, err)
	}
	if got, _ := d.WorkItem(ctx, it.ID); got.Status != headless.WorkDone {
		t.Errorf("work item after the commit = %s; want done", got.Status)
	}
	rs, err := d.Receipts(ctx, r.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for i, rec := range rs {
		kinds = append(kinds, string(rec.Kind))
		if rec.Seq != int64(i+1) || rec.At.IsZero() || rec.Objects == nil {
			t.Errorf("receipt %d = %+v", i, rec)
		}
	}
	if want := "RunStarted Note VerifierResults CommitRequest CommitDecision CommitReceipt"; strings.Join(kinds, " ") != want {
		t.Errorf("receipts = %s; want %s", strings.Join(kinds, " "), want)
	}
	var n headless.Note
	if err := json.Unmarshal(rs[1].Body, &n); err != nil || n.Text != "TestNil: nil map write" {
		t.Errorf("note body read back = %s, %v", rs[1].Body, err)
	}
	if later, _ := d.Receipts(ctx, r.ID, 4); len(later) != 2 || later[0].Seq != 5 {
		t.Errorf("Receipts(after 4) = %v; want seq 5 and 6", later)
	}

	st, err := d.State(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Assert) != 3 || st.Assert[1].Ref != obs.Ref() || st.Runs[r.ID] != headless.RunCommitted || len(st.Skipped) != 0 {
		t.Errorf("State() = %+v; want the dependency's commit, the promoted observation and this commit asserted", st)
	}
	if other, _ := d.State(ctx, "beta"); other.Receipts != 0 {
		t.Errorf("State(beta) = %d receipts; want 0", other.Receipts)
	}
	// Receipts are append-only in the database too.
	if _, err := s.pool.Exec(ctx, s.q(`UPDATE choir_control.run_receipts SET kind = 'Note'`)); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Errorf("UPDATE run_receipts = %v; want refused as append-only", err)
	}
	if _, err := s.pool.Exec(ctx, s.q(`DELETE FROM choir_control.run_receipts`)); err == nil {
		t.Error("DELETE FROM run_receipts succeeded; want refused")
	}
}

// commitThrough runs a work item to its commit.
func commitThrough(t *testing.T, d *headless.Director, item, verifier string) {
	t.Helper()
	ctx := ctxT(t)
	r, err := d.StartRun(ctx, headless.NewRun{WorkItem: item})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range []func() error{
		func() error { _, _, err := d.MarkRunning(ctx, r.ID, hlBase, "/wt/"+r.ID, ""); return err },
		func() error {
			_, _, err := d.Attest(ctx, r.ID, headless.Attestation{Verifier: verifier, Passed: true}, "")
			return err
		},
		func() error {
			_, _, err := d.RequestCommit(ctx, r.ID, headless.CommitRequest{Summary: "x", Patch: hlPatch}, "")
			return err
		},
		func() error { _, _, err := d.DecideCommit(ctx, r.ID, true, headless.PolicyDecider, "", ""); return err },
		func() error { _, _, err := d.RecordCommit(ctx, r.ID, hlCommit, ""); return err },
	} {
		if err := f(); err != nil {
			t.Fatalf("commit %s, step %d: %v", item, i, err)
		}
	}
}

func TestHeadlessSplitAndCancel(t *testing.T) {
	s := newStore(t, Config{}, "alpha")
	ctx := ctxT(t)
	d := headless.New(s.Headless())
	p, err := d.AddWorkItem(ctx, headless.NewWorkItem{Agent: "alpha", Description: "big", Acceptance: []string{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	parent, kids, err := d.SplitWorkItem(ctx, p.ID, []headless.NewWorkItem{
		{Description: "part a", Acceptance: []string{"a"}}, {Description: "part b", Acceptance: []string{"b"}}})
	if err != nil || parent.Status != headless.WorkSplit || len(kids) != 2 {
		t.Fatalf("SplitWorkItem() = %+v, %d children, %v", parent, len(kids), err)
	}
	stored, _ := d.WorkItem(ctx, p.ID)
	children, _ := d.Children(ctx, p.ID)
	if stored.Status != headless.WorkSplit || len(children) != 2 {
		t.Errorf("parent read back = %s with children %v; want split with 2", stored.Status, children)
	}
	r, err := d.StartRun(ctx, headless.NewRun{WorkItem: kids[0].ID})
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.CancelWorkItem(ctx, kids[0].ID)
	if err != nil || got.Status != headless.WorkCancelled {
		t.Fatalf("CancelWorkItem() = %+v, %v", got, err)
	}
	if run, _ := d.Run(ctx, r.ID); run.Status != headless.RunCancelled || run.Ended.IsZero() {
		t.Errorf("queued run of a cancelled item = %+v; want cancelled and ended", run)
	}
	list, err := d.WorkItems(ctx, headless.WorkFilter{Agent: "alpha", Status: headless.WorkReady})
	if err != nil || len(list) != 1 || list[0].ID != kids[1].ID {
		t.Errorf("WorkItems(ready) = %v, %v; want only %s", list, err, kids[1].ID)
	}
	if runs, err := d.Runs(ctx, "alpha", ""); err != nil || len(runs) != 1 {
		t.Errorf("Runs(alpha) = %v, %v; want 1", runs, err)
	}
}

// Many resends of the same request at once, from two directors over one
// database (a choird and the executor retrying): one receipt.
func TestHeadlessConcurrentResendsAppendOnce(t *testing.T) {
	s := newStore(t, Config{}, "alpha")
	ctx := ctxT(t)
	d1, d2 := headless.New(s.Headless()), headless.New(s.Headless())
	it, err := d1.AddWorkItem(ctx, headless.NewWorkItem{Agent: "alpha", Description: "x", Acceptance: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := d1.StartRun(ctx, headless.NewRun{WorkItem: it.ID})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d1.MarkRunning(ctx, r.ID, hlBase, "/wt/x", ""); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		d := d1
		if i%2 == 1 {
			d = d2
		}
		wg.Go(func() {
			_, _, err := d.AddNote(ctx, r.ID, headless.Note{Type: headless.NoteObservation, Text: "once"}, "same-key")
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("AddNote() = %v", err)
		}
	}
	if rs, _ := d1.Receipts(ctx, r.ID, 0); len(rs) != 2 {
		t.Errorf("receipts = %d; want 2 (the start and one note)", len(rs))
	}
}

// RunsIn lists the runs in the given statuses, oldest first, on Postgres
// as in memory (the director loop's queue).
func TestHeadlessRunsIn(t *testing.T) {
	s := newStore(t, Config{}, "alpha")
	ctx := ctxT(t)
	for name, st := range map[string]headless.Store{"postgres": s.Headless(), "memory": headless.NewMemStore()} {
		d := headless.New(st)
		var ids []string
		for i := range 3 {
			it, err := d.AddWorkItem(ctx, headless.NewWorkItem{Agent: "alpha", Description: name + " item", Acceptance: []string{"a"}})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			r, err := d.StartRun(ctx, headless.NewRun{WorkItem: it.ID, Trigger: "manual"})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			ids = append(ids, r.ID)
			if i == 1 {
				if _, _, err := d.MarkRunning(ctx, r.ID, hlBase, "/tmp/wt", "start"); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
		}
		list := func(statuses ...headless.RunStatus) []string {
			t.Helper()
			runs, err := d.RunsIn(ctx, statuses...)
			if err != nil {
				t.Fatalf("%s: RunsIn(%v) = %v", name, statuses, err)
			}
			out := []string{}
			for _, r := range runs {
				if slices.Contains(ids, r.ID) {
					out = append(out, r.ID)
				}
			}
			return out
		}
		if got, want := list(headless.RunQueued), []string{ids[0], ids[2]}; !slices.Equal(got, want) {
			t.Errorf("%s: RunsIn(queued) = %v; want %v, oldest first", name, got, want)
		}
		if got, want := list(headless.RunRunning, headless.RunQueued), ids; !slices.Equal(got, want) {
			t.Errorf("%s: RunsIn(running, queued) = %v; want %v", name, got, want)
		}
		if got := list(headless.RunCommitted); len(got) != 0 {
			t.Errorf("%s: RunsIn(committed) = %v; want none", name, got)
		}
		if got := list(); len(got) != 0 {
			t.Errorf("%s: RunsIn() = %v; want none", name, got)
		}
	}
}
