package headless

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Store keeps work items, runs and receipts. choird/store implements it on
// Postgres and MemStore in memory. The Director serialises its writes, so
// a Store need not check the rules; what it must do atomically is said on
// each method.
type Store interface {
	// InsertWorkItems adds items (ErrExists for an id taken) and, when
	// splitParent is not "", sets that item's status to split, all in one
	// transaction.
	InsertWorkItems(ctx context.Context, items []WorkItem, splitParent string) error
	// UpdateWorkItem writes an item's mutable fields and status
	// (ErrNotFound when it does not exist).
	UpdateWorkItem(ctx context.Context, item WorkItem) error
	WorkItem(ctx context.Context, id string) (WorkItem, error)
	// WorkItems lists every work item, oldest first.
	WorkItems(ctx context.Context) ([]WorkItem, error)

	// InsertRun adds a queued run and sets its work item's status to
	// running, in one transaction; ErrActiveRun when the work item already
	// has a run that has not ended.
	InsertRun(ctx context.Context, run Run) error
	Run(ctx context.Context, id string) (Run, error)
	// Runs lists runs, newest first, of one agent and/or one work item
	// ("" for any).
	Runs(ctx context.Context, agent, workItem string) ([]Run, error)
	// RunsIn lists the runs whose status is one of statuses, oldest
	// first (the director loop's queue and the runs left live).
	RunsIn(ctx context.Context, statuses ...RunStatus) ([]Run, error)

	// Append adds a receipt to a run with the next seq, as described by
	// Append, in one transaction.
	Append(ctx context.Context, a Append) (Receipt, bool, error)
	// ReceiptByKey returns the receipt a run appended under an idempotency
	// key, with its KeyHash; ErrNotFound when there is none.
	ReceiptByKey(ctx context.Context, runID, key string) (Receipt, string, error)
	// Receipts lists a run's receipts after seq, in seq order.
	Receipts(ctx context.Context, runID string, after int64) ([]Receipt, error)
	// AllReceipts lists the receipts of every run of agent ("" for all),
	// in the order they were appended.
	AllReceipts(ctx context.Context, agent string) ([]Receipt, error)
}

// Append is one receipt to add, and the state change that goes with it.
//
// If Key is not "" and the run already has a receipt with that key, the
// store appends nothing: it returns that receipt and false when its
// KeyHash matches, or ErrKeyReused when it does not. Otherwise it locks
// the run; ErrNotFound if there is none, ErrConflict if its status is not
// From (someone moved it meanwhile). It then appends the receipt at the
// next seq, moves the run to To (when not "", setting its end time when To
// is an end, and Base and Worktree when given), and sets its work item's
// status to WorkItem (when not ""). It returns the receipt and true.
type Append struct {
	RunID    string
	Kind     Kind
	Body     json.RawMessage
	Objects  []string
	Key      string
	KeyHash  string // what the key stands for: KeyHashOf(Kind, Body)
	From     RunStatus
	To       RunStatus
	Base     string
	Worktree string
	WorkItem WorkStatus
}

// KeyHashOf is the hash a resend with the same key must match: the kind
// and the body as sent.
func KeyHashOf(kind Kind, body []byte) string {
	h := sha256.New()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}
