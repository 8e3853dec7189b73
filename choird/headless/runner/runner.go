// Package runner performs headless runs (seed 002, spirals 1-4): it takes
// a queued run of the director, gives it an ephemeral git worktree of its
// agent's workspace, has the agent work on the work item in a run session
// of its own (the mood's profile applied to the container and the tool
// registry), stores the patch, runs the verifiers apart in their own
// containers, and commits only what passed and was approved, writing a
// receipt at every step. After a crash it finishes or discards what was
// half done from the receipts alone (Recover), so no run commits twice.
//
// The runner is the director loop's body; the Director holds the rules of
// the receipts (which step may follow which), the runner the I/O.
package runner

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"choir/choird/headless"
	"choir/choird/headless/mood"
	"choir/choird/headless/objects"
	"choir/choird/headless/verify"
	"choir/choird/headless/worktree"
	"choir/internal/rpc"
)

// Task is what a run session is asked to do: the agent's part of a run.
type Task struct {
	RunID, AgentID string
	Worktree       string // host directory mounted at /workspace
	WorkspaceRO    bool
	Objective      string // the run session's one user message
	Tools          []string
	Network        bool
	Credentials    bool
	Tokens         int64
	ToolCalls      int
	WallTime       time.Duration
}

// Outcome is how a run session ended.
type Outcome struct {
	SessionID string
	Answer    string // the agent's reply to the objective
	Status    string // "answered", or why not: "budget", "timeout", "crashed", "stopped"
	Reason    string
	// ErrorReply: what the agent sent was its error (the model failed),
	// not an answer.
	ErrorReply bool
	// NetworkAttempts: how many times something in the run's container
	// (no network route) tried to reach the network directly, counted by
	// the kernel (choird/lifecycle/netattempts.go).
	NetworkAttempts int64
}

// Answered is the Outcome status of a session that replied.
const Answered = "answered"

// Sessions performs run sessions (the lifecycle's run sessions).
type Sessions interface {
	Perform(ctx context.Context, t Task) (Outcome, error)
}

// Verifier runs one verifier apart (verify.Runner).
type Verifier interface {
	Run(ctx context.Context, req verify.Request) (verify.Result, error)
}

// Agent is what the runner needs to know of a run's agent.
type Agent struct {
	Repo     string // its workspace: the git repository a run works on
	Target   string // the branch a run commits to ("" = the one checked out)
	Image    string // its current image: run sessions and verifiers use it
	Identity worktree.Identity
	// Tools are the names of the agent's tools; Traits says what each
	// reaches (nil: mood.TraitsOf(name, false, 0)).
	Tools  []string
	Traits func(name string) mood.Traits
}

// Runner performs runs. Set the fields before use.
type Runner struct {
	Director  *headless.Director
	Worktrees *worktree.Manager
	Objects   *objects.Store
	Verify    Verifier
	Sessions  Sessions
	// Agent returns what the runner needs of an agent, from the running
	// config and the agent's image.
	Agent func(ctx context.Context, agentID string) (Agent, error)
	// Moods returns the mood profiles in force (built-ins with the
	// config's overrides).
	Moods func() (mood.Set, error)
	// Verifiers returns the definition of a named verifier
	// (headless.verifiers).
	Verifiers func(name string) (verify.Verifier, bool)
	// Notify sends a short report to the agent's DM (nil: none).
	Notify func(agentID, text string)
	Log    *slog.Logger
	// Thresholds tune the anomaly detectors and mood guards.
	Thresholds mood.Thresholds
	// MaxSplits is headless.max_splits (nil: headless.DefaultMaxSplits).
	MaxSplits func() int
	// Evidence returns pointers of the knowledge base for a query (nil:
	// none); the context pack carries them (pack.go).
	Evidence func(ctx context.Context, agent, query string, limit int) ([]headless.Pointer, error)
	// PackTokens is the context pack's budget (0: DefaultPackTokens).
	PackTokens int
	// Approvals asks a human to decide a run that waits for one (nil:
	// the DM is told to use choirctl run approve).
	Approvals Approvals

	mu     sync.Mutex
	active map[string]bool // run ids being performed by this runner
	kick   chan struct{}   // wakes the loop
	ended  map[string]bool // runs ended since the loop last reported them (report.go)
}

