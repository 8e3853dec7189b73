// Package signoff is a person's sign-off on a headless run's commit,
// through choird's approval pipeline (issue 16 item 4, seed 002 §7): a
// run of a high-risk work item, or whose patch changes DOCTRINE, that
// passed its verifiers waits for a human, and that human decides it as
// any other approval.
//
//	runner: the run waits (CommitCheck ready, NeedsHuman)
//	  → Gate.Await: approval.Service.RequestOnce under ID(run, patch),
//	    type run_commit, its summary and Payload (the DM gets the
//	    [Approve] [Reject] buttons; choirctl approval list shows it;
//	    approval_timeout_ms arms its timeout)
//	human (button, /approve, choirctl approval approve|reject, or
//	choirctl run approve|reject, which decides this same approval)
//	  → approval.Service.Decide records the decision once
//	  → OnDecision: Gate.Decided records the run's CommitDecision
//	    ("human:<who>", or "choird (timeout)" rejecting it)
//	  → the director loop commits the run, or ends it with nothing
//	    committed (its worktree removed, its work item open again)
//
// The approval is the one place a human decision is recorded first; the
// run's CommitDecision follows it. A choird killed in between finds the
// approval decided when the run, still waiting, asks again at the next
// start (Await): the decision is recorded then, once (the receipt's
// idempotency key is the approval's id).
package signoff

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"choir/choird/approval"
	"choir/choird/headless"
)

// Approvals is the approval pipeline as the gate uses it
// (*approval.Service).
type Approvals interface {
	RequestOnce(ctx context.Context, a approval.Approval) (approval.Approval, bool, error)
	Decide(ctx context.Context, id string, approve bool, who approval.Decider) (approval.Approval, error)
	Get(ctx context.Context, id string) (approval.Approval, error)
}

// Patches reads a patch by its diff hash (the object store).
type Patches interface {
	Get(hash string) ([]byte, error)
}

// ErrNotWaiting: the run does not wait for a human's decision.
var ErrNotWaiting = errors.New("the run does not wait for a human's decision")

// Gate asks for and applies the human decisions on runs. Set Director and
// Approvals before use; Patches may be nil (the summary then names the
// files without their diff stat).
type Gate struct {
	Director  *headless.Director
	Approvals Approvals
	Patches   Patches
	Log       *slog.Logger

	mu      sync.Mutex
	reasons map[string]reason // by approval id: a `choirctl run reject --reason`
}

// reason is what a `choirctl run approve|reject` said, for the decision
// it makes as by.
type reason struct{ by, text string }

func (g *Gate) log() *slog.Logger {
	if g.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return g.Log
}

// Await asks a human to decide the commit of run runID, which waits for
// one: the runner calls it each time the run reaches that point (also
// when choird restarted while it waited). The approval is made and shown
// once; found decided already (choird was killed before the run heard of
// it), its decision is recorded on the run now.
func (g *Gate) Await(ctx context.Context, runID string) error {
	a, created, err := g.ask(ctx, runID)
	if err != nil {
		return err
	}
	if created {
		g.log().Info("run commit approval requested", "run", runID, "approval_id", a.ID, "agent_id", a.AgentID)
	}
	if a.Status == approval.Pending {
		return nil
	}
	return g.settle(ctx, a)
}

// ask makes (or finds) the approval of run runID's commit.
func (g *Gate) ask(ctx context.Context, runID string) (approval.Approval, bool, error) {
	r, err := g.Director.Run(ctx, runID)
	if err != nil {
		return approval.Approval{}, false, err
	}
	check, err := g.Director.CommitCheck(ctx, runID)
	if err != nil {
		return approval.Approval{}, false, err
	}
	if !check.NeedsHuman || !check.Ready || len(check.Patch) < 12 {
		why := "its work item is not high risk and its patch changes no DOCTRINE"
		if !check.Ready {
			why = strings.Join(check.Missing, "; ")
		}
		return approval.Approval{}, false, fmt.Errorf("run %s (%s): %s: %w", runID, r.Status, why, ErrNotWaiting)
	}
	item, err := g.Director.WorkItem(ctx, r.WorkItem)
	if err != nil {
		return approval.Approval{}, false, fmt.Errorf("run %s: work item %s: %w", runID, r.WorkItem, err)
	}
	rs, err := g.Director.Receipts(ctx, runID, 0)
	if err != nil {
		return approval.Approval{}, false, fmt.Errorf("run %s: receipts: %w", runID, err)
	}
	var patch []byte
	if g.Patches != nil {
		if patch, err = g.Patches.Get(check.Patch); err != nil {
			g.log().Warn("run patch not read for its diff stat", "run", runID, "patch", check.Patch, "error", err.Error())
			patch = nil
		}
	}
	p := payload(r, item, check, rs, patch)
	body, err := json.Marshal(p)
	if err != nil {
		return approval.Approval{}, false, err
	}
	a, created, err := g.Approvals.RequestOnce(ctx, approval.Approval{ID: ID(runID, check.Patch), AgentID: r.Agent,
		RequestType: Type, Summary: p.Summary(), Payload: body})
	if err != nil {
		return approval.Approval{}, false, fmt.Errorf("run %s: ask for a human's approval: %w", runID, err)
	}
	return a, created, nil
}

// Decided records the decision of a run_commit approval on its run: the
// approval pipeline's OnDecision for this type. A decision the run has
// already (recorded before a restart) changes nothing.
func (g *Gate) Decided(ctx context.Context, a approval.Approval) error {
	if a.RequestType != Type || a.Status == approval.Pending {
		return nil
	}
	return g.settle(ctx, a)
}

