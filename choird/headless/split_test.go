package headless

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func proposal(n int) SplitProposal {
	p := SplitProposal{Reason: "too big for one run"}
	for i := range n {
		p.Children = append(p.Children, ProposedItem{Description: "part " + string(rune('a'+i%26)),
			Acceptance: []string{"part " + string(rune('a'+i%26)) + " works"}})
	}
	return p
}

func TestSplitProposalRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		name, where, problem string
		edit                 func(*SplitProposal)
	}{
		{"no reason", "reason", "empty", func(p *SplitProposal) { p.Reason = " " }},
		{"one child", "children", "1 children", func(p *SplitProposal) { p.Children = p.Children[:1] }},
		{"too many children", "children", "33 children", func(p *SplitProposal) { *p = proposal(MaxChildren + 1) }},
		{"child without description", "children[1].description", "empty", func(p *SplitProposal) { p.Children[1].Description = "" }},
		{"child without acceptance", "children[0].acceptance", "no acceptance", func(p *SplitProposal) { p.Children[0].Acceptance = nil }},
		{"bad verifier", "children[0].verifiers[0]", "not a valid name", func(p *SplitProposal) { p.Children[0].Verifiers = []string{"../../bin/sh"} }},
		{"after out of range", "children[0].after[0]", "not a sibling", func(p *SplitProposal) { p.Children[0].After = []int{5} }},
		{"after negative", "children[0].after[0]", "not a sibling", func(p *SplitProposal) { p.Children[0].After = []int{-1} }},
		{"after itself", "children[1].after[0]", "itself", func(p *SplitProposal) { p.Children[1].After = []int{1} }},
		{"after twice", "children[1].after[1]", "twice", func(p *SplitProposal) { p.Children[1].After = []int{0, 0} }},
		{"cycle of two", "children", "children[0] → children[1] → children[0]", func(p *SplitProposal) {
			p.Children[0].After, p.Children[1].After = []int{1}, []int{0}
		}},
		{"cycle of three", "children", "cycle", func(p *SplitProposal) {
			p.Children[0].After, p.Children[1].After, p.Children[2].After = []int{2}, []int{0}, []int{1}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := proposal(3)
			tc.edit(&p)
			err := p.Check()
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Where != tc.where || !strings.Contains(ve.Problem, tc.problem) {
				t.Fatalf("Check() = %v; want a refusal at %s saying %q", err, tc.where, tc.problem)
			}
		})
	}
	p := proposal(3)
	p.Children[2].After = []int{0, 1}
	if err := p.Check(); err != nil {
		t.Errorf("Check() of a chain without a cycle = %v; want nil", err)
	}
}