// Approvals asks a human to decide the commit of a run that waits for
// one, through choird's approval pipeline (choird/headless/signoff). The
// decision comes back as the run's CommitDecision, which the loop
// settles.
type Approvals interface {
	Await(ctx context.Context, runID string) error
}

// ErrBusy is returned by Perform for a run another call is performing.
var ErrBusy = errors.New("the run is being performed already")

// ErrNoAgent is what Runner.Agent returns (wrapped) for an agent the
// running config no longer has: its runs are discarded, not retried.
var ErrNoAgent = errors.New("the agent is not in config.json")

func (r *Runner) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

func (r *Runner) claim(runID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.active[runID] {
		return false
	}
	if r.active == nil {
		r.active = map[string]bool{}
	}
	r.active[runID] = true
	return true
}

func (r *Runner) release(runID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.active, runID)
}

// Active reports whether this runner is performing run id now.
func (r *Runner) Active(runID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.active[runID]
}

// run is one run being performed: what every step needs.
type run struct {
	headless.Run
	item    headless.WorkItem
	profile mood.Profile
	agent   Agent
	wt      *worktree.Worktree
	patch   worktree.Patch
	answer  string
	noRoute int64 // network attempts counted in its container (Outcome.NetworkAttempts)
	// tiers are the repository's doc tiers as the worktree held them
	// before the agent worked in it (headless.ReadDocTiers).
	tiers    headless.DocTiers
	tiersErr error
	// answered: the agent answered the objective (not with an error).
	answered bool
	// crashed: Recover settles the run, left half done by a choird that
	// died under it (mood.Facts.CrashRecovery).
	crashed bool
}

// Perform takes the queued run runID to its end: committed, or failed with
// nothing reaching the branch. It returns an error only when it could not
// record where the run stands (the store or the disk failed, or ctx
// ended): the run is then left for Recover.
func (r *Runner) Perform(ctx context.Context, runID string) error {
	if !r.claim(runID) {
		return fmt.Errorf("perform run %s: %w", runID, ErrBusy)
	}
	defer r.release(runID)
	x, err := r.load(ctx, runID)
	if errors.Is(err, ErrNoAgent) && x != nil && x.Status == headless.RunQueued {
		return r.fail(ctx, x, headless.RunDiscarded, "its agent was removed from config.json ("+err.Error()+"); nothing was started")
	}
	if err != nil {
		return err
	}
	if x.Status != headless.RunQueued {
		return fmt.Errorf("perform run %s: it is %s, not queued: %w", runID, x.Status, headless.ErrConflict)
	}
	if done, err := r.start(ctx, x); err != nil || done {
		return err
	}
	if done, err := r.work(ctx, x); err != nil || done {
		return err
	}
	return r.verifyAndCommit(ctx, x)
}

// load reads a run with its work item, mood profile and agent. For an
// agent no longer in the config (ErrNoAgent) it returns the run without
// its agent too, so the caller can end it.
func (r *Runner) load(ctx context.Context, runID string) (*run, error) {
	hr, err := r.Director.Run(ctx, runID)
	if err != nil {
		return nil, err
	}
	x := &run{Run: hr}
	if x.item, err = r.Director.WorkItem(ctx, hr.WorkItem); err != nil {
		return nil, fmt.Errorf("run %s: %w", runID, err)
	}
	moods, err := r.Moods()
	if err != nil {
		return nil, fmt.Errorf("run %s: the mood profiles: %w", runID, err)
	}
	p, ok := moods[mood.Mood(hr.Mood)]
	if !ok {
		return nil, fmt.Errorf("run %s: mood %q has no profile", runID, hr.Mood)
	}
	x.profile = p
	if x.agent, err = r.Agent(ctx, hr.Agent); err != nil {
		err = fmt.Errorf("run %s: agent %s: %w", runID, hr.Agent, err)
		if errors.Is(err, ErrNoAgent) {
			return x, err
		}
		return nil, err
	}
	return x, nil
}

