package headless

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Director is the control plane of headless runs (seed 002 §2.1): it owns
// the work queue, binds runs to work items, and checks every change to a
// run against the run's status. It is safe for concurrent use; writes are
// serialised, so the checks and the store's write are one step.
type Director struct {
	store Store
	// KnownAgent says whether an agent id is configured; nil accepts any.
	KnownAgent func(id string) bool
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Changed, when set, is called after a run was queued or a receipt
	// appended to it (not for a resend), outside the Director's lock: the
	// director loop wakes on it (a run queued, a human's decision).
	Changed func(runID string, kind Kind)
	// CheckCites, when set, checks a receipt body's object citations
	// ("sha256:<hex>" in its "cites") before it is appended: a note or
	// request citing an object that is missing or changed is refused.
	CheckCites CitesChecker

	mu sync.Mutex
}

func (d *Director) changed(runID string, kind Kind) {
	if d.Changed != nil {
		d.Changed(runID, kind)
	}
}

// New returns a Director over s.
func New(s Store) *Director { return &Director{store: s} }

// now is the clock at Postgres's precision (microseconds), so what the
// Director returns equals what reads back.
func (d *Director) now() time.Time {
	now := time.Now
	if d.Now != nil {
		now = d.Now
	}
	return now().UTC().Truncate(time.Microsecond)
}

// WorkFilter selects work items: an agent and a status ("" for any).
type WorkFilter struct {
	Agent  string
	Status WorkStatus
}

// graph is every work item by id, with the derived statuses.
type graph struct {
	items    map[string]WorkItem
	children map[string][]string
	order    []string
}

func (d *Director) graph(ctx context.Context) (*graph, error) {
	all, err := d.store.WorkItems(ctx)
	if err != nil {
		return nil, fmt.Errorf("list work items: %w", err)
	}
	g := &graph{items: make(map[string]WorkItem, len(all)), children: map[string][]string{}}
	for _, it := range all {
		g.items[it.ID] = it
		g.order = append(g.order, it.ID)
		if it.Parent != "" {
			g.children[it.Parent] = append(g.children[it.Parent], it.ID)
		}
	}
	return g, nil
}

// satisfied reports whether a dependency on id is met: the item is done,
// or it was split and every child is satisfied.
func (g *graph) satisfied(id string, depth int) bool {
	it, ok := g.items[id]
	if !ok || depth > 64 {
		return false
	}
	switch it.Status {
	case WorkDone:
		return true
	case WorkSplit:
		for _, c := range g.children[id] {
			if !g.satisfied(c, depth+1) {
				return false
			}
		}
		return len(g.children[id]) > 0
	}
	return false
}

// view returns an item with its derived status: an open item is ready when
// every dependency is satisfied, blocked when one was cancelled.
func (g *graph) view(it WorkItem) WorkItem {
	if it.Status != WorkOpen {
		return it
	}
	ready := true
	for _, dep := range it.DependsOn {
		if g.items[dep].Status == WorkCancelled {
			it.Status = WorkBlocked
			return it
		}
		if !g.satisfied(dep, 0) {
			ready = false
		}
	}
	if ready {
		it.Status = WorkReady
	}
	return it
}

// cycle returns the dependency path from id back to itself when deps
// (id's dependencies, as they would be) close a loop.
func (g *graph) cycle(id string, deps []string) []string {
	seen := map[string]bool{}
	var walk func(cur string, path []string) []string
	walk = func(cur string, path []string) []string {
		if cur == id {
			return path
		}
		if seen[cur] {
			return nil
		}
		seen[cur] = true
		for _, next := range g.items[cur].DependsOn {
			if p := walk(next, append(path, next)); p != nil {
				return p
			}
		}
		return nil
	}
	for _, dep := range deps {
		if p := walk(dep, []string{id, dep}); p != nil {
			return p
		}
	}
	return nil
}

// checkDeps checks that every dependency exists and that none closes a
// cycle through id.
func (g *graph) checkDeps(id string, deps []string, prefix string) error {
	for i, dep := range deps {
		where := fmt.Sprintf("%sdepends_on[%d]", prefix, i)
		if dep == id {
			return invalid(where, "remove it", "a work item cannot depend on itself")
		}
		if _, ok := g.items[dep]; !ok {
			return &ValidationError{Where: where, Problem: fmt.Sprintf("work item %s does not exist", dep), Fix: "check the id with `choirctl work list`"}
		}
	}
	if p := g.cycle(id, deps); p != nil {
		return invalid(prefix+"depends_on", "remove one of these dependencies", "dependencies form a cycle: %s", strings.Join(p, " → "))
	}
	return nil
}

