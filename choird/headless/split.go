package headless

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// DefaultMaxSplits is how many times a work item may be split along its
// ancestry (headless.max_splits) before a further SPLIT_REQUEST goes to
// the DM instead.
const DefaultMaxSplits = 3

// KindSplitDecision records what the director did with a run's
// SPLIT_REQUEST (SplitDecisionBody).
const KindSplitDecision Kind = "SplitDecision"

// ProposedItem is one child a SPLIT_REQUEST proposes. The child inherits
// the parent's acceptance criteria, verifiers, risk and dependencies and
// adds its own; After names siblings (by index) it waits for.
type ProposedItem struct {
	Description string   `json:"description"`
	Acceptance  []string `json:"acceptance"`
	Verifiers   []string `json:"verifiers,omitempty"`
	After       []int    `json:"after,omitempty"`
}

// SplitProposal is the body of a SplitRequest receipt: a run that cannot
// finish its work item within its budget proposes children (seed 002 §6).
type SplitProposal struct {
	Reason   string         `json:"reason"`
	Children []ProposedItem `json:"children"`
}

// Check validates a proposal: a reason, 2 to MaxChildren children each
// with a description and at least one acceptance criterion of its own,
// valid verifier names, and sibling dependencies that exist and close no
// cycle.
func (p *SplitProposal) Check() error {
	if err := text("reason", p.Reason, true, MaxReason); err != nil {
		return err
	}
	if len(p.Children) < 2 || len(p.Children) > MaxChildren {
		return invalid("children", fmt.Sprintf("propose 2 to %d children", MaxChildren), "has %d children", len(p.Children))
	}
	for i, c := range p.Children {
		prefix := "children[" + strconv.Itoa(i) + "]."
		if err := text(prefix+"description", c.Description, true, MaxDescription); err != nil {
			return err
		}
		if len(c.Acceptance) == 0 {
			return invalid(prefix+"acceptance", "give at least one criterion of its own that a verifier or a human can check", "no acceptance criterion")
		}
		if err := list(prefix+"acceptance", c.Acceptance, MaxListItems, checkAcceptance); err != nil {
			return err
		}
		if err := list(prefix+"verifiers", c.Verifiers, MaxListItems, checkName("verifier")); err != nil {
			return err
		}
		seen := map[int]bool{}
		for j, a := range c.After {
			w := prefix + "after[" + strconv.Itoa(j) + "]"
			switch {
			case a < 0 || a >= len(p.Children):
				return invalid(w, "name a sibling by its index, 0 to "+strconv.Itoa(len(p.Children)-1), "%d is not a sibling", a)
			case a == i:
				return invalid(w, "remove it", "a child cannot wait for itself")
			case seen[a]:
				return invalid(w, "remove the duplicate", "%d is named twice", a)
			}
			seen[a] = true
		}
	}
	if path := afterCycle(p.Children); path != nil {
		names := make([]string, len(path))
		for i, n := range path {
			names[i] = "children[" + strconv.Itoa(n) + "]"
		}
		return invalid("children", "remove one of these \"after\" entries", "the children wait for each other in a cycle: %s", strings.Join(names, " → "))
	}
	return nil
}

// afterCycle returns a cycle among the siblings' After, as indexes from a
// child back to itself, or nil.
func afterCycle(cs []ProposedItem) []int {
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(cs))
	var stack []int
	var walk func(i int) []int
	walk = func(i int) []int {
		color[i] = grey
		stack = append(stack, i)
		for _, j := range cs[i].After {
			switch color[j] {
			case grey:
				k := slices.Index(stack, j)
				return append(slices.Clone(stack[k:]), j)
			case white:
				if p := walk(j); p != nil {
					return p
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[i] = black
		return nil
	}
	for i := range cs {
		if color[i] == white {
			if p := walk(i); p != nil {
				return p
			}
		}
	}
	return nil
}

// SplitDecisionBody is the body of a SplitDecision receipt.
type SplitDecisionBody struct {
	Request  string   `json:"request"`  // the SplitRequest receipt decided
	Decision string   `json:"decision"` // SplitDone, SplitAwaitingHuman, SplitEscalated or SplitRefused
	By       string   `json:"by"`
	Depth    int      `json:"depth"` // splits along the work item's ancestry before this one
	Children []string `json:"children,omitempty"`
	Reason   string   `json:"reason,omitempty"`
}

// Split decisions.
const (
	SplitDone          = "split"          // low risk: the children exist
	SplitAwaitingHuman = "awaiting_human" // medium or high risk: `choirctl work split <item> --request <ref>`
	SplitEscalated     = "escalated"      // split max_splits times already: the DM decides
	SplitRefused       = "refused"        // the proposal cannot be applied to the item as it is
)

// RequestSplit records a run's SPLIT_REQUEST (a SplitRequest receipt) while
// its agent works. The director acts on it when the session ends
// (ActOnSplit): the run ends without a commit.
func (d *Director) RequestSplit(ctx context.Context, runID string, p SplitProposal, key string) (Receipt, bool, error) {
	if err := p.Check(); err != nil {
		return Receipt{}, false, err
	}
	return d.append(ctx, step{what: "request a split", runID: runID, kind: KindSplitRequest, body: p, key: key,
		allow: func(r Run) (RunStatus, WorkStatus, error) {
			return "", "", in(r, "request a split", RunRunning, RunVerifying)
		}})
}

// PendingSplit returns a run's latest SplitRequest receipt and its
// proposal; ok false when the run made none.
func PendingSplit(rs []Receipt) (Receipt, SplitProposal, bool) {
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].Kind != KindSplitRequest {
			continue
		}
		var p SplitProposal
		if json.Unmarshal(rs[i].Body, &p) == nil && p.Check() == nil {
			return rs[i], p, true
		}
	}
	return Receipt{}, SplitProposal{}, false
}