// fail ends a run that will not commit, discarding its worktree, and
// reports it. The receipts say why; the work item is open again. The
// worktree goes before the end is recorded, so that a run seen ended has
// left no worktree or branch behind; a crash in between leaves a run
// without its worktree, which Recover discards.
func (r *Runner) fail(ctx context.Context, x *run, status headless.RunStatus, reason string) error {
	anomalies := r.beforeEnd(ctx, x, status, reason)
	r.discard(ctx, x)
	rec, fresh, err := r.Director.EndRun(ctx, x.ID, status, clip(reason, headless.MaxReason), "end")
	if err != nil {
		return fmt.Errorf("end run %s (%s): %w", x.ID, reason, err)
	}
	if fresh {
		r.markEnded(x.ID)
	}
	r.log().Info("run ended", "run", x.ID, "agent_id", x.Agent, "work_item", x.WorkItem, "status", status, "reason", reason)
	r.report(x, fmt.Sprintf("Run %s of %s %s: %s. Nothing was committed.%s Receipts: %s (choirctl run receipts %s).",
		x.ID, x.WorkItem, status, reason, anomalies, rec.Ref(), x.ID))
	return nil
}

func (r *Runner) discard(ctx context.Context, x *run) {
	if x.wt == nil {
		return
	}
	if kept, err := x.wt.Discard(context.WithoutCancel(ctx)); err != nil {
		r.log().Warn("run worktree not removed", "run", x.ID, "error", err)
	} else if kept != "" {
		r.log().Warn("run branch kept", "run", x.ID, "branch", kept)
	}
}

func (r *Runner) report(x *run, text string) {
	if r.Notify != nil {
		r.Notify(x.Agent, text)
	}
}

// start makes the run's worktree and records RunStarted; done when the
// run ended there (no worktree could be made).
func (r *Runner) start(ctx context.Context, x *run) (done bool, err error) {
	wt, err := r.Worktrees.Create(ctx, x.agent.Repo, x.ID, x.agent.Target)
	if errors.Is(err, worktree.ErrExists) {
		// Left by a choird killed between making it and recording the
		// start: nothing in it was ever the run's work.
		if _, serr := r.Worktrees.Sweep(ctx, []string{x.agent.Repo}, func(id string) bool { return id != x.ID }); serr == nil {
			wt, err = r.Worktrees.Create(ctx, x.agent.Repo, x.ID, x.agent.Target)
		}
	}
	if err != nil {
		// Still queued: a run that never started is discarded, not failed.
		return true, r.fail(ctx, x, headless.RunDiscarded, "its worktree could not be made: "+err.Error())
	}
	x.wt = wt
	if err := chownLike(wt, x.agent.Repo); err != nil {
		return true, r.fail(ctx, x, headless.RunDiscarded, "its worktree could not be given to the workspace's owner: "+err.Error())
	}
	if _, _, err := r.Director.MarkRunning(ctx, x.ID, wt.Base, wt.Dir, "start"); err != nil {
		r.discard(ctx, x)
		return true, fmt.Errorf("run %s: record its start: %w", x.ID, err)
	}
	x.Status = headless.RunRunning
	return false, nil
}

// chownLike gives the worktree to the owner of the workspace, as whom
// the agent's tools run, when choird is another user (root).
func chownLike(wt *worktree.Worktree, repo string) error {
	fi, err := os.Stat(repo)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) == os.Getuid() {
		return nil
	}
	return wt.Chown(int(st.Uid), int(st.Gid))
}

