package headless

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// MaxBody bounds the body of a receipt recorded through Record.
const MaxBody = 64 << 10

// PolicyDecider is the decider of a commit approved by the director's
// policy; a high-risk work item needs a human ("human:<name>").
const PolicyDecider = "policy"

// step is one receipt to append and the move that goes with it.
type step struct {
	what    string // for errors: "add a note"
	runID   string
	kind    Kind
	body    any
	objects []string
	key     string
	// allow checks the run (and may look at its receipts) and returns
	// the status to move to ("" keeps it) and the work item's new status.
	allow func(r Run) (RunStatus, WorkStatus, error)
}

// append runs a step: a resend under a known key answers with the first
// receipt and appends nothing (also after the run has ended, so a retry
// after a crash is harmless); otherwise the run's status is checked and
// the receipt appended with its move, at once.
func (d *Director) append(ctx context.Context, s step) (Receipt, bool, error) {
	rec, fresh, err := d.appendLocked(ctx, s)
	if fresh {
		d.changed(s.runID, s.kind)
	}
	return rec, fresh, err
}

func (d *Director) appendLocked(ctx context.Context, s step) (Receipt, bool, error) {
	if !ValidRunID(s.runID) {
		return Receipt{}, false, invalid("run", "give a run id as `choirctl run list` shows it (r- and 12 hex digits)", "%q is not a run id", s.runID)
	}
	if err := CheckKey("idempotency_key", s.key); err != nil {
		return Receipt{}, false, err
	}
	body, err := marshalBody(s.body)
	if err != nil {
		return Receipt{}, false, err
	}
	if cites := objectCites(body); d.CheckCites != nil && len(cites) > 0 {
		if err := d.CheckCites(ctx, cites); err != nil {
			return Receipt{}, false, err
		}
	}
	hash := KeyHashOf(s.kind, body)
	d.mu.Lock()
	defer d.mu.Unlock()
	if s.key != "" {
		rec, stored, err := d.store.ReceiptByKey(ctx, s.runID, s.key)
		switch {
		case err == nil && stored == hash:
			return rec, false, nil
		case err == nil:
			return Receipt{}, false, fmt.Errorf("%s on run %s: key %q already stands for receipt %s (%s): %w (use a new key for a new request)",
				s.what, s.runID, s.key, rec.Ref(), rec.Kind, ErrKeyReused)
		case !errors.Is(err, ErrNotFound):
			return Receipt{}, false, fmt.Errorf("%s on run %s: %w", s.what, s.runID, err)
		}
	}
	r, err := d.store.Run(ctx, s.runID)
	if err != nil {
		return Receipt{}, false, fmt.Errorf("%s on run %s: %w", s.what, s.runID, err)
	}
	if r.Status.Ended() {
		return Receipt{}, false, errEnded(r, s.what)
	}
	to, item, err := s.allow(r)
	if err != nil {
		return Receipt{}, false, err
	}
	if to != "" && to != r.Status && !CanMove(r.Status, to) {
		return Receipt{}, false, fmt.Errorf("%s on run %s: a %s run cannot become %s: %w", s.what, r.ID, r.Status, to, ErrConflict)
	}
	a := Append{RunID: r.ID, Kind: s.kind, Body: body, Objects: nonNil(s.objects), Key: s.key, KeyHash: hash, From: r.Status, WorkItem: item}
	if to != r.Status {
		a.To = to
	}
	if b, ok := s.body.(RunStartedBody); ok {
		a.Base, a.Worktree = b.Base, b.Worktree
	}
	rec, fresh, err := d.store.Append(ctx, a)
	if err != nil {
		return Receipt{}, false, fmt.Errorf("%s on run %s: %w", s.what, r.ID, err)
	}
	return rec, fresh, nil
}

func marshalBody(v any) (json.RawMessage, error) {
	if raw, ok := v.(json.RawMessage); ok {
		if len(raw) > MaxBody {
			return nil, invalid("body", "put large content in the object store and cite its SHA-256", "is %d bytes, over the limit of %d", len(raw), MaxBody)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
			return nil, invalid("body", "send a JSON object", "is not a JSON object")
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return nil, invalid("body", "send a JSON object", "is not valid JSON")
		}
		return buf.Bytes(), nil
	}
	return json.Marshal(v)
}