// depth counts the splits along a work item's ancestry (its ancestors).
func (g *graph) depth(id string) int {
	n := 0
	for cur := g.items[id].Parent; cur != "" && n <= 64; cur = g.items[cur].Parent {
		n++
	}
	return n
}

// ActOnSplit acts on the SPLIT_REQUEST of a live run whose agent has
// finished (the runner calls it instead of verifying): it records a
// SplitDecision and ends the run (discarded, nothing committed). A low-risk
// work item split fewer than maxSplits times along its ancestry is split
// into the proposed children at once (the parent becomes split); a medium
// or high one waits for a human (`choirctl work split <item> --request
// <ref>`); one split maxSplits times already is escalated (the caller
// tells the DM). ok is false when the run made no split request.
func (d *Director) ActOnSplit(ctx context.Context, runID string, maxSplits int) (SplitDecisionBody, bool, error) {
	if maxSplits <= 0 {
		maxSplits = DefaultMaxSplits
	}
	r, err := d.Run(ctx, runID)
	if err != nil {
		return SplitDecisionBody{}, false, err
	}
	rs, err := d.store.Receipts(ctx, runID, 0)
	if err != nil {
		return SplitDecisionBody{}, false, err
	}
	req, p, ok := PendingSplit(rs)
	if !ok {
		return SplitDecisionBody{}, false, nil
	}
	g, err := d.graph(ctx)
	if err != nil {
		return SplitDecisionBody{}, true, err
	}
	item, found := g.items[r.WorkItem]
	if !found {
		return SplitDecisionBody{}, true, fmt.Errorf("run %s: work item %s: %w", runID, r.WorkItem, ErrNotFound)
	}
	dec := SplitDecisionBody{Request: req.Ref(), By: PolicyDecider, Depth: g.depth(item.ID)}
	var items []WorkItem
	switch {
	case dec.Depth >= maxSplits:
		dec.Decision = SplitEscalated
		dec.Reason = fmt.Sprintf("work item %s was split %d times along its ancestry already (headless.max_splits is %d): the DM decides", item.ID, dec.Depth, maxSplits)
	case item.Risk != RiskLow:
		dec.Decision = SplitAwaitingHuman
		dec.Reason = fmt.Sprintf("work item %s is %s risk: a human decides (choirctl work split %s --request %s)", item.ID, item.Risk, item.ID, req.Ref())
	default:
		items, err = d.children(item, p)
		if err != nil {
			dec.Decision, dec.Reason = SplitRefused, clipText(err.Error(), MaxReason)
			break
		}
		dec.Decision = SplitDone
		for _, it := range items {
			dec.Children = append(dec.Children, it.ID)
		}
		dec.Reason = "low risk: split by policy"
	}
	if _, _, err := d.append(ctx, step{what: "decide the split", runID: runID, kind: KindSplitDecision, body: dec, key: "split-decision:" + strconv.FormatInt(req.Seq, 10),
		allow: func(r Run) (RunStatus, WorkStatus, error) {
			return "", "", in(r, "decide the split", RunRunning, RunVerifying)
		}}); err != nil {
		return dec, true, err
	}
	why := "split requested (" + req.Ref() + "): " + dec.Decision
	if dec.Decision == SplitDone {
		if err := d.insertSplit(ctx, item.ID, runID, items); err != nil {
			// Nothing was split: the run ends all the same, and says why.
			d.EndRun(ctx, runID, RunDiscarded, clipText(why+", but the split failed: "+err.Error(), MaxReason), "end")
			return dec, true, err
		}
	}
	if len(dec.Children) > 0 {
		why += " into " + strings.Join(dec.Children, ", ")
	}
	if _, _, err := d.EndRun(ctx, runID, RunDiscarded, clipText(why, MaxReason), "end"); err != nil {
		return dec, true, err
	}
	return dec, true, nil
}