// work has the agent perform the run session and records the patch. It
// returns done when the run ended there.
func (r *Runner) work(ctx context.Context, x *run) (done bool, err error) {
	fp, objective, objs, err := r.contextPack(ctx, x) // pack.go
	if err != nil {
		return false, err
	}
	tools := x.profile.Permitted(x.agent.Tools, x.agent.Traits)
	tools = append(tools, rpc.RunHostTools...) // notes, split and spec change requests, in every mood (split.go)
	fp.Tools, fp.Mood, fp.Network = nonNil(tools), string(x.profile.Mood), x.profile.Network
	fp.Repo, fp.Target, fp.Base = x.wt.Repo, x.wt.Target, x.wt.Base
	if err := r.record(ctx, x, headless.KindContextFootprint, fp, objs, "footprint"); err != nil {
		return false, err
	}
	c := x.profile.Container()
	t := Task{RunID: x.ID, AgentID: x.Agent, Worktree: x.wt.Dir, WorkspaceRO: c.Workspace != "rw", Objective: objective,
		Tools: tools, Network: c.NetworkMode != "none", Credentials: c.Secrets,
		Tokens: cmp.Or(x.Budgets.Tokens, x.profile.Budgets.Tokens), ToolCalls: cmp.Or(int(x.Budgets.ToolCalls), x.profile.Budgets.ToolCalls),
		WallTime: cmp.Or(time.Duration(x.Budgets.WallSeconds)*time.Second, x.profile.Budgets.WallTime)}
	if c.Workspace == "" {
		t.Worktree = "" // the mood reads no private data: an empty scratch workspace
	}
	x.tiers, x.tiersErr = headless.ReadDocTiers(x.wt.Dir) // before the agent can change them
	out, err := r.Sessions.Perform(ctx, t)
	x.noRoute = out.NetworkAttempts
	if ctx.Err() != nil {
		return false, fmt.Errorf("run %s: interrupted while the agent worked: %w", x.ID, ctx.Err())
	}
	if err != nil {
		return true, r.fail(ctx, x, headless.RunFailed, "its session could not run: "+err.Error())
	}
	if done, err := r.actOnSplit(ctx, x); done || err != nil { // split.go
		return true, err
	}
	if out.Status != Answered {
		why := out.Status
		if out.Reason != "" {
			why += ": " + out.Reason
		}
		return true, r.fail(ctx, x, headless.RunFailed, "the agent did not finish ("+why+")")
	}
	if out.ErrorReply {
		return true, r.fail(ctx, x, headless.RunFailed, "the agent answered with an error: "+clip(out.Answer, 300))
	}
	x.answer, x.answered = out.Answer, true
	return r.recordPatch(ctx, x)
}

// recordPatch stores the worktree's diff and records the PatchReceipt;
// done when there is nothing to verify.
func (r *Runner) recordPatch(ctx context.Context, x *run) (done bool, err error) {
	p, err := x.wt.Diff(ctx)
	if err != nil {
		return true, r.fail(ctx, x, headless.RunFailed, "its diff could not be read: "+err.Error())
	}
	if p.Empty() {
		return true, r.fail(ctx, x, headless.RunFailed, "the agent changed nothing in the worktree")
	}
	h, err := r.Objects.Put(p.Bytes)
	if err != nil {
		return false, fmt.Errorf("run %s: store its patch: %w", x.ID, err)
	}
	if h != p.Hash {
		return false, fmt.Errorf("run %s: the object store named its patch %s, the worktree %s", x.ID, h, p.Hash)
	}
	x.patch = p
	body := PatchBody{Hash: p.Hash, Base: p.Base, Tree: p.Tree, Files: nonNil(p.Files), Answer: clip(x.answer, 2000),
		Docs: x.tiers.GatedChanges(p.Files)}
	if x.tiersErr != nil {
		body.TiersError = clip(x.tiersErr.Error(), 500)
	}
	return false, r.record(ctx, x, headless.KindPatchReceipt, body, []string{h}, "patch:"+p.Hash)
}

// PatchBody is the body of a PatchReceipt.
type PatchBody struct {
	Hash   string   `json:"hash"` // sha256 of the diff, an object
	Base   string   `json:"base"`
	Tree   string   `json:"tree"`
	Files  []string `json:"files"`
	Answer string   `json:"answer,omitempty"` // the agent's summary
	// Docs are the files it changes in DOCTRINE or SPECS, TiersError why
	// the repository's tier file could not be read: CheckCommit gates the
	// commit on them (headless/tiers_gate.go).
	Docs       []headless.DocChange `json:"docs,omitempty"`
	TiersError string               `json:"tiers_error,omitempty"`
}

func (r *Runner) record(ctx context.Context, x *run, kind headless.Kind, body any, objs []string, key string) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	if _, _, err := r.Director.Record(ctx, x.ID, kind, b, nonNil(objs), key); err != nil {
		return fmt.Errorf("run %s: record %s: %w", x.ID, kind, err)
	}
	return nil
}

