package headless

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
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
	att := must(d.Attest(ctx, r.ID, Attestation{Verifier: "go-test", Passed: true, Supports: []string{obs.Ref(), hyp.Ref()}}, ""))
	refute := must(d.Attest(ctx, r.ID, Attestation{Verifier: "race", Passed: false, Supports: []string{wrong.Ref()}}, ""))
	must(d.AddNote(ctx, r.ID, Note{Type: NoteDrive, Text: "never mind", AntiDrive: "x", Retracts: drive.Ref()}, ""))

	st, err := d.State(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Assert) != 2 || st.Assert[1].Ref != hyp.Ref() || !reflect.DeepEqual(st.Assert[1].Cites, []string{hyp.Ref(), obs.Ref(), att.Ref()}) {
		t.Errorf("Assert = %+v; want the observation, then the hypothesis promoted, citing itself, its observation and the attestation", st.Assert)
	}
	if len(st.Hypothesize) != 0 {
		t.Errorf("Hypothesize = %+v; want none left (one promoted, one refuted)", st.Hypothesize)
	}
	if len(st.Refuted) != 1 || st.Refuted[0].Ref != wrong.Ref() || st.Refuted[0].By != refute.Ref() {
		t.Errorf("Refuted = %+v; want %s by %s", st.Refuted, wrong.Ref(), refute.Ref())
	}
	if len(st.Drive) != 1 || st.Drive[0].Text != "never mind" || len(st.Retracted) != 1 || st.Retracted[0].Ref != drive.Ref() {
		t.Errorf("Drive = %+v; want only the one that retracted the first", st.Drive)
	}
	if len(st.Believe) != 1 || len(st.Hyperthesis) != 1 || len(st.Conjectures) != 1 || st.Conjectures[0].Scope != "parser package" {
		t.Errorf("Believe/Hyperthesis/Conjectures = %+v / %+v / %+v", st.Believe, st.Hyperthesis, st.Conjectures)
	}
	if cur, _ := d.Run(ctx, r.ID); len(st.Requests) != 1 || st.Runs[r.ID] != RunVerifying || cur.Status != st.Runs[r.ID] {
		t.Errorf("Requests = %+v, run %s (the director's %s); want one open request of a verifying run", st.Requests, st.Runs[r.ID], cur.Status)
	}

	// The commit closes the requests and asserts the work item done (once
	// the failing verifier passes: any failing verifier blocks it).
	must(d.Attest(ctx, r.ID, Attestation{Verifier: "race", Passed: true}, ""))
	must(d.RequestCommit(ctx, r.ID, CommitRequest{Summary: "fix nil map", Patch: patchID}, ""))
	must(d.DecideCommit(ctx, r.ID, true, PolicyDecider, "", ""))
	cr := must(d.RecordCommit(ctx, r.ID, commit, ""))
	st, _ = d.State(ctx, "alpha")
	if st.Runs[r.ID] != RunCommitted || len(st.Requests) != 0 || len(st.Assert) != 3 || st.Assert[2].Ref != cr.Ref() || len(st.Assert[2].Cites) != 3 {
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

// rec is a receipt of run r-000000000001 (or of run, when seq is given
// as "r-…#n") with a raw body, as anything may have written it.
func rec(ref, kind, body string, objects ...string) Receipt {
	run, seq, _ := cut(ref)
	n, _ := strconv.ParseInt(seq, 10, 64)
	return Receipt{RunID: run, Seq: n, Kind: Kind(kind), Body: json.RawMessage(body), Objects: objects}
}

const r1 = "r-000000000001"

// The ASSERT rule: a promotion enters the vector only when everything it
// cites is evidence (an earlier receipt that is not a note), a promoted
// atom, or an object a receipt names; otherwise it is refused, visibly,
// and the atom waits.
func TestAssertRule(t *testing.T) {
	obj := strings.Repeat("a", 64)
	for _, c := range []struct {
		name    string
		cites   string // the hypothesis's cites, JSON
		assert  bool
		refused string // part of the refusal's why
	}{
		{"no citations", `[]`, true, ""},
		{"a promoted observation", `["r-000000000001#1"]`, true, ""},
		{"evidence: an earlier attestation", `["r-000000000001#3"]`, true, ""},
		{"an object a receipt names", `["sha256:` + obj + `"]`, true, ""},
		{"a missing receipt", `["r-000000000009#4"]`, false, "r-000000000009#4, which is no earlier receipt"},
		{"an object nobody names", `["sha256:` + strings.Repeat("b", 64) + `"]`, false, "an object no earlier receipt names"},
		{"a later receipt", `["r-000000000001#6"]`, false, "which is no earlier receipt"},
		{"a note not promoted", `["r-000000000001#2"]`, false, "r-000000000001#2, a note that is not a promoted atom"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs := []Receipt{
				rec(r1+"#1", "Note", `{"type":"OBSERVATION","text":"TestNil panics"}`),
				rec(r1+"#2", "Note", `{"type":"OBSERVATION","text":"only on arm64"}`),
				rec(r1+"#3", "VerifierResults", `{"verifier":"go-test","passed":true,"supports":["r-000000000001#1"]}`, obj),
				rec(r1+"#4", "Note", `{"type":"HYPOTHESIS","text":"nil map write","test":"go test -run TestNil","budget":{"tool_calls":3},"cites":`+c.cites+`}`),
				rec(r1+"#5", "VerifierResults", `{"verifier":"go-test","passed":true,"supports":["r-000000000001#4"]}`),
				rec(r1+"#6", "Note", `{"type":"OBSERVATION","text":"later"}`),
			}
			st := Project(rs)
			promoted := slices.ContainsFunc(st.Assert, func(a Assertion) bool { return a.Ref == r1+"#4" })
			waiting := slices.ContainsFunc(st.Hypothesize, func(h Hypothesis) bool { return h.Ref == r1+"#4" })
			if promoted != c.assert || waiting == c.assert {
				t.Fatalf("Project: asserted %t, still hypothesized %t; want asserted %t (assert %+v)", promoted, waiting, c.assert, st.Assert)
			}
			i := slices.IndexFunc(st.Refused, func(s Skipped) bool { return s.Ref == r1+"#4" })
			switch {
			case c.assert && i >= 0:
				t.Errorf("Refused = %+v; want none for %s", st.Refused, r1+"#4")
			case !c.assert && (i < 0 || !strings.Contains(st.Refused[i].Why, c.refused) || !strings.Contains(st.Refused[i].Why, r1+"#5")):
				t.Errorf("Refused = %+v; want %s refused with %q, naming the attestation", st.Refused, r1+"#4", c.refused)
			}
			for _, a := range st.Assert {
				if a.Cites[len(a.Cites)-1] != r1+"#3" && a.Cites[len(a.Cites)-1] != r1+"#5" {
					t.Errorf("ASSERT %+v does not end with its attestation", a)
				}
			}
		})
	}
}