// in refuses a step unless the run's status is one of ok.
func in(r Run, what string, ok ...RunStatus) error {
	if slices.Contains(ok, r.Status) {
		return nil
	}
	names := make([]string, len(ok))
	for i, s := range ok {
		names[i] = string(s)
	}
	return fmt.Errorf("%s on run %s: it is %s, and this needs it %s: %w", what, r.ID, r.Status, strings.Join(names, " or "), ErrConflict)
}

// MarkRunning records that the executor took a queued run: its base
// commit and worktree (RunStarted).
func (d *Director) MarkRunning(ctx context.Context, runID, base, worktree, key string) (Receipt, bool, error) {
	if !commitRE.MatchString(base) {
		return Receipt{}, false, invalid("base", "give the full commit hash the worktree starts from", "%q is not a commit hash", base)
	}
	if !filepath.IsAbs(worktree) || filepath.Clean(worktree) != worktree {
		return Receipt{}, false, invalid("worktree", "give the worktree's clean absolute path", "%q is not a clean absolute path", worktree)
	}
	return d.append(ctx, step{what: "start", runID: runID, kind: KindRunStarted, key: key,
		body: RunStartedBody{Base: base, Worktree: worktree},
		allow: func(r Run) (RunStatus, WorkStatus, error) {
			return RunRunning, "", in(r, "start", RunQueued)
		}})
}

// AddNote appends a typed note. A REQUEST_VERIFY note moves a running run
// to verifying.
func (d *Director) AddNote(ctx context.Context, runID string, n Note, key string) (Receipt, bool, error) {
	if err := n.Check(); err != nil {
		return Receipt{}, false, err
	}
	return d.append(ctx, step{what: "add a note", runID: runID, kind: KindNote, body: n, key: key,
		allow: func(r Run) (RunStatus, WorkStatus, error) {
			if err := in(r, "add a note", RunRunning, RunVerifying, RunAwaitingApproval); err != nil {
				return "", "", err
			}
			if n.Type == NoteRequestVerify && r.Status == RunRunning {
				return RunVerifying, "", nil
			}
			return "", "", nil
		}})
}

// Attest attaches a verifier's attestation (VerifierResults); its raw
// output stays in the object store, named by Artifacts.
func (d *Director) Attest(ctx context.Context, runID string, a Attestation, key string) (Receipt, bool, error) {
	if err := a.Check(); err != nil {
		return Receipt{}, false, err
	}
	return d.append(ctx, step{what: "attach an attestation", runID: runID, kind: KindVerifierResults, body: a, objects: a.Artifacts, key: key,
		allow: func(r Run) (RunStatus, WorkStatus, error) {
			return "", "", in(r, "attach an attestation", RunRunning, RunVerifying, RunAwaitingApproval)
		}})
}

// RequestCommit records a request for the director's approval
// (CommitRequest) and moves the run to awaiting_approval. The decision is
// the director loop's: it calls CommitCheck, then DecideCommit.
//
// The request is the run's report: the object pointers its summary names
// join its Cites, and each cited object must exist and still hash to its
// name (CheckCites, as for notes), else the request is refused naming the
// pointer and nothing is appended.
func (d *Director) RequestCommit(ctx context.Context, runID string, c CommitRequest, key string) (Receipt, bool, error) {
	if err := c.Check(); err != nil {
		return Receipt{}, false, err
	}
	c.Cites = reportCites(c.Cites, c.Summary)
	if len(c.Cites) > MaxListItems {
		return Receipt{}, false, invalid("cites", "cite at most that many receipts and objects in the request and its summary together",
			"the request and its summary cite %d receipts and objects, over the limit of %d", len(c.Cites), MaxListItems)
	}
	return d.append(ctx, step{what: "request a commit", runID: runID, kind: KindCommitRequest, body: c, objects: []string{c.Patch}, key: key,
		allow: func(r Run) (RunStatus, WorkStatus, error) {
			return RunAwaitingApproval, "", in(r, "request a commit", RunRunning, RunVerifying)
		}})
}