// verifiers are the verifiers a run's patch must pass: the work item's
// (unless the mood says otherwise) and the mood's, in that order.
func (r *Runner) verifiers(x *run) ([]verify.Verifier, error) {
	var names []string
	if x.profile.WorkItemVerifiers {
		names = append(names, x.item.Verifiers...)
	}
	for _, n := range x.profile.Verifiers {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	var out []verify.Verifier
	var missing []string
	for _, n := range names {
		v, ok := r.Verifiers(n)
		if !ok {
			missing = append(missing, n)
			continue
		}
		out = append(out, v)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("verifier %s is not defined: add it to headless.verifiers in config.json", strings.Join(missing, ", "))
	}
	if len(out) == 0 {
		return nil, errors.New("no verifier would check it: name one in the work item (or the mood) and define it in headless.verifiers")
	}
	return out, nil
}

// verifyAndCommit runs the verifiers on the recorded patch and, if all
// pass and the policy approves, commits.
func (r *Runner) verifyAndCommit(ctx context.Context, x *run) error {
	vs, err := r.verifiers(x)
	if err != nil {
		return r.fail(ctx, x, headless.RunFailed, err.Error())
	}
	if x.Status == headless.RunRunning {
		n := headless.Note{Type: headless.NoteRequestVerify, Text: "the agent finished; verifying patch " + short(x.patch.Hash)}
		if _, _, err := r.Director.AddNote(ctx, x.ID, n, "request-verify:"+x.patch.Hash); err != nil {
			return fmt.Errorf("run %s: %w", x.ID, err)
		}
		x.Status = headless.RunVerifying
	}
	rs, err := r.Director.Receipts(ctx, x.ID, 0)
	if err != nil {
		return fmt.Errorf("run %s: %w", x.ID, err)
	}
	done := attested(rs, x.patch.Hash) // before a restart
	var failed []string
	for _, v := range vs {
		if a, ok := done[v.Name]; ok {
			if !a.Passed {
				failed = append(failed, v.Name+" ("+a.Summary+")")
			}
			continue
		}
		res, err := r.Verify.Run(ctx, verify.Request{RunID: x.ID, Verifier: v, Image: x.agent.Image, Worktree: x.wt.Dir, DiffHash: x.patch.Hash})
		if ctx.Err() != nil {
			return fmt.Errorf("run %s: interrupted while verifying: %w", x.ID, ctx.Err())
		}
		if err != nil {
			return r.fail(ctx, x, headless.RunFailed, fmt.Sprintf("verifier %s could not run: %v", v.Name, err))
		}
		a := headless.Attestation{Verifier: v.Name, Passed: res.Report.Passed, Summary: clip(res.Report.Brief(), headless.MaxSummary),
			Signature: res.Report.Signature, Patch: x.patch.Hash,
			Artifacts: nonNil(compact(res.Report.Output, res.ReportHash, res.AttestationHash))}
		if _, _, err := r.Director.Attest(ctx, x.ID, a, "verify:"+v.Name+":"+x.patch.Hash); err != nil {
			return fmt.Errorf("run %s: %w", x.ID, err)
		}
		if !res.Report.Passed {
			failed = append(failed, v.Name+" ("+res.Report.Brief()+")")
		}
	}
	if len(failed) > 0 {
		return r.fail(ctx, x, headless.RunFailed, "verification failed: "+strings.Join(failed, "; "))
	}
	return r.commit(ctx, x)
}

// attested returns the attestations recorded on patch since the latest
// PatchReceipt, by verifier.
func attested(rs []headless.Receipt, patch string) map[string]headless.Attestation {
	out := map[string]headless.Attestation{}
	for _, rec := range rs {
		switch rec.Kind {
		case headless.KindPatchReceipt:
			clear(out)
		case headless.KindVerifierResults:
			var a headless.Attestation
			if json.Unmarshal(rec.Body, &a) == nil && a.Patch == patch {
				out[a.Verifier] = a
			}
		}
	}
	return out
}

// commit asks for the commit, decides it by policy (a high-risk work item
// waits for a human), and carries it out.
func (r *Runner) commit(ctx context.Context, x *run) error {
	if !x.profile.MayCommit {
		return r.fail(ctx, x, headless.RunDiscarded, "its verifiers passed, but a "+string(x.profile.Mood)+" run may not commit")
	}
	if x.Status != headless.RunAwaitingApproval {
		req := headless.CommitRequest{Summary: clip(cmp.Or(strings.TrimSpace(x.answer), "run "+x.ID), headless.MaxSummary), Patch: x.patch.Hash}
		_, _, err := r.Director.RequestCommit(ctx, x.ID, req, "commit-request:"+x.patch.Hash)
		if errors.Is(err, headless.ErrInvalidInput) {
			// The answer cites an object that is missing or changed, or
			// a pointer that is not one: the report cannot stand.
			return r.fail(ctx, x, headless.RunFailed, "its report was refused: "+err.Error())
		}
		if err != nil {
			return fmt.Errorf("run %s: %w", x.ID, err)
		}
		x.Status = headless.RunAwaitingApproval
	}
	check, err := r.Director.CommitCheck(ctx, x.ID)
	if err != nil {
		return fmt.Errorf("run %s: %w", x.ID, err)
	}
	if check.NeedsHuman && check.Ready {
		why := "high risk"
		if x.item.Risk != headless.RiskHigh {
			why = strings.Join(check.Gates, "; ")
		}
		r.log().Info("run waits for a human's approval", "run", x.ID, "agent_id", x.Agent, "work_item", x.WorkItem)
		if r.Approvals != nil {
			err := r.Approvals.Await(ctx, x.ID)
			if err == nil {
				return nil
			}
			r.log().Warn("run's approval not asked for; the DM is told to use choirctl", "run", x.ID, "error", err)
		}
		r.report(x, fmt.Sprintf("Run %s of %s (%s) passed its verifiers and waits for your decision: choirctl run approve %s, or reject it.", x.ID, x.WorkItem, why, x.ID))
		return nil
	}
	if !check.Ready {
		if _, _, err := r.Director.DecideCommit(ctx, x.ID, false, "policy", clip(strings.Join(check.Missing, "; "), headless.MaxReason), "decide:"+x.patch.Hash); err != nil {
			return fmt.Errorf("run %s: %w", x.ID, err)
		}
		return r.fail(ctx, x, headless.RunFailed, "the commit policy refused it: "+strings.Join(check.Missing, "; "))
	}
	rec, _, err := r.Director.DecideCommit(ctx, x.ID, true, "policy", "every required verifier passed on this patch", "decide:"+x.patch.Hash)
	if err != nil {
		return fmt.Errorf("run %s: %w", x.ID, err)
	}
	return r.carryOut(ctx, x, rec, "policy")
}

// carryOut commits an approved patch and records the CommitReceipt; a
// commit made before a crash is found by its trailer and not made again.
func (r *Runner) carryOut(ctx context.Context, x *run, decision headless.Receipt, by string) error {
	raw, err := json.Marshal(decision)
	if err != nil {
		return err
	}
	dh, err := r.Objects.Put(raw)
	if err != nil {
		return fmt.Errorf("run %s: store its decision: %w", x.ID, err)
	}
	d := worktree.Decision{RunID: x.ID, Approved: true, By: by, Patch: x.patch.Hash, Receipt: dh}
	msg := commitMessage(x)
	res, err := x.wt.Commit(ctx, d, msg, x.agent.Identity)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("run %s: interrupted while committing: %w", x.ID, ctx.Err())
		}
		return r.fail(ctx, x, headless.RunFailed, "the commit failed: "+err.Error())
	}
	anomalies := r.beforeEnd(ctx, x, headless.RunCommitted, "")
	rec, fresh, err := r.Director.RecordCommit(ctx, x.ID, res.Commit, "commit")
	if err != nil {
		return fmt.Errorf("run %s: record commit %s: %w", x.ID, res.Commit, err)
	}
	if fresh {
		r.markEnded(x.ID)
	}
	r.discard(ctx, x)
	r.log().Info("run committed", "run", x.ID, "agent_id", x.Agent, "work_item", x.WorkItem, "commit", res.Commit, "target", res.Target, "resumed", res.Resumed)
	r.report(x, fmt.Sprintf("Run %s of %s committed %s to %s: %s.%s Receipts: %s#1-%d (choirctl run receipts %s).",
		x.ID, x.WorkItem, short(res.Commit), res.Target, clip(x.item.Description, 120), anomalies, x.ID, rec.Seq, x.ID))
	return nil
}

