package headless

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"time"
)

// Sentinel errors for domain states; test with errors.Is. Every error the
// Director returns wraps one of them (or is a *ValidationError) and says
// which resource and what to do.
var (
	ErrNotFound     = errors.New("not found")
	ErrExists       = errors.New("already exists")
	ErrConflict     = errors.New("conflict")          // the state changed under the request, or forbids it
	ErrActiveRun    = errors.New("has an active run") // a work item may have one active run
	ErrRunEnded     = errors.New("run has ended")
	ErrKeyReused    = errors.New("idempotency key reused with another request")
	ErrInvalidInput = errors.New("invalid input")
)

// Risk is a work item's risk tier: a high one needs a human to approve its
// commit.
type Risk string

const (
	RiskLow    Risk = "low"
	RiskMedium Risk = "medium"
	RiskHigh   Risk = "high"
)

// WorkStatus is a work item's status. The store keeps open, running, done,
// split, cancelled and blocked; ready is open with every dependency done,
// worked out when the item is read (so it can never go stale).
type WorkStatus string

const (
	WorkOpen      WorkStatus = "open"
	WorkReady     WorkStatus = "ready"
	WorkRunning   WorkStatus = "running"
	WorkDone      WorkStatus = "done"
	WorkSplit     WorkStatus = "split"
	WorkCancelled WorkStatus = "cancelled"
	WorkBlocked   WorkStatus = "blocked"
)

// WorkItem is one objective satisfiable within one run (seed 002 §6).
type WorkItem struct {
	ID          string     `json:"id"`
	Agent       string     `json:"agent"`
	Description string     `json:"description"`
	Acceptance  []string   `json:"acceptance"`
	Verifiers   []string   `json:"verifiers"`
	Risk        Risk       `json:"risk"`
	DependsOn   []string   `json:"depends_on"`
	Parent      string     `json:"parent,omitempty"`
	Status      WorkStatus `json:"status"`
	Created     time.Time  `json:"created"`
	Updated     time.Time  `json:"updated"`
}

// RunStatus is where a run is in its life. committed, failed, discarded
// and cancelled are ends: nothing is appended after one.
type RunStatus string

const (
	RunQueued           RunStatus = "queued"
	RunRunning          RunStatus = "running"
	RunVerifying        RunStatus = "verifying"
	RunAwaitingApproval RunStatus = "awaiting_approval"
	RunCommitted        RunStatus = "committed"
	RunFailed           RunStatus = "failed"
	RunDiscarded        RunStatus = "discarded"
	RunCancelled        RunStatus = "cancelled"
)

// Ended reports whether s is an end status.
func (s RunStatus) Ended() bool {
	switch s {
	case RunCommitted, RunFailed, RunDiscarded, RunCancelled:
		return true
	}
	return false
}

// transitions lists the statuses each status may move to.
var transitions = map[RunStatus][]RunStatus{
	RunQueued:           {RunRunning, RunCancelled, RunDiscarded},
	RunRunning:          {RunVerifying, RunAwaitingApproval, RunFailed, RunDiscarded, RunCancelled},
	RunVerifying:        {RunRunning, RunAwaitingApproval, RunFailed, RunDiscarded, RunCancelled},
	RunAwaitingApproval: {RunCommitted, RunRunning, RunFailed, RunDiscarded, RunCancelled},
}

// CanMove reports whether a run may go from one status to another.
func CanMove(from, to RunStatus) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Budgets bound a run; zero means the mood's default.
type Budgets struct {
	Tokens      int64 `json:"tokens,omitempty"`
	WallSeconds int64 `json:"wall_seconds,omitempty"`
	ToolCalls   int64 `json:"tool_calls,omitempty"`
}

// Run is one bounded execution episode: one work item, one mood, budgets.
type Run struct {
	ID       string    `json:"id"`
	WorkItem string    `json:"work_item"`
	Agent    string    `json:"agent"`
	Mood     string    `json:"mood"`
	Trigger  string    `json:"trigger"`
	Budgets  Budgets   `json:"budgets"`
	Status   RunStatus `json:"status"`
	Base     string    `json:"base,omitempty"`     // the commit the worktree started from
	Worktree string    `json:"worktree,omitempty"` // its path while the run lives
	Created  time.Time `json:"created"`
	Ended    time.Time `json:"ended,omitzero"`
}

// Kind names what a receipt records.
type Kind string

const (
	KindRunStarted        Kind = "RunStarted"
	KindContextFootprint  Kind = "ContextFootprint"
	KindNote              Kind = "Note"
	KindVerifierResults   Kind = "VerifierResults"
	KindPatchReceipt      Kind = "PatchReceipt"
	KindMoodTransition    Kind = "MoodTransition"
	KindCommitRequest     Kind = "CommitRequest"
	KindCommitDecision    Kind = "CommitDecision"
	KindCommitReceipt     Kind = "CommitReceipt"
	KindRunEnded          Kind = "RunEnded"
	KindAnomaly           Kind = "Anomaly"
	KindSplitRequest      Kind = "SplitRequest"
	KindSpecChangeRequest Kind = "SpecChangeRequest"
	// KindNetRequest is one choir.net.fetch of the run, allowed or denied
	// (choird/netfetch.Record; the body's object as a "source").
	KindNetRequest Kind = "NetRequest"
)

// Kinds lists every receipt kind.
var Kinds = []Kind{KindRunStarted, KindContextFootprint, KindNote, KindVerifierResults, KindPatchReceipt,
	KindMoodTransition, KindCommitRequest, KindCommitDecision, KindCommitReceipt, KindRunEnded, KindAnomaly,
	KindSplitRequest, KindSpecChangeRequest, KindSplitDecision, KindNetRequest}

// Receipt is one entry of a run's append-only log: Seq counts from 1 per
// run with no gaps. Objects are the SHA-256 (hex) of objects in the object
// store that the receipt points to (raw verifier logs, diffs).
type Receipt struct {
	Seq     int64           `json:"seq"`
	RunID   string          `json:"run_id"`
	Kind    Kind            `json:"kind"`
	Body    json.RawMessage `json:"body"`
	Objects []string        `json:"objects"`
	At      time.Time       `json:"at"`
}

// Ref is how a receipt is cited: "<run id>#<seq>".
func (r Receipt) Ref() string { return RefOf(r.RunID, r.Seq) }

// RefOf is the citation of a run's receipt seq.
func RefOf(runID string, seq int64) string {
	return runID + "#" + strconv.FormatInt(seq, 10)
}

// NewWorkItemID returns a fresh work item id, w-<12 hex>.
func NewWorkItemID() string { return "w-" + randHex() }

// NewRunID returns a fresh run id, r-<12 hex>.
func NewRunID() string { return "r-" + randHex() }

func randHex() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Pointer is a citation of an object in the content-addressed object store
// (seed 002 §2.4): retrieval from the local knowledge base returns
// pointers with a short snippet, never the objects' content, and notes
// and run reports cite them as "sha256:<hex>".
type Pointer struct {
	Object  string  `json:"object"`            // SHA-256 (hex) of the object
	Kind    string  `json:"kind"`              // source, extract, claim, conjecture, hyperthesis, artifact…
	Snippet string  `json:"snippet,omitempty"` // a few hundred characters at most, untrusted data
	Score   float64 `json:"score,omitempty"`
}

// Cite is how a pointer is cited: "sha256:<hex>".
func (p Pointer) Cite() string { return "sha256:" + p.Object }