// Pointer citations (sha256:<hex>, the knowledge base's) stand in an
// ASSERT when an earlier receipt names the object.
func TestAssertRulePointers(t *testing.T) {
	obj := strings.Repeat("a", 64)
	p := projection{kinds: map[string]Kind{}, objects: map[string]bool{obj: true}, promoted: map[string]bool{}}
	if why := p.unpromoted([]string{"sha256:" + obj}); why != "" {
		t.Errorf("unpromoted(a named object) = %q; want it allowed", why)
	}
	if why := p.unpromoted([]string{"sha256:" + strings.Repeat("b", 64)}); !strings.Contains(why, "an object no earlier receipt names") {
		t.Errorf("unpromoted(an object nobody names) = %q", why)
	}
}

// A refused atom is promoted later, once what it cites is promoted.
func TestAssertRefusedThenPromoted(t *testing.T) {
	rs := []Receipt{
		rec(r1+"#1", "Note", `{"type":"OBSERVATION","text":"a"}`),
		rec(r1+"#2", "Note", `{"type":"OBSERVATION","text":"b","cites":["r-000000000001#1"]}`),
		rec(r1+"#3", "VerifierResults", `{"verifier":"v","passed":true,"supports":["r-000000000001#2"]}`),
	}
	if st := Project(rs); len(st.Assert) != 0 || len(st.Refused) != 1 || st.Deltas[r1] != 0 {
		t.Fatalf("Project = assert %+v refused %+v deltas %v; want b refused, no change", st.Assert, st.Refused, st.Deltas)
	}
	rs = append(rs, rec(r1+"#4", "VerifierResults", `{"verifier":"v","passed":true,"supports":["r-000000000001#1","r-000000000001#2"]}`))
	st := Project(rs)
	if len(st.Assert) != 2 || st.Assert[1].Ref != r1+"#2" || len(st.Refused) != 0 {
		t.Errorf("Project = assert %+v refused %+v; want a then b asserted, nothing refused", st.Assert, st.Refused)
	}
}