func (d *Director) checkAgent(where, agent string) error {
	if d.KnownAgent != nil && !d.KnownAgent(agent) {
		return invalid(where, "name an agent from config.json", "agent %q is not configured", agent)
	}
	return nil
}

// AddWorkItem validates and stores a new work item.
func (d *Director) AddWorkItem(ctx context.Context, n NewWorkItem) (WorkItem, error) {
	if err := n.Check(""); err != nil {
		return WorkItem{}, err
	}
	if err := d.checkAgent("agent", n.Agent); err != nil {
		return WorkItem{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	g, err := d.graph(ctx)
	if err != nil {
		return WorkItem{}, err
	}
	it := d.newItem(n, "")
	if err := g.checkDeps(it.ID, it.DependsOn, ""); err != nil {
		return WorkItem{}, err
	}
	if err := d.store.InsertWorkItems(ctx, []WorkItem{it}, ""); err != nil {
		return WorkItem{}, fmt.Errorf("add work item: %w", err)
	}
	g.items[it.ID] = it
	return g.view(it), nil
}

func (d *Director) newItem(n NewWorkItem, parent string) WorkItem {
	now := d.now()
	return WorkItem{ID: NewWorkItemID(), Agent: n.Agent, Description: n.Description,
		Acceptance: nonNil(n.Acceptance), Verifiers: nonNil(n.Verifiers), Risk: n.Risk, DependsOn: nonNil(n.DependsOn),
		Parent: parent, Status: WorkOpen, Created: now, Updated: now}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// WorkItem returns one work item with its derived status.
func (d *Director) WorkItem(ctx context.Context, id string) (WorkItem, error) {
	if err := checkWorkRef("id", id); err != nil {
		return WorkItem{}, err
	}
	g, err := d.graph(ctx)
	if err != nil {
		return WorkItem{}, err
	}
	it, ok := g.items[id]
	if !ok {
		return WorkItem{}, fmt.Errorf("work item %s: %w (see `choirctl work list`)", id, ErrNotFound)
	}
	return g.view(it), nil
}

// Children returns the ids of the items a work item was split into.
func (d *Director) Children(ctx context.Context, id string) ([]string, error) {
	g, err := d.graph(ctx)
	if err != nil {
		return nil, err
	}
	return nonNil(g.children[id]), nil
}

// WorkItems lists work items, oldest first, with derived statuses.
func (d *Director) WorkItems(ctx context.Context, f WorkFilter) ([]WorkItem, error) {
	g, err := d.graph(ctx)
	if err != nil {
		return nil, err
	}
	out := []WorkItem{}
	for _, id := range g.order {
		it := g.view(g.items[id])
		if (f.Agent == "" || it.Agent == f.Agent) && (f.Status == "" || it.Status == f.Status) {
			out = append(out, it)
		}
	}
	return out, nil
}

// editable refuses a change to an item that has a run, is done, split or
// cancelled.
func editable(it WorkItem, verb string) error {
	switch it.Status {
	case WorkOpen, WorkBlocked:
		return nil
	case WorkRunning:
		return fmt.Errorf("%s work item %s: it %w (end the run first, or wait for it)", verb, it.ID, ErrActiveRun)
	}
	return fmt.Errorf("%s work item %s: it is %s: %w", verb, it.ID, it.Status, ErrConflict)
}

// UpdateWorkItem changes an open work item's fields.
func (d *Director) UpdateWorkItem(ctx context.Context, id string, u WorkItemUpdate) (WorkItem, error) {
	if err := checkWorkRef("id", id); err != nil {
		return WorkItem{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	g, err := d.graph(ctx)
	if err != nil {
		return WorkItem{}, err
	}
	it, ok := g.items[id]
	if !ok {
		return WorkItem{}, fmt.Errorf("update work item %s: %w", id, ErrNotFound)
	}
	if err := editable(it, "update"); err != nil {
		return WorkItem{}, err
	}
	it, err = u.apply(it)
	if err != nil {
		return WorkItem{}, err
	}
	if err := g.checkDeps(id, it.DependsOn, ""); err != nil {
		return WorkItem{}, err
	}
	it.Updated = d.now()
	if err := d.store.UpdateWorkItem(ctx, it); err != nil {
		return WorkItem{}, fmt.Errorf("update work item %s: %w", id, err)
	}
	g.items[id] = it
	return g.view(it), nil
}

// SplitWorkItem replaces an open work item by children that cover it:
// each acceptance criterion and each required verifier of the parent is
// carried by at least one child. Children take the parent's agent, risk
// (when they give none) and dependencies (plus their own); the parent's
// status becomes split, and what depended on it waits for every child.
func (d *Director) SplitWorkItem(ctx context.Context, id string, children []NewWorkItem) (WorkItem, []WorkItem, error) {
	if err := checkWorkRef("id", id); err != nil {
		return WorkItem{}, nil, err
	}
	if len(children) < 2 || len(children) > MaxChildren {
		return WorkItem{}, nil, invalid("children", "split into 2 to 32 children", "has %d children", len(children))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	g, err := d.graph(ctx)
	if err != nil {
		return WorkItem{}, nil, err
	}
	parent, ok := g.items[id]
	if !ok {
		return WorkItem{}, nil, fmt.Errorf("split work item %s: %w", id, ErrNotFound)
	}
	if err := editable(parent, "split"); err != nil {
		return WorkItem{}, nil, err
	}
	items := make([]WorkItem, len(children))
	for i, c := range children {
		prefix := fmt.Sprintf("children[%d].", i)
		if c.Agent == "" {
			c.Agent = parent.Agent
		}
		if c.Agent != parent.Agent {
			return WorkItem{}, nil, invalid(prefix+"agent", "leave it out: children belong to the parent's agent", "agent %q differs from the parent's %q", c.Agent, parent.Agent)
		}
		if c.Risk == "" {
			c.Risk = parent.Risk
		}
		for _, dep := range parent.DependsOn {
			if !slices.Contains(c.DependsOn, dep) {
				c.DependsOn = append(c.DependsOn, dep)
			}
		}
		if err := c.Check(prefix); err != nil {
			return WorkItem{}, nil, err
		}
		items[i] = d.newItem(c, id)
		if err := g.checkDeps(items[i].ID, c.DependsOn, prefix); err != nil {
			return WorkItem{}, nil, err
		}
		for _, dep := range c.DependsOn {
			if dep == id {
				return WorkItem{}, nil, invalid(prefix+"depends_on", "remove it", "a child cannot depend on the item it splits")
			}
		}
	}
	for i, a := range parent.Acceptance {
		if !slices.ContainsFunc(items, func(c WorkItem) bool { return slices.Contains(c.Acceptance, a) }) {
			return WorkItem{}, nil, invalid(fmt.Sprintf("children (parent acceptance[%d])", i), "copy it into the acceptance of the child that will meet it",
				"no child carries the parent's criterion %q, so the children would not cover the parent", a)
		}
	}
	for i, v := range parent.Verifiers {
		if !slices.ContainsFunc(items, func(c WorkItem) bool { return slices.Contains(c.Verifiers, v) }) {
			return WorkItem{}, nil, invalid(fmt.Sprintf("children (parent verifiers[%d])", i), "add it to the verifiers of at least one child",
				"no child runs the parent's verifier %q", v)
		}
	}
	if err := d.store.InsertWorkItems(ctx, items, id); err != nil {
		return WorkItem{}, nil, fmt.Errorf("split work item %s: %w", id, err)
	}
	parent.Status, parent.Updated = WorkSplit, d.now()
	g.items[id] = parent
	out := make([]WorkItem, len(items))
	for i, it := range items {
		g.items[it.ID] = it
		out[i] = g.view(it)
	}
	return parent, out, nil
}

// CancelWorkItem cancels a work item that is not done, with its queued
// run if it has one; a running one must end first. Open items that
// depended on it show as blocked.
func (d *Director) CancelWorkItem(ctx context.Context, id string) (WorkItem, error) {
	if err := checkWorkRef("id", id); err != nil {
		return WorkItem{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	it, err := d.store.WorkItem(ctx, id)
	if err != nil {
		return WorkItem{}, fmt.Errorf("cancel work item %s: %w", id, err)
	}
	switch it.Status {
	case WorkDone, WorkCancelled:
		return WorkItem{}, fmt.Errorf("cancel work item %s: it is already %s: %w", id, it.Status, ErrConflict)
	case WorkSplit:
		return WorkItem{}, fmt.Errorf("cancel work item %s: it was split: %w (cancel its children instead)", id, ErrConflict)
	case WorkRunning:
		runs, err := d.store.Runs(ctx, "", id)
		if err != nil {
			return WorkItem{}, err
		}
		for _, r := range runs {
			if r.Status.Ended() {
				continue
			}
			if r.Status != RunQueued {
				return WorkItem{}, fmt.Errorf("cancel work item %s: run %s is %s: %w (wait for it to end)", id, r.ID, r.Status, ErrActiveRun)
			}
			body, _ := json.Marshal(RunEndedBody{Status: RunCancelled, Reason: "work item cancelled"})
			if _, _, err := d.store.Append(ctx, Append{RunID: r.ID, Kind: KindRunEnded, Body: body, From: RunQueued, To: RunCancelled}); err != nil {
				return WorkItem{}, fmt.Errorf("cancel work item %s: cancel run %s: %w", id, r.ID, err)
			}
		}
	}
	it.Status, it.Updated = WorkCancelled, d.now()
	if err := d.store.UpdateWorkItem(ctx, it); err != nil {
		return WorkItem{}, fmt.Errorf("cancel work item %s: %w", id, err)
	}
	return it, nil
}

// StartRun creates a queued run of a ready work item. A work item has at
// most one run that has not ended. The executor that performs runs takes
// it from there (MarkRunning).
func (d *Director) StartRun(ctx context.Context, n NewRun) (Run, error) {
	r, err := d.startRun(ctx, n)
	if err == nil {
		d.changed(r.ID, "")
	}
	return r, err
}

func (d *Director) startRun(ctx context.Context, n NewRun) (Run, error) {
	if err := n.Check(); err != nil {
		return Run{}, err
	}
	if n.Mood == "" {
		m, err := d.NextMood(ctx, n.WorkItem)
		if err != nil {
			return Run{}, fmt.Errorf("start a run of work item %s: its next mood: %w", n.WorkItem, err)
		}
		n.Mood = cmp.Or(m, "CALM")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	g, err := d.graph(ctx)
	if err != nil {
		return Run{}, err
	}
	stored, ok := g.items[n.WorkItem]
	if !ok {
		return Run{}, fmt.Errorf("start a run of work item %s: %w (see `choirctl work list`)", n.WorkItem, ErrNotFound)
	}
	it := g.view(stored)
	switch it.Status {
	case WorkReady:
	case WorkRunning:
		return Run{}, fmt.Errorf("start a run of work item %s: it %w (see `choirctl run list --work %s`)", it.ID, ErrActiveRun, it.ID)
	case WorkOpen:
		var waiting []string
		for _, dep := range it.DependsOn {
			if !g.satisfied(dep, 0) {
				waiting = append(waiting, dep)
			}
		}
		return Run{}, fmt.Errorf("start a run of work item %s: it waits for %s: %w (finish those first)", it.ID, strings.Join(waiting, ", "), ErrConflict)
	case WorkSplit:
		return Run{}, fmt.Errorf("start a run of work item %s: it was split: %w (run its children: %s)", it.ID, ErrConflict, strings.Join(g.children[it.ID], ", "))
	default:
		return Run{}, fmt.Errorf("start a run of work item %s: it is %s: %w", it.ID, it.Status, ErrConflict)
	}
	r := Run{ID: NewRunID(), WorkItem: it.ID, Agent: it.Agent, Mood: n.Mood, Trigger: n.Trigger,
		Budgets: n.Budgets, Status: RunQueued, Created: d.now()}
	if err := d.store.InsertRun(ctx, r); err != nil {
		return Run{}, fmt.Errorf("start a run of work item %s: %w", it.ID, err)
	}
	return r, nil
}

// Run returns one run.
func (d *Director) Run(ctx context.Context, id string) (Run, error) {
	if !ValidRunID(id) {
		return Run{}, invalid("id", "give a run id as `choirctl run list` shows it (r- and 12 hex digits)", "%q is not a run id", id)
	}
	r, err := d.store.Run(ctx, id)
	if err != nil {
		return Run{}, fmt.Errorf("run %s: %w", id, err)
	}
	return r, nil
}

// Runs lists runs, newest first, of an agent and/or a work item.
func (d *Director) Runs(ctx context.Context, agent, workItem string) ([]Run, error) {
	runs, err := d.store.Runs(ctx, agent, workItem)
	if runs == nil {
		runs = []Run{}
	}
	return runs, err
}

// RunsIn lists the runs in one of statuses, oldest first.
func (d *Director) RunsIn(ctx context.Context, statuses ...RunStatus) ([]Run, error) {
	if len(statuses) == 0 {
		return []Run{}, nil
	}
	runs, err := d.store.RunsIn(ctx, statuses...)
	if runs == nil {
		runs = []Run{}
	}
	return runs, err
}

// Receipts lists a run's receipts after seq.
func (d *Director) Receipts(ctx context.Context, runID string, after int64) ([]Receipt, error) {
	if _, err := d.Run(ctx, runID); err != nil {
		return nil, err
	}
	rs, err := d.store.Receipts(ctx, runID, after)
	if rs == nil {
		rs = []Receipt{}
	}
	return rs, err
}

// State rebuilds the AHDB state vector of an agent ("" for all) from its
// receipts alone.
func (d *Director) State(ctx context.Context, agent string) (State, error) {
	rs, err := d.store.AllReceipts(ctx, agent)
	if err != nil {
		return State{}, fmt.Errorf("read receipts: %w", err)
	}
	return Project(rs), nil
}

// errEnded words a refusal to touch a run that has ended.
func errEnded(r Run, what string) error {
	return fmt.Errorf("%s on run %s: it is %s: %w (start a new run of %s)", what, r.ID, r.Status, ErrRunEnded, r.WorkItem)
}