func commitMessage(x *run) string {
	subject := strings.TrimSpace(strings.SplitN(x.item.Description, "\n", 2)[0])
	var b strings.Builder
	b.WriteString(clip(subject, 72))
	b.WriteString("\n\n")
	if a := strings.TrimSpace(x.answer); a != "" {
		b.WriteString(clip(a, 2000))
		b.WriteString("\n\n")
	}
	fmt.Fprintf(&b, "Work item %s, run %s (%s).", x.WorkItem, x.ID, x.profile.Mood)
	return b.String()
}

// beforeEnd feeds the run, about to end as status for reason, with the work item's
// ended runs to the anomaly detectors and the mood guards, recording what
// they find on the run (Anomaly, MoodTransition) before its last receipt:
// the work item's next run starts in the mood they chose. It returns the
// anomalies as a sentence for the run's report ("" when none).
func (r *Runner) beforeEnd(ctx context.Context, x *run, status headless.RunStatus, reason string) (told string) {
	committed := status == headless.RunCommitted
	history, prior, err := r.history(ctx, x.WorkItem, x.ID)
	var rs []headless.Receipt
	if err == nil {
		if rs, err = r.Director.Receipts(ctx, x.ID, 0); err == nil {
			cur := x.Run
			cur.Status = status
			rec := recordOf(cur, prior, rs)
			rec.Exhausted = exhausted(reason) // its RunEnded comes after
			for i := int64(0); i < min(x.noRoute, maxNoRoute); i++ {
				rec.NetworkAttempts = append(rec.NetworkAttempts, noRouteDest)
			}
			history = append(history, rec)
		}
	}
	if err != nil {
		r.log().Warn("run history not read", "run", x.ID, "error", err)
		return ""
	}
	anomalies := mood.Detect(history, r.Thresholds)
	var regressed []string
	if a, ok, err := r.regression(ctx, x.Agent, rs); err != nil { // regress.go
		r.log().Warn("verifier regression not looked for", "run", x.ID, "error", err)
	} else if ok {
		anomalies, regressed = append(anomalies, a), a.Verifiers
	}
	var details []string
	for _, a := range anomalies {
		r.log().Warn("headless anomaly", "run", x.ID, "agent_id", x.Agent, "kind", a.Kind, "detail", a.Detail)
		if err := r.record(ctx, x, headless.KindAnomaly, a, nil, "anomaly:"+string(a.Kind)); err != nil {
			r.log().Warn("anomaly not recorded", "run", x.ID, "error", err)
		}
		details = append(details, a.Detail)
	}
	if len(details) > 0 {
		told = " Anomaly: " + strings.Join(details, "; ") + "."
	}
	// A mood that may not write the workspace does its work in its answer
	// (CONTRITE, SKEPTICAL, ...): answering is how it passes.
	passed := committed || (!x.profile.WorkspaceWritable && x.answered)
	f := mood.Facts{Current: x.profile.Mood, Anomalies: anomalies, Regressed: regressed, Risk: string(x.item.Risk),
		Passed: passed && len(anomalies) == 0, CrashRecovery: x.crashed}
	r.guardFacts(ctx, x, &f, history, rs) // guards.go: hyperthesis magnitude, privilege proximity
	t, ok := mood.Decide(f, r.Thresholds)
	if !ok {
		return told
	}
	if err := r.record(ctx, x, headless.KindMoodTransition, t, nil, "mood"); err != nil {
		r.log().Warn("mood transition not recorded", "run", x.ID, "error", err)
		return told
	}
	r.log().Info("mood transition", "run", x.ID, "work_item", x.WorkItem, "from", t.From, "to", t.To, "guard", t.Guard)
	return told + fmt.Sprintf(" Its next run will be %s (%s).", t.To, t.Guard)
}