// A CommitReceipt asserts its work item done only on earlier passing
// attestations and an earlier decision.
func TestCommitAssertionNeedsEvidence(t *testing.T) {
	head := []Receipt{
		rec(r1+"#1", "VerifierResults", `{"verifier":"go-test","passed":true}`),
		rec(r1+"#2", "VerifierResults", `{"verifier":"lint","passed":false}`),
		rec(r1+"#3", "CommitDecision", `{"approved":true,"by":"policy"}`),
	}
	for _, c := range []struct {
		name, body, why string
	}{
		{"kept", `{"commit":"c1","work_item":"w-000000000001","evidence":["r-000000000001#1"],"decision":"r-000000000001#3"}`, ""},
		{"no evidence", `{"commit":"c1","work_item":"w-000000000001","evidence":[],"decision":"r-000000000001#3"}`, "cites no passing attestation"},
		{"failing evidence", `{"commit":"c1","work_item":"w-000000000001","evidence":["r-000000000001#2"]}`, "r-000000000001#2 is no earlier passing attestation"},
		{"missing evidence", `{"commit":"c1","work_item":"w-000000000001","evidence":["r-00000000000f#1"]}`, "r-00000000000f#1 is no earlier passing attestation"},
		{"decision not a decision", `{"commit":"c1","work_item":"w-000000000001","evidence":["r-000000000001#1"],"decision":"r-000000000001#1"}`, "is no earlier CommitDecision"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := Project(append(slices.Clone(head), rec(r1+"#4", "CommitReceipt", c.body)))
			if st.Runs[r1] != RunCommitted {
				t.Errorf("run = %s; want committed whatever its evidence", st.Runs[r1])
			}
			if c.why == "" {
				if len(st.Assert) != 1 || len(st.Refused) != 0 {
					t.Errorf("Project = assert %+v refused %+v; want the work item asserted done", st.Assert, st.Refused)
				}
				return
			}
			if len(st.Assert) != 0 || len(st.Refused) != 1 || !strings.Contains(st.Refused[0].Why, c.why) {
				t.Errorf("Project = assert %+v refused %+v; want it refused with %q", st.Assert, st.Refused, c.why)
			}
		})
	}
}

// Hypertheses are mitigated by a passing attestation, conjectures decided
// by one; retractions are listed, and a retraction of nothing refused.
func TestHyperthesisConjecturesAndRetractions(t *testing.T) {
	rs := []Receipt{
		rec(r1+"#1", "Note", `{"type":"HYPERTHESIS","text":"no race coverage","bound":"add a -race verifier"}`),
		rec(r1+"#2", "Note", `{"type":"HYPERTHESIS","text":"arm64 untested","bound":"quarantine arm64 builds"}`),
		rec(r1+"#3", "VerifierResults", `{"verifier":"race","passed":false,"supports":["r-000000000001#1"]}`),
		rec(r1+"#4", "VerifierResults", `{"verifier":"race","passed":true,"supports":["r-000000000001#1"]}`),
		rec(r1+"#5", "Note", `{"type":"CONJECTURE","claim":"c1","test":"t1","edge":"e","delta_o":"d","scope":"s"}`),
		rec(r1+"#6", "Note", `{"type":"CONJECTURE","claim":"c2","test":"t2","edge":"e","delta_o":"d","scope":"s"}`),
		rec(r1+"#7", "VerifierResults", `{"verifier":"fuzz","passed":false,"supports":["r-000000000001#5"]}`),
		rec(r1+"#8", "VerifierResults", `{"verifier":"fuzz","passed":true,"supports":["r-000000000001#5"]}`),
		rec(r1+"#9", "Note", `{"type":"DRIVE","text":"d","anti_drive":"a","retracts":"r-000000000001#6"}`),
		rec(r1+"#10", "Note", `{"type":"DRIVE","text":"d","anti_drive":"a","retracts":"r-000000000007#1"}`),
	}
	st := Project(rs)
	if len(st.Hyperthesis) != 2 || st.Hyperthesis[0].Mitigated != r1+"#4" || st.Hyperthesis[1].Mitigated != "" {
		t.Errorf("Hyperthesis = %+v; want the first mitigated by #4 (not refuted by #3), the second open", st.Hyperthesis)
	}
	if n, open := st.HyperthesisMagnitude(); n != 2 || open != 1 {
		t.Errorf("HyperthesisMagnitude() = %d, %d; want 2, 1", n, open)
	}
	if len(st.Conjectures) != 1 || st.Conjectures[0].Outcome != Refuted || st.Conjectures[0].By != r1+"#7" {
		t.Errorf("Conjectures = %+v; want c1 refuted by #7 (the first decision stands), c2 retracted", st.Conjectures)
	}
	if !reflect.DeepEqual(st.Retracted, []Retraction{{Ref: r1 + "#6", By: r1 + "#9"}}) {
		t.Errorf("Retracted = %+v", st.Retracted)
	}
	if len(st.Refused) != 1 || st.Refused[0].Ref != r1+"#10" || !strings.Contains(st.Refused[0].Why, "no entry of the state vector") {
		t.Errorf("Refused = %+v; want the retraction of nothing", st.Refused)
	}
	if st.PlanNext != nil {
		t.Errorf("PlanNext = %+v; want none (no untested conjecture left)", st.PlanNext)
	}
}