// splitRun starts a run of item and has its agent request p.
func splitRun(t *testing.T, d *Director, item string, p SplitProposal) Run {
	t.Helper()
	ctx := t.Context()
	r := mustRun(t, d, item)
	if _, _, err := d.MarkRunning(ctx, r.ID, base, "/wt/"+r.ID, ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.RequestSplit(ctx, r.ID, p, ""); err != nil {
		t.Fatalf("RequestSplit = %v", err)
	}
	return r
}

func TestLowRiskSplitRequestSplitsTheItem(t *testing.T) {
	d, ctx := newDirector(t)
	dep := mustItem(t, d, NewWorkItem{Description: "the dependency"})
	commitRun(t, d, mustRun(t, d, dep.ID))
	item := mustItem(t, d, NewWorkItem{Verifiers: []string{"go-test"}, DependsOn: []string{dep.ID}, Acceptance: []string{"the whole thing works"}})
	after := mustItem(t, d, NewWorkItem{Description: "waits for the item", DependsOn: []string{item.ID}})
	p := proposal(2)
	p.Children[1].After = []int{0}
	p.Children[1].Verifiers = []string{"lint"}
	r := splitRun(t, d, item.ID, p)

	dec, ok, err := d.ActOnSplit(ctx, r.ID, 3)
	if err != nil || !ok || dec.Decision != SplitDone || len(dec.Children) != 2 {
		t.Fatalf("ActOnSplit = %+v, %v, %v; want split into 2", dec, ok, err)
	}
	parent, _ := d.WorkItem(ctx, item.ID)
	if parent.Status != WorkSplit {
		t.Errorf("parent status = %s; want split", parent.Status)
	}
	run, _ := d.Run(ctx, r.ID)
	if run.Status != RunDiscarded {
		t.Errorf("run status = %s; want discarded (nothing committed)", run.Status)
	}
	c0, _ := d.WorkItem(ctx, dec.Children[0])
	c1, _ := d.WorkItem(ctx, dec.Children[1])
	if !slices.Equal(c0.Acceptance, []string{"the whole thing works", "part a works"}) || !slices.Equal(c0.Verifiers, []string{"go-test"}) {
		t.Errorf("child 0 = %+v; want the parent's acceptance and verifiers plus its own", c0)
	}
	if !slices.Equal(c1.Verifiers, []string{"go-test", "lint"}) || !slices.Equal(c1.DependsOn, []string{dep.ID, c0.ID}) {
		t.Errorf("child 1 = %+v; want verifiers go-test, lint and depends_on the parent's dependency and child 0", c1)
	}
	if c0.Status != WorkReady || c1.Status != WorkOpen || c0.Parent != item.ID || c0.Risk != RiskLow {
		t.Errorf("children statuses %s, %s, parent %s; want ready, open (waiting for its sibling), %s", c0.Status, c1.Status, c0.Parent, item.ID)
	}
	rs, _ := d.Receipts(ctx, r.ID, 0)
	var kinds []Kind
	for _, rec := range rs {
		kinds = append(kinds, rec.Kind)
	}
	if want := []Kind{KindRunStarted, KindSplitRequest, KindSplitDecision, KindRunEnded}; !slices.Equal(kinds, want) {
		t.Errorf("receipts = %v; want %v", kinds, want)
	}
	// What waited for the parent waits for every child.
	commitRun(t, d, mustRun(t, d, c0.ID))
	if a, _ := d.WorkItem(ctx, after.ID); a.Status != WorkOpen {
		t.Errorf("dependent of the split item with one child done = %s; want open", a.Status)
	}
	r1 := mustRun(t, d, c1.ID)
	d.MarkRunning(ctx, r1.ID, base, "/wt/"+r1.ID, "")
	d.Attest(ctx, r1.ID, Attestation{Verifier: "lint", Passed: true}, "")
	d.Attest(ctx, r1.ID, Attestation{Verifier: "go-test", Passed: true}, "")
	d.RequestCommit(ctx, r1.ID, CommitRequest{Summary: "b", Patch: patchID}, "")
	if _, _, err := d.DecideCommit(ctx, r1.ID, true, PolicyDecider, "", ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.RecordCommit(ctx, r1.ID, commit, ""); err != nil {
		t.Fatal(err)
	}
	if a, _ := d.WorkItem(ctx, after.ID); a.Status != WorkReady {
		t.Errorf("dependent of the split item with every child done = %s; want ready", a.Status)
	}
}

func TestMediumRiskSplitWaitsForAHuman(t *testing.T) {
	d, ctx := newDirector(t)
	item := mustItem(t, d, NewWorkItem{Risk: RiskMedium})
	r := splitRun(t, d, item.ID, proposal(2))
	dec, ok, err := d.ActOnSplit(ctx, r.ID, 3)
	if err != nil || !ok || dec.Decision != SplitAwaitingHuman {
		t.Fatalf("ActOnSplit = %+v, %v, %v; want awaiting_human", dec, ok, err)
	}
	if it, _ := d.WorkItem(ctx, item.ID); it.Status != WorkReady {
		t.Fatalf("item after the run = %s; want ready again until a human splits it", it.Status)
	}
	if !strings.Contains(dec.Reason, "choirctl work split "+item.ID+" --request "+dec.Request) {
		t.Errorf("reason = %q; want the command that carries it out", dec.Reason)
	}
	// Hostile: the request of another item's run, a receipt that is no
	// split request, a malformed reference.
	other := mustItem(t, d, NewWorkItem{Description: "other"})
	ro := splitRun(t, d, other.ID, proposal(2))
	for _, tc := range []struct{ item, ref, want string }{
		{item.ID, ro.ID + "#2", "not " + item.ID},
		{item.ID, r.ID + "#1", "not a SplitRequest"},
		{item.ID, r.ID + "#99", "no receipt 99"},
		{item.ID, "r-000000000000#1", "run r-000000000000"},
		{item.ID, "../etc#1", "not a receipt reference"},
	} {
		if _, _, err := d.SplitByRequest(ctx, tc.item, tc.ref); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SplitByRequest(%s, %s) = %v; want an error saying %q", tc.item, tc.ref, err, tc.want)
		}
	}
	parent, kids, err := d.SplitByRequest(ctx, item.ID, dec.Request)
	if err != nil || parent.Status != WorkSplit || len(kids) != 2 || kids[0].Risk != RiskMedium {
		t.Fatalf("SplitByRequest = %+v, %+v, %v; want split into 2 medium-risk children", parent, kids, err)
	}
	if _, _, err := d.SplitByRequest(ctx, item.ID, dec.Request); !errors.Is(err, ErrConflict) {
		t.Errorf("a second SplitByRequest = %v; want a conflict (already split)", err)
	}
}

func TestSplitBeyondTheCapIsEscalated(t *testing.T) {
	d, ctx := newDirector(t)
	id := mustItem(t, d, NewWorkItem{}).ID
	for depth := 0; depth < 2; depth++ {
		r := splitRun(t, d, id, proposal(2))
		dec, _, err := d.ActOnSplit(ctx, r.ID, 2)
		if err != nil || dec.Decision != SplitDone || dec.Depth != depth {
			t.Fatalf("split at depth %d = %+v, %v; want split", depth, dec, err)
		}
		id = dec.Children[0]
	}
	r := splitRun(t, d, id, proposal(2))
	dec, _, err := d.ActOnSplit(ctx, r.ID, 2)
	if err != nil || dec.Decision != SplitEscalated || dec.Depth != 2 || len(dec.Children) != 0 {
		t.Fatalf("split at the cap = %+v, %v; want escalated, no children", dec, err)
	}
	if it, _ := d.WorkItem(ctx, id); it.Status != WorkReady {
		t.Errorf("escalated item = %s; want ready, not split", it.Status)
	}
	if kids, _ := d.Children(ctx, id); len(kids) != 0 {
		t.Errorf("escalated item has children %v", kids)
	}
}

func TestSplitRequestRules(t *testing.T) {
	d, ctx := newDirector(t)
	item := mustItem(t, d, NewWorkItem{})
	r := mustRun(t, d, item.ID)
	if _, _, err := d.RequestSplit(ctx, r.ID, proposal(2), ""); !errors.Is(err, ErrConflict) {
		t.Errorf("RequestSplit on a queued run = %v; want a conflict", err)
	}
	d.MarkRunning(ctx, r.ID, base, "/wt/x", "")
	// A run without a split request: nothing to act on.
	if _, ok, err := d.ActOnSplit(ctx, r.ID, 3); ok || err != nil {
		t.Errorf("ActOnSplit without a request = %v, %v; want not ok", ok, err)
	}
	// Inherited criteria beyond the limit: the split is refused, and said.
	big := mustItem(t, d, NewWorkItem{Description: "big", Acceptance: func() []string {
		var a []string
		for i := range MaxListItems {
			a = append(a, "criterion "+string(rune('A'+i)))
		}
		return a
	}()})
	rb := splitRun(t, d, big.ID, proposal(2))
	dec, _, err := d.ActOnSplit(ctx, rb.ID, 3)
	if err != nil || dec.Decision != SplitRefused || !strings.Contains(dec.Reason, "acceptance") {
		t.Errorf("ActOnSplit with too many inherited criteria = %+v, %v; want refused, naming acceptance", dec, err)
	}
	if it, _ := d.WorkItem(ctx, big.ID); it.Status != WorkReady {
		t.Errorf("item of a refused split = %s; want ready", it.Status)
	}
	// Record cannot forge a split request or a merged spec change.
	for _, k := range []Kind{KindSplitRequest, KindSpecChangeRequest, KindSplitDecision} {
		if _, _, err := d.Record(ctx, r.ID, k, []byte(`{"merged":true,"paths":["SPECS/a.md"]}`), nil, ""); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("Record(%s) = %v; want refused", k, err)
		}
	}
}