// history is the ended runs of a work item as the detectors see them,
// oldest first (but the run except), with their receipts in order.
func (r *Runner) history(ctx context.Context, workItem, except string) ([]mood.RunRecord, []headless.Receipt, error) {
	runs, err := r.Director.Runs(ctx, "", workItem)
	if err != nil {
		return nil, nil, err
	}
	slices.Reverse(runs) // oldest first; a work item's runs never overlap
	var out []mood.RunRecord
	var prior []headless.Receipt
	for _, hr := range runs {
		if !hr.Status.Ended() || hr.ID == except {
			continue
		}
		rs, err := r.Director.Receipts(ctx, hr.ID, 0)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, recordOf(hr, prior, rs))
		prior = append(prior, rs...)
	}
	return out, prior, nil
}

// recordOf is what the detectors need of one ended run, from its
// receipts and those of the work item's runs before it (prior): the
// state before is the AHDB projection of prior, the state after that of
// prior and the run's own.
func recordOf(hr headless.Run, prior, rs []headless.Receipt) mood.RunRecord {
	rec := mood.RunRecord{ID: hr.ID, Mood: mood.Mood(hr.Mood), Committed: hr.Status == headless.RunCommitted}
	var fails []string
	for _, x := range rs {
		switch x.Kind {
		case headless.KindPatchReceipt:
			var b PatchBody
			if json.Unmarshal(x.Body, &b) == nil {
				rec.Patch = b.Hash
			}
		case headless.KindVerifierResults:
			var a headless.Attestation
			if json.Unmarshal(x.Body, &a) == nil && !a.Passed && a.Signature != "" {
				fails = append(fails, a.Signature)
			}
		case headless.KindRunEnded:
			var b headless.RunEndedBody
			if json.Unmarshal(x.Body, &b) == nil {
				rec.Exhausted = exhausted(b.Reason)
			}
		}
	}
	if len(fails) > 0 {
		sum := sha256.Sum256([]byte(strings.Join(fails, "\n")))
		rec.Failure = hex.EncodeToString(sum[:8])
		if len(fails) == 1 {
			rec.Failure = fails[0]
		}
	}
	before := headless.Project(prior)
	after := headless.Project(append(slices.Clip(prior), rs...))
	rec.StateBefore, rec.StateAfter = stateHash(before), stateHash(after)
	return rec
}