// plan_next: the untested conjecture most cited by entries in effect,
// the oldest among equals; a retracted citation no longer counts.
func TestPlanNext(t *testing.T) {
	conj := func(ref, claim string) Receipt {
		return rec(ref, "Note", `{"type":"CONJECTURE","claim":"`+claim+`","test":"t","edge":"e","delta_o":"d","scope":"s"}`)
	}
	base := []Receipt{
		conj(r1+"#1", "old"),
		conj(r1+"#2", "cited"),
		conj(r1+"#3", "tested"),
		rec(r1+"#4", "VerifierResults", `{"verifier":"v","passed":true,"supports":["r-000000000001#3"]}`),
	}
	if st := Project(base); st.PlanNext == nil || st.PlanNext.Conjecture != r1+"#1" || st.PlanNext.Rule != PlanRule {
		t.Fatalf("PlanNext = %+v; want the oldest untested, #1", st.PlanNext)
	}
	cited := append(slices.Clone(base),
		rec(r1+"#5", "Note", `{"type":"HYPOTHESIS","text":"h","test":"t","budget":{"tokens":9},"cites":["r-000000000001#2","r-000000000001#3"]}`),
		rec(r1+"#6", "Note", `{"type":"DRIVE","text":"d","anti_drive":"a","cites":["r-000000000001#3"]}`))
	st := Project(cited)
	if st.PlanNext == nil || st.PlanNext.Conjecture != r1+"#2" || st.PlanNext.Claim != "cited" || st.Conjectures[1].Cited != 1 || st.Conjectures[2].Cited != 2 {
		t.Fatalf("PlanNext = %+v, conjectures %+v; want #2, the most cited untested one", st.PlanNext, st.Conjectures)
	}
	retracted := append(slices.Clone(cited), rec(r1+"#7", "Note", `{"type":"OBSERVATION","text":"no","retracts":"r-000000000001#5"}`))
	if st := Project(retracted); st.PlanNext == nil || st.PlanNext.Conjecture != r1+"#1" {
		t.Errorf("PlanNext = %+v; want #1 again once the citing hypothesis is retracted", st.PlanNext)
	}
}

// Hostile receipts: bodies that are not their kind's JSON, kinds nobody
// knows, notes citing receipts that do not exist, attestations supporting
// nothing. None is fatal; each unreadable one is listed once.
func TestProjectHostileReceipts(t *testing.T) {
	rs := []Receipt{
		rec(r1+"#1", "Note", `"a string"`),
		rec(r1+"#2", "Note", `{"type":"ASSERT","text":"I say so"}`),
		rec(r1+"#3", "VerifierResults", `{"verifier":7}`),
		rec(r1+"#4", "VerifierResults", `{"verifier":"v","passed":true,"supports":["r-00000000000f#1","not a ref"]}`),
		rec(r1+"#5", "CommitDecision", `[`),
		rec(r1+"#6", "CommitReceipt", `{"commit":""}`),
		rec(r1+"#7", "RunEnded", `{"status":"bogus"}`),
		rec(r1+"#8", "Weird", `{}`),
		rec(r1+"#9", "Note", `{"type":"OBSERVATION","text":"x","cites":["r-00000000000f#99"]}`),
		rec(r1+"#10", "VerifierResults", `{"verifier":"v","passed":true,"supports":["r-000000000001#9"]}`),
		rec(r1+"#11", "Note", `{"type":"HYPOTHESIS","text":"x","test":"t","budget":{}}`),
		rec(r1+"#12", "Note", `{"type":"CONJECTURE","claim":"c","test":"t","edge":"e","delta_o":"d","scope":"s","cites":["r-000000000001#12"]}`),
		rec(r1+"#13", "ContextFootprint", `not json`),
	}
	st := Project(rs)
	want := []string{r1 + "#1", r1 + "#2", r1 + "#3", r1 + "#5", r1 + "#6", r1 + "#7", r1 + "#11"}
	var got []string
	for _, s := range st.Skipped {
		got = append(got, s.Ref)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Skipped = %v; want %v", got, want)
	}
	if len(st.Assert) != 0 || len(st.Refused) != 1 || !strings.Contains(st.Refused[0].Why, "r-00000000000f#99, which is no earlier receipt") {
		t.Errorf("assert %+v refused %+v; want the observation citing a missing receipt refused", st.Assert, st.Refused)
	}
	if len(st.Conjectures) != 1 || st.Conjectures[0].Cited != 1 || st.PlanNext == nil {
		t.Errorf("conjectures %+v plan %+v; want the self-citing conjecture kept and planned", st.Conjectures, st.PlanNext)
	}
	if _, err := json.Marshal(st); err != nil {
		t.Errorf("the state of hostile receipts does not encode: %v", err)
	}
}