// CommitCheck is the policy check of a run's commit request, from its
// work item and receipts (see CheckCommit).
func (d *Director) CommitCheck(ctx context.Context, runID string) (CommitCheck, error) {
	r, err := d.Run(ctx, runID)
	if err != nil {
		return CommitCheck{}, err
	}
	c, err := d.check(ctx, r)
	if err != nil {
		return CommitCheck{}, err
	}
	if r.Status != RunAwaitingApproval {
		c.Ready = false
		c.Missing = append(c.Missing, fmt.Sprintf("the run is %s, not awaiting_approval", r.Status))
	}
	return c, nil
}

// DecideCommit records the decision on a run's commit request
// (CommitDecision). An approval is refused unless CommitCheck is ready,
// and, for a high-risk work item, unless a human decided ("human:<name>").
// A rejection sends the run back to running: the loop may end it.
func (d *Director) DecideCommit(ctx context.Context, runID string, approve bool, by, reason, key string) (Receipt, bool, error) {
	if err := text("by", by, true, maxName); err != nil {
		return Receipt{}, false, err
	}
	if err := text("reason", reason, false, MaxReason); err != nil {
		return Receipt{}, false, err
	}
	// The body names the patch of the latest request: read it first, and
	// refuse below if a receipt was appended since.
	if _, err := d.Run(ctx, runID); err != nil {
		return Receipt{}, false, err
	}
	rs, err := d.store.Receipts(ctx, runID, 0)
	if err != nil {
		return Receipt{}, false, err
	}
	body := CommitDecisionBody{Approved: approve, Patch: CheckCommit(WorkItem{}, rs).Patch, By: by, Reason: reason}
	return d.append(ctx, step{what: "decide the commit", runID: runID, kind: KindCommitDecision, body: body, key: key,
		allow: func(r Run) (RunStatus, WorkStatus, error) {
			if err := in(r, "decide the commit", RunAwaitingApproval); err != nil {
				return "", "", err
			}
			if err := d.unchanged(ctx, runID, len(rs), "decide the commit"); err != nil {
				return "", "", err
			}
			if !approve {
				return RunRunning, "", nil
			}
			// Checked under the Director's lock, on the receipts as they
			// are now: no attestation can slip in between.
			check, err := d.check(ctx, r)
			if err != nil {
				return "", "", err
			}
			if !check.Ready {
				return "", "", fmt.Errorf("approve the commit of run %s: %s: %w", runID, strings.Join(check.Missing, "; "), ErrConflict)
			}
			if check.NeedsHuman && !strings.HasPrefix(by, "human:") {
				return "", "", fmt.Errorf("approve the commit of run %s: its work item is high risk or its patch changes DOCTRINE, so a human must approve it (by \"human:<name>\"), not %q: %w", runID, by, ErrConflict)
			}
			return "", "", nil
		}})
}

// unchanged refuses when a run has other than n receipts: a body built
// from them before the Director's lock would be stale.
func (d *Director) unchanged(ctx context.Context, runID string, n int, what string) error {
	now, err := d.store.Receipts(ctx, runID, 0)
	if err != nil {
		return err
	}
	if len(now) != n {
		return fmt.Errorf("%s of run %s: its receipts changed meanwhile: %w (try again)", what, runID, ErrConflict)
	}
	return nil
}

// check is CheckCommit on a run's work item and receipts as stored.
func (d *Director) check(ctx context.Context, r Run) (CommitCheck, error) {
	it, err := d.store.WorkItem(ctx, r.WorkItem)
	if err != nil {
		return CommitCheck{}, fmt.Errorf("run %s: work item %s: %w", r.ID, r.WorkItem, err)
	}
	rs, err := d.store.Receipts(ctx, r.ID, 0)
	if err != nil {
		return CommitCheck{}, fmt.Errorf("run %s: receipts: %w", r.ID, err)
	}
	return CheckCommit(it, rs), nil
}