// exhausted names the budget a run used up, from the reason it ended
// with ("the agent did not finish (budget: ...)" or "(timeout ...)"),
// "" when none.
func exhausted(reason string) string {
	switch {
	case strings.Contains(reason, "did not finish (budget"):
		return "budget"
	case strings.Contains(reason, "did not finish (timeout"):
		return "wall_time"
	}
	return ""
}

// stateHash identifies what a state vector knows: its entries, not the
// bookkeeping every run changes (the runs' statuses, delta counts,
// receipt count, open requests, skipped receipts).
func stateHash(s headless.State) string {
	b, _ := json.Marshal([]any{s.Assert, s.Hypothesize, s.Drive, s.Believe, s.Hyperthesis, s.Conjectures, s.Refuted, s.Retracted})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// NextMood is the mood a work item's next run should start in: the last
// MoodTransition recorded on its runs (Director.NextMood), else def.
func (r *Runner) NextMood(ctx context.Context, workItem string, def mood.Mood) (mood.Mood, error) {
	m, err := r.Director.NextMood(ctx, workItem)
	if err != nil || m == "" {
		return def, err
	}
	return mood.Mood(m), nil
}

func short(h string) string { return h[:min(12, len(h))] }

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func compact(hs ...string) []string {
	var out []string
	for _, h := range hs {
		if h != "" && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// noRouteDest is how a network attempt counted in a run's container
// appears among the anomaly's destinations: the kernel counts attempts,
// not where they went. At most maxNoRoute are listed.
const (
	noRouteDest = "no route (a connection or DNS lookup from the container, counted by the kernel)"
	maxNoRoute  = 10000
)