// The same receipts always give the same state, byte for byte: what a
// restarted choird shows.
func TestProjectIsDeterministic(t *testing.T) {
	rs := receipts10k()
	a, _ := json.Marshal(Project(rs))
	b, _ := json.Marshal(Project(slices.Clone(rs)))
	if !bytes.Equal(a, b) {
		t.Error("Project of the same receipts encoded differently")
	}
}

// receipts10k is 100 runs of 100 receipts each: notes of every type,
// attestations deciding some, a commit and an end per run.
func receipts10k() []Receipt {
	var rs []Receipt
	for run := range 100 {
		id := fmt.Sprintf("r-%012x", run)
		ref := func(seq int64) string { return RefOf(id, seq) }
		for seq := int64(1); seq <= 100; seq++ {
			var kind Kind
			var body string
			switch {
			case seq == 1:
				kind, body = KindRunStarted, `{"base":"b","worktree":"/wt"}`
			case seq == 100:
				kind, body = KindRunEnded, `{"status":"failed","reason":"verification failed"}`
			case seq%10 == 0:
				kind, body = KindVerifierResults, fmt.Sprintf(`{"verifier":"v","passed":%t,"supports":["%s","%s"]}`, seq%20 == 0, ref(seq-1), ref(seq-2))
			case seq%10 == 9:
				kind, body = KindNote, fmt.Sprintf(`{"type":"HYPOTHESIS","text":"h","test":"t","budget":{"tokens":1},"cites":["%s"]}`, ref(seq-10))
			case seq%10 == 8:
				kind, body = KindNote, `{"type":"OBSERVATION","text":"o"}`
			case seq%10 == 7:
				kind, body = KindNote, `{"type":"CONJECTURE","claim":"c","test":"t","edge":"e","delta_o":"d","scope":"s"}`
			case seq%10 == 6:
				kind, body = KindNote, `{"type":"HYPERTHESIS","text":"x","bound":"b"}`
			case seq%10 == 5:
				kind, body = KindNote, fmt.Sprintf(`{"type":"DRIVE","text":"d","anti_drive":"a","retracts":"%s"}`, ref(seq-10))
			case seq%10 == 4:
				kind, body = KindNote, `{"type":"BELIEVE","text":"b","trigger":"t","effect":"e"}`
			case seq%10 == 3:
				kind, body = KindNote, `{"type":"REQUEST_VERIFY","text":"r"}`
			default:
				kind, body = KindContextFootprint, `{"objective":"x"}`
			}
			rs = append(rs, Receipt{RunID: id, Seq: seq, Kind: kind, Body: json.RawMessage(body)})
		}
	}
	return rs
}

// BenchmarkProject10k is the state rebuild from 10k receipts (issue 25's
// measure): what a restarted choird, or GET /state/ahdb, spends.
func BenchmarkProject10k(b *testing.B) {
	rs := receipts10k()
	b.ReportAllocs()
	for b.Loop() {
		Project(rs)
	}
}

