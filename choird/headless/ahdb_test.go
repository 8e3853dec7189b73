package headless

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestProjectRebuildsTheStateVectorFromReceipts(t *testing.T) {
	d, ctx := newDirector(t)
	it := mustItem(t, d, NewWorkItem{Verifiers: []string{"go-test"}})
	r := mustRun(t, d, it.ID)
	must := func(rec Receipt, _ bool, err error) Receipt {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	must(d.MarkRunning(ctx, r.ID, base, "/wt/1", ""))
	obs := must(d.AddNote(ctx, r.ID, Note{Type: NoteObservation, Text: "TestNil panics"}, ""))
	hyp := must(d.AddNote(ctx, r.ID, Note{Type: NoteHypothesis, Text: "nil map write", Test: "run TestNil with -race", Budget: &Budgets{ToolCalls: 2}, Cites: []string{obs.Ref()}}, ""))
	wrong := must(d.AddNote(ctx, r.ID, Note{Type: NoteHypothesis, Text: "a data race", Test: "go test -race", Budget: &Budgets{ToolCalls: 1}}, ""))
	drive := must(d.AddNote(ctx, r.ID, Note{Type: NoteDrive, Text: "make TestNil pass", AntiDrive: "never skip or delete the test"}, ""))
	must(d.AddNote(ctx, r.ID, Note{Type: NoteBelieve, Text: "the repo builds with go 1.26", Trigger: "go.mod changes", Effect: "toolchain choice"}, ""))
	must(d.AddNote(ctx, r.ID, Note{Type: NoteHyperthesis, Text: "tests do not cover concurrency", Bound: "add a -race verifier"}, ""))
	must(d.AddNote(ctx, r.ID, Note{Type: NoteConjecture, Claim: "nil maps come from the decoder", Test: "fuzz the decoder", Edge: "empty input", DeltaO: "one fix covers both", Scope: "parser package"}, ""))
	must(d.AddNote(ctx, r.ID, Note{Type: NoteRequestVerify, Text: "check the fix", Verifiers: []string{"go-test"}}, ""))
	att := must(d.Attest(ctx, r.ID, Attestation{Verifier: "go-test", Passed: true, Supports: []string{hyp.Ref()}}, ""))
	refute := must(d.Attest(ctx, r.ID, Attestation{Verifier: "race", Passed: false, Supports: []string{wrong.Ref()}}, ""))
	must(d.AddNote(ctx, r.ID, Note{Type: NoteDrive, Text: "never mind", AntiDrive: "x", Retracts: drive.Ref()}, ""))

	st, err := d.State(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Assert) != 1 || st.Assert[0].Ref != hyp.Ref() || !reflect.DeepEqual(st.Assert[0].Cites, []string{hyp.Ref(), obs.Ref(), att.Ref()}) {
		t.Errorf("Assert = %+v; want the hypothesis promoted, citing itself, its observation and the attestation", st.Assert)
	}
	if len(st.Hypothesize) != 0 {
		t.Errorf("Hypothesize = %+v; want none left (one promoted, one refuted)", st.Hypothesize)
	}
	if len(st.Refuted) != 1 || st.Refuted[0].Ref != wrong.Ref() || st.Refuted[0].By != refute.Ref() {
		t.Errorf("Refuted = %+v; want %s by %s", st.Refuted, wrong.Ref(), refute.Ref())
	}
	if len(st.Drive) != 1 || st.Drive[0].Text != "never mind" {
		t.Errorf("Drive = %+v; want only the one that retracted the first", st.Drive)
	}
	if len(st.Believe) != 1 || len(st.Hyperthesis) != 1 || len(st.Conjectures) != 1 || st.Conjectures[0].Scope != "parser package" {
		t.Errorf("Believe/Hyperthesis/Conjectures = %+v / %+v / %+v", st.Believe, st.Hyperthesis, st.Conjectures)
	}
	if len(st.Requests) != 1 || st.Runs[r.ID] != RunRunning {
		t.Errorf("Requests = %+v, run %s; want one open request of a running run", st.Requests, st.Runs[r.ID])
	}

	// The commit closes the requests and asserts the work item done (once
	// the failing verifier passes: any failing verifier blocks it).
	must(d.Attest(ctx, r.ID, Attestation{Verifier: "race", Passed: true}, ""))
	must(d.RequestCommit(ctx, r.ID, CommitRequest{Summary: "fix nil map", Patch: patchID}, ""))
	must(d.DecideCommit(ctx, r.ID, true, PolicyDecider, "", ""))
	cr := must(d.RecordCommit(ctx, r.ID, commit, ""))
	st, _ = d.State(ctx, "alpha")
	if st.Runs[r.ID] != RunCommitted || len(st.Requests) != 0 || len(st.Assert) != 2 || st.Assert[1].Ref != cr.Ref() || len(st.Assert[1].Cites) != 3 {
		t.Errorf("after the commit: runs %v, requests %+v, assert %+v", st.Runs, st.Requests, st.Assert)
	}
	if st.Deltas[r.ID] == 0 {
		t.Errorf("Deltas = %v; want the run's changes counted", st.Deltas)
	}

	// Rebuilt from the same receipts, it is the same state.
	rs, _ := d.store.AllReceipts(ctx, "")
	if again := Project(rs); !reflect.DeepEqual(again, st) {
		t.Errorf("Project() twice differs:\n%+v\n%+v", again, st)
	}
	if other, _ := d.State(ctx, "beta"); other.Receipts != 0 || len(other.Assert) != 0 {
		t.Errorf("State(beta) = %+v; want empty", other)
	}
}

func TestProjectSkipsUnreadableReceipts(t *testing.T) {
	rs := []Receipt{
		{RunID: "r-000000000001", Seq: 1, Kind: KindNote, Body: json.RawMessage(`{"type":"HYPOTHESIS","text":"no test"}`)},
		{RunID: "r-000000000001", Seq: 2, Kind: KindNote, Body: json.RawMessage(`[1,2]`)},
		{RunID: "r-000000000001", Seq: 3, Kind: KindRunEnded, Body: json.RawMessage(`{"status":"running"}`)},
		{RunID: "r-000000000001", Seq: 4, Kind: KindCommitReceipt, Body: json.RawMessage(`{}`)},
		{RunID: "r-000000000001", Seq: 5, Kind: KindNote, Body: json.RawMessage(`{"type":"OBSERVATION","text":"fine"}`)},
	}
	st := Project(rs)
	if len(st.Skipped) != 4 || st.Receipts != 5 || len(st.Hypothesize) != 0 || st.Runs["r-000000000001"] != RunQueued {
		t.Errorf("Project(bad receipts) = %+v; want 4 skipped, nothing built from them", st)
	}
	if empty := Project(nil); empty.Assert == nil || empty.Runs == nil || empty.Receipts != 0 {
		t.Errorf("Project(nil) = %+v; want empty, non-nil lists", empty)
	}
}