// RecordCommit records what reached the branch (CommitReceipt): the run
// becomes committed and its work item done. It needs an approval of the
// latest commit request.
func (d *Director) RecordCommit(ctx context.Context, runID, commit, key string) (Receipt, bool, error) {
	if !commitRE.MatchString(commit) {
		return Receipt{}, false, invalid("commit", "give the full commit hash", "%q is not a commit hash", commit)
	}
	// The body names the decision and the verifiers: read them first (a
	// resend under the same key reads the same receipts and so builds
	// the same body).
	r, err := d.Run(ctx, runID)
	if err != nil {
		return Receipt{}, false, err
	}
	it, err := d.store.WorkItem(ctx, r.WorkItem)
	if err != nil {
		return Receipt{}, false, fmt.Errorf("run %s: work item %s: %w", runID, r.WorkItem, err)
	}
	rs, err := d.store.Receipts(ctx, runID, 0)
	if err != nil {
		return Receipt{}, false, err
	}
	check := CheckCommit(it, rs)
	decision := approvedDecision(rs)
	body := CommitReceiptBody{Commit: commit, WorkItem: it.ID, Verifiers: nonNil(check.Passing), Evidence: nonNil(check.Evidence), Decision: decision}
	return d.append(ctx, step{what: "record the commit", runID: runID, kind: KindCommitReceipt, body: body, key: key,
		allow: func(r Run) (RunStatus, WorkStatus, error) {
			if err := in(r, "record the commit", RunAwaitingApproval); err != nil {
				return "", "", err
			}
			if decision == "" {
				return "", "", fmt.Errorf("record the commit of run %s: its latest commit request has no approval: %w (decide it first)", runID, ErrConflict)
			}
			// The body was built from the receipts read before the lock.
			if err := d.unchanged(ctx, runID, len(rs), "record the commit"); err != nil {
				return "", "", err
			}
			return RunCommitted, WorkDone, nil
		}})
}

// approvedDecision returns the ref of the approving decision that follows
// the latest commit request, or "".
func approvedDecision(rs []Receipt) string {
	ref := ""
	for _, rec := range rs {
		switch rec.Kind {
		case KindCommitRequest:
			ref = ""
		case KindCommitDecision:
			var b CommitDecisionBody
			if json.Unmarshal(rec.Body, &b) == nil && b.Approved {
				ref = rec.Ref()
			} else {
				ref = ""
			}
		}
	}
	return ref
}

// EndRun ends a run that will not commit (RunEnded): failed, discarded or
// cancelled. Its work item is open again for another run.
func (d *Director) EndRun(ctx context.Context, runID string, status RunStatus, reason, key string) (Receipt, bool, error) {
	switch status {
	case RunFailed, RunDiscarded, RunCancelled:
	default:
		return Receipt{}, false, invalid("status", "end a run as failed, discarded or cancelled (a commit ends it as committed)", "%q is not an end a run can be given", status)
	}
	if err := text("reason", reason, true, MaxReason); err != nil {
		return Receipt{}, false, err
	}
	return d.append(ctx, step{what: "end", runID: runID, kind: KindRunEnded, body: RunEndedBody{Status: status, Reason: reason}, key: key,
		allow: func(r Run) (RunStatus, WorkStatus, error) {
			// A work item the run split (split.go) stays split.
			if it, err := d.store.WorkItem(ctx, r.WorkItem); err == nil && it.Status == WorkSplit {
				return status, "", nil
			}
			return status, WorkOpen, nil
		}})
}

// recordable are the kinds Record takes; the others have their own
// methods, which check what they mean.
// (SplitRequest and SpecChangeRequest: split.go, tiers_gate.go).
var recordable = []Kind{KindContextFootprint, KindPatchReceipt, KindMoodTransition, KindAnomaly, KindNetRequest}

// Record appends a receipt of one of the kinds with no rule of their own
// here (ContextFootprint, PatchReceipt, MoodTransition, Anomaly): body is a JSON object of at most
// MaxBody bytes, objects the SHA-256 of what it points to.
func (d *Director) Record(ctx context.Context, runID string, kind Kind, body json.RawMessage, objects []string, key string) (Receipt, bool, error) {
	if !slices.Contains(recordable, kind) {
		return Receipt{}, false, invalid("kind", "use the note, verify, commit, split, spec change or end operation for it, or one of ContextFootprint, PatchReceipt, MoodTransition, Anomaly, NetRequest",
			"receipt kind %q cannot be recorded directly", kind)
	}
	if err := list("objects", objects, MaxListItems, checkSHA256); err != nil {
		return Receipt{}, false, err
	}
	return d.append(ctx, step{what: "record " + string(kind), runID: runID, kind: kind, body: body, objects: objects, key: key,
		allow: func(r Run) (RunStatus, WorkStatus, error) { return "", "", nil }})
}