// settle records decided approval a as its run's CommitDecision.
func (g *Gate) settle(ctx context.Context, a approval.Approval) error {
	var p Payload
	if err := json.Unmarshal(a.Payload, &p); err != nil || p.Run == "" {
		return fmt.Errorf("approval %s (%s) names no run in its payload", a.ID, Type)
	}
	approve := a.Status == approval.Approved
	by, why := "human:"+a.ResolvedBy, ""
	if a.TimedOut() {
		by, why = approval.ByTimeout, "nobody decided approval "+a.ID+" within approval_timeout_ms"
	}
	g.mu.Lock()
	if r, ok := g.reasons[a.ID]; ok && r.by == a.ResolvedBy {
		why = r.text
	}
	g.mu.Unlock()
	if why == "" {
		why = "approval " + a.ID + " " + string(a.Status)
	}
	by, why = clip(by, 64), clip(why, headless.MaxReason)
	key := "approval:" + a.ID
	for try := 0; ; try++ {
		rs, err := g.Director.Receipts(ctx, p.Run, 0)
		if err != nil {
			return fmt.Errorf("run %s: %w", p.Run, err)
		}
		if decided(rs) {
			return nil
		}
		_, _, err = g.Director.DecideCommit(ctx, p.Run, approve, by, why, key)
		switch {
		case err == nil, errors.Is(err, headless.ErrKeyReused): // recorded before (its reason was lost with a restart)
			g.log().Info("run commit decided through its approval", "run", p.Run, "approval_id", a.ID, "approved", approve, "by", by)
			return nil
		case errors.Is(err, headless.ErrRunEnded):
			return fmt.Errorf("approval %s decided run %s too late: %w", a.ID, p.Run, err)
		case !approve || !errors.Is(err, headless.ErrConflict) || try == 2:
			return fmt.Errorf("approval %s: record its decision on run %s: %w", a.ID, p.Run, err)
		}
		// Approved, and refused: the receipts changed meanwhile (try
		// again), or the commit check no longer passes (an attestation
		// came after the request): then the run is rejected, so that the
		// approval and the run end alike, with nothing committed.
		check, cerr := g.Director.CommitCheck(ctx, p.Run)
		if cerr == nil && !check.Ready {
			approve = false
			why = clip(fmt.Sprintf("approved by %s, but its commit check no longer passes: %s", a.ResolvedBy, strings.Join(check.Missing, "; ")), headless.MaxReason)
			by = "choird"
		}
	}
}

// decided reports whether the run's latest commit request has a decision.
func decided(rs []headless.Receipt) bool {
	for i := len(rs) - 1; i >= 0; i-- {
		switch rs[i].Kind {
		case headless.KindCommitDecision:
			return true
		case headless.KindCommitRequest:
			return false
		}
	}
	return false
}

// DecideRun is `choirctl run approve|reject`: it decides the run's
// approval, the same one the DM's buttons and `choirctl approval` decide,
// as by (a person's name), and returns the run's CommitDecision. An
// approval decided before is ErrAlreadyDecided with the decision that
// stands. A run that needs no human is decided directly, as before
// (the director's own refusals apply).
func (g *Gate) DecideRun(ctx context.Context, runID string, approve bool, by, text string) (headless.Receipt, bool, error) {
	a, _, err := g.ask(ctx, runID)
	if errors.Is(err, ErrNotWaiting) {
		// Waits no more: decided through its approval already, if it had one.
		check, cerr := g.Director.CommitCheck(ctx, runID)
		if cerr != nil || len(check.Patch) < 12 {
			return g.Director.DecideCommit(ctx, runID, approve, "human:"+by, text, "")
		}
		a, gerr := g.Approvals.Get(ctx, ID(runID, check.Patch))
		if gerr != nil || a.Status == approval.Pending {
			return g.Director.DecideCommit(ctx, runID, approve, "human:"+by, text, "")
		}
		return headless.Receipt{}, false, fmt.Errorf("run %s: approval %s was already %s by %s: %w; nothing changed", runID, a.ID, a.Status, a.ResolvedBy, approval.ErrAlreadyDecided)
	}
	if err != nil {
		return headless.Receipt{}, false, err
	}
	if a.Status == approval.Pending {
		g.mu.Lock()
		if g.reasons == nil {
			g.reasons = map[string]reason{}
		}
		id := a.ID
		g.reasons[id] = reason{by: by, text: text}
		g.mu.Unlock()
		a, err = g.Approvals.Decide(ctx, id, approve, approval.Operator(by))
		g.mu.Lock()
		delete(g.reasons, id)
		g.mu.Unlock()
	} else {
		err = fmt.Errorf("approval %s was already %s by %s: %w", a.ID, a.Status, a.ResolvedBy, approval.ErrAlreadyDecided)
	}
	if errors.Is(err, approval.ErrAlreadyDecided) {
		if serr := g.settle(ctx, a); serr != nil {
			g.log().Warn("run commit approval not settled", "run", runID, "approval_id", a.ID, "error", serr.Error())
		}
		return headless.Receipt{}, false, fmt.Errorf("run %s: %w; nothing changed", runID, err)
	}
	if err != nil {
		return headless.Receipt{}, false, fmt.Errorf("run %s: %w", runID, err)
	}
	rs, err := g.Director.Receipts(ctx, runID, 0)
	if err != nil {
		return headless.Receipt{}, false, err
	}
	for i := len(rs) - 1; i >= 0 && rs[i].Kind != headless.KindCommitRequest; i-- {
		if rs[i].Kind == headless.KindCommitDecision {
			return rs[i], true, nil
		}
	}
	return headless.Receipt{}, false, fmt.Errorf("run %s: approval %s is %s, but the run's decision was not recorded (see choird's log); choird records it when it settles the run, at the latest at its next start", runID, a.ID, a.Status)
}