// children builds the work items a proposal makes of parent: each takes
// the parent's agent, risk, acceptance criteria, verifiers and
// dependencies, adds its own, and waits for the siblings it names.
func (d *Director) children(parent WorkItem, p SplitProposal) ([]WorkItem, error) {
	items := make([]WorkItem, len(p.Children))
	for i, c := range p.Children {
		n := NewWorkItem{Agent: parent.Agent, Description: c.Description, Risk: parent.Risk,
			Acceptance: union(parent.Acceptance, c.Acceptance), Verifiers: union(parent.Verifiers, c.Verifiers),
			DependsOn: slices.Clone(parent.DependsOn)}
		prefix := "children[" + strconv.Itoa(i) + "]."
		if err := n.Check(prefix); err != nil {
			return nil, err
		}
		items[i] = d.newItem(n, parent.ID)
	}
	for i, c := range p.Children {
		for _, a := range c.After {
			items[i].DependsOn = append(items[i].DependsOn, items[a].ID)
		}
		if len(items[i].DependsOn) > MaxListItems {
			return nil, invalid("children["+strconv.Itoa(i)+"].after", "wait for fewer siblings", "with the parent's dependencies it would wait for %d items, over the limit of %d", len(items[i].DependsOn), MaxListItems)
		}
	}
	return items, nil
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return nonNil(out)
}

// insertSplit stores the children and makes the parent split. The parent
// must be open (a human's split) or running under runID (the run that
// asked).
func (d *Director) insertSplit(ctx context.Context, parentID, runID string, items []WorkItem) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	parent, err := d.store.WorkItem(ctx, parentID)
	if err != nil {
		return fmt.Errorf("split work item %s: %w", parentID, err)
	}
	switch {
	case parent.Status == WorkRunning && runID != "":
		r, err := d.store.Run(ctx, runID)
		if err != nil {
			return fmt.Errorf("split work item %s: %w", parentID, err)
		}
		if r.WorkItem != parentID || r.Status.Ended() {
			return fmt.Errorf("split work item %s: run %s does not hold it: %w", parentID, runID, ErrConflict)
		}
	default:
		if err := editable(parent, "split"); err != nil {
			return err
		}
	}
	if err := d.store.InsertWorkItems(ctx, items, parentID); err != nil {
		return fmt.Errorf("split work item %s: %w", parentID, err)
	}
	return nil
}

// SplitByRequest is a human's decision on a SPLIT_REQUEST that waited for
// one (`choirctl work split <item> --request <run>#<seq>`): the open work
// item is split into the children the request proposed, as ActOnSplit
// would have. The request must be a SplitRequest of a run of that item.
func (d *Director) SplitByRequest(ctx context.Context, itemID, ref string) (WorkItem, []WorkItem, error) {
	if err := checkWorkRef("id", itemID); err != nil {
		return WorkItem{}, nil, err
	}
	rec, err := d.receipt(ctx, "request", ref)
	if err != nil {
		return WorkItem{}, nil, err
	}
	if rec.Kind != KindSplitRequest {
		return WorkItem{}, nil, invalid("request", "cite the SplitRequest receipt the DM named (choirctl run receipts <run>)", "%s is a %s receipt, not a SplitRequest", ref, rec.Kind)
	}
	r, err := d.Run(ctx, rec.RunID)
	if err != nil {
		return WorkItem{}, nil, err
	}
	if r.WorkItem != itemID {
		return WorkItem{}, nil, invalid("request", "cite a split request of this work item's runs", "%s was made by run %s of work item %s, not %s", ref, r.ID, r.WorkItem, itemID)
	}
	var p SplitProposal
	if err := json.Unmarshal(rec.Body, &p); err != nil {
		return WorkItem{}, nil, fmt.Errorf("split request %s: its body is not a proposal: %w", ref, ErrConflict)
	}
	if err := p.Check(); err != nil {
		return WorkItem{}, nil, fmt.Errorf("split request %s: %w", ref, err)
	}
	g, err := d.graph(ctx)
	if err != nil {
		return WorkItem{}, nil, err
	}
	parent, ok := g.items[itemID]
	if !ok {
		return WorkItem{}, nil, fmt.Errorf("split work item %s: %w", itemID, ErrNotFound)
	}
	if err := editable(parent, "split"); err != nil {
		return WorkItem{}, nil, err
	}
	items, err := d.children(parent, p)
	if err != nil {
		return WorkItem{}, nil, err
	}
	if err := d.insertSplit(ctx, itemID, "", items); err != nil {
		return WorkItem{}, nil, err
	}
	parent.Status, parent.Updated = WorkSplit, d.now()
	return parent, items, nil
}

// receipt reads the receipt a reference names.
func (d *Director) receipt(ctx context.Context, where, ref string) (Receipt, error) {
	if err := checkReceiptRef(where, ref); err != nil {
		return Receipt{}, err
	}
	runID, seqText, _ := cut(ref)
	seq, _ := strconv.ParseInt(seqText, 10, 64)
	if _, err := d.store.Run(ctx, runID); err != nil {
		return Receipt{}, invalid(where, "cite a receipt of a run `choirctl run list` shows", "run %s of %s: %v", runID, ref, err)
	}
	rs, err := d.store.Receipts(ctx, runID, seq-1)
	if err != nil {
		return Receipt{}, err
	}
	if len(rs) == 0 || rs[0].Seq != seq {
		return Receipt{}, invalid(where, "cite a receipt that exists (choirctl run receipts "+runID+")", "run %s has no receipt %d", runID, seq)
	}
	return rs[0], nil
}

func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