// FuzzProjectRules feeds Project sequences of receipts built from the
// fuzzer's bytes (kinds, note types, citations forward, backward and to
// nowhere, supports, retractions) and checks the rules hold whatever
// comes: the same receipts give the same state; every ASSERT cites only
// receipts that exist before its promotion or objects they name; plan_next
// names an untested conjecture of the vector; nothing panics.
func FuzzProjectRules(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte{1, 0, 9, 1, 1, 9, 2, 2, 2, 8, 0, 3, 7, 7, 7, 7, 4, 1, 1})
	f.Add([]byte("hypothesis citing the future"))
	notes := []string{
		`{"type":"OBSERVATION","text":"o"%s}`,
		`{"type":"HYPOTHESIS","text":"h","test":"t","budget":{"tokens":1}%s}`,
		`{"type":"CONJECTURE","claim":"c","test":"t","edge":"e","delta_o":"d","scope":"s"%s}`,
		`{"type":"HYPERTHESIS","text":"x","bound":"b"%s}`,
		`{"type":"DRIVE","text":"d","anti_drive":"a"%s}`,
		`{"type":"BELIEVE","text":"b","trigger":"t","effect":"e"%s}`,
		`{"type":"REQUEST_VERIFY","text":"r"%s}`,
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 600 {
			return
		}
		var rs []Receipt
		runs := []string{"r-000000000001", "r-000000000002"}
		seq := map[string]int64{}
		ref := func(b byte) string { // a receipt ref, maybe not (yet) there
			return RefOf(runs[int(b)%2], int64(b)%24+1)
		}
		for i := 0; i+2 < len(data); i += 3 {
			op, a, b := data[i], data[i+1], data[i+2]
			run := runs[int(op>>7)]
			seq[run]++
			var kind Kind
			var body string
			switch op % 8 {
			case 0, 1, 2, 3:
				extra := ""
				switch b % 4 {
				case 1:
					extra = fmt.Sprintf(`,"cites":["%s"]`, ref(a))
				case 2:
					extra = fmt.Sprintf(`,"retracts":"%s"`, ref(a))
				case 3:
					extra = fmt.Sprintf(`,"cites":["sha256:%064x"]`, a%3)
				}
				kind, body = KindNote, fmt.Sprintf(notes[int(a)%len(notes)], extra)
			case 4, 5:
				kind, body = KindVerifierResults, fmt.Sprintf(`{"verifier":"v","passed":%t,"supports":["%s","%s"]}`, b%3 != 0, ref(a), ref(b))
			case 6:
				kind, body = KindCommitReceipt, fmt.Sprintf(`{"commit":"c","work_item":"w","evidence":["%s"],"decision":"%s"}`, ref(a), ref(b))
			default:
				kind, body = []Kind{KindRunEnded, KindCommitDecision, "Bogus", KindPatchReceipt}[a%4], string(data[i:i+3])
			}
			var objs []string
			if b%5 == 0 {
				objs = []string{fmt.Sprintf("%064x", a%3)}
			}
			rs = append(rs, Receipt{RunID: run, Seq: seq[run], Kind: kind, Body: json.RawMessage(body), Objects: objs})
		}
		st := Project(rs)
		a, _ := json.Marshal(st)
		b, _ := json.Marshal(Project(rs))
		if !bytes.Equal(a, b) {
			t.Fatal("Project is not deterministic")
		}
		pos := map[string]int{}
		objs := map[string]int{}
		for i, r := range rs {
			pos[r.Ref()] = i
			for _, o := range r.Objects {
				if _, ok := objs[o]; !ok {
					objs[o] = i
				}
			}
		}
		for _, as := range st.Assert {
			if len(as.Cites) == 0 {
				t.Fatalf("ASSERT %+v cites nothing", as)
			}
			last := pos[as.Cites[len(as.Cites)-1]] // the attestation that promoted it
			if rs[pos[as.Ref]].Kind == KindCommitReceipt {
				last = pos[as.Ref] // a commit asserts itself
			}
			for _, c := range as.Cites {
				if o, ok := strings.CutPrefix(c, "sha256:"); ok {
					if i, ok := objs[o]; !ok || i >= last {
						t.Fatalf("ASSERT %+v cites %s, no receipt before its promotion names it", as, c)
					}
					continue
				}
				if i, ok := pos[c]; !ok || i > last {
					t.Fatalf("ASSERT %+v cites %s, not a receipt before its promotion", as, c)
				}
			}
		}
		if p := st.PlanNext; p != nil {
			i := slices.IndexFunc(st.Conjectures, func(c Conjecture) bool { return c.Ref == p.Conjecture })
			if i < 0 || st.Conjectures[i].Outcome != "" {
				t.Fatalf("plan_next %+v names no untested conjecture of %+v", p, st.Conjectures)
			}
		}
		if st.Receipts != len(rs) {
			t.Fatalf("Receipts = %d; want %d", st.Receipts, len(rs))
		}
	})
}
