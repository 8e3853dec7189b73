// Package postgres presents choird's Postgres store (choird/store, table
// choir_control.pending_approvals) as an approval.Store.
package postgres

import (
	"context"
	"errors"
	"time"

	"choir/choird/approval"
	"choir/choird/store"
)

// Store adapts a *store.Store.
type Store struct{ S *store.Store }

var _ approval.Store = Store{}

// New adapts s.
func New(s *store.Store) Store { return Store{S: s} }

// Create inserts a pending row.
func (p Store) Create(ctx context.Context, a approval.Approval) (approval.Approval, error) {
	row, err := p.S.CreateApproval(ctx, store.NewApproval{
		ID: a.ID, SessionID: a.SessionID, AgentID: a.AgentID, RequestType: a.RequestType, Summary: a.Summary, Payload: a.Payload,
	})
	return from(row), mapErr(err)
}

// Resolve decides a pending row once.
func (p Store) Resolve(ctx context.Context, id string, status approval.Status, by string) (approval.Approval, error) {
	row, err := p.S.ResolveApproval(ctx, id, store.ApprovalStatus(status), by)
	return from(row), mapErr(err)
}

// Get reads one row.
func (p Store) Get(ctx context.Context, id string) (approval.Approval, error) {
	row, err := p.S.GetApproval(ctx, id)
	return from(row), mapErr(err)
}

// Pending lists undecided rows of agentID ("" all), oldest first.
func (p Store) Pending(ctx context.Context, agentID string) ([]approval.Approval, error) {
	rows, err := p.S.PendingApprovals(ctx, agentID)
	if err != nil {
		return nil, err
	}
	return fromAll(rows), nil
}

func from(r store.Approval) approval.Approval {
	return approval.Approval{
		ID: r.ID, SessionID: r.SessionID, AgentID: r.AgentID, RequestType: r.RequestType, Summary: r.Summary,
		Payload: r.Payload, Status: approval.Status(r.Status), CreatedAt: r.CreatedAt, ResolvedAt: r.ResolvedAt, ResolvedBy: r.ResolvedBy,
	}
}

// mapErr keeps the store's message and adds the approval package's
// sentinel, so errors.Is works with either.
func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrAlreadyResolved):
		return both{err, approval.ErrAlreadyDecided}
	case errors.Is(err, store.ErrNotFound):
		return both{err, approval.ErrNotFound}
	case errors.Is(err, store.ErrApprovalExists):
		return both{err, approval.ErrExists}
	}
	return err
}

// both reads as the store's error and matches the sentinel too.
type both struct{ err, sentinel error }

func (b both) Error() string   { return b.err.Error() }
func (b both) Unwrap() []error { return []error{b.err, b.sentinel} }

// Handoff is the approval.Handoff of one choird over told_at: Instance is
// its instance id, or "" for a single choird (which hands on every
// decision it makes and keeps every timeout). An approval decided and
// handed on by nobody for OrphanAfter (the deciding replica died between
// the two, or the session ended meanwhile) is taken by whichever replica
// looks first.
type Handoff struct {
	S           *store.Store
	Instance    string
	OrphanAfter time.Duration
}

var _ approval.Handoff = Handoff{}

// Claim records the decision of id handed on by this choird.
func (h Handoff) Claim(ctx context.Context, id string) (bool, error) {
	return h.S.TellApproval(ctx, id, h.Instance)
}

// Untold takes the decisions this choird is to hand on.
func (h Handoff) Untold(ctx context.Context) ([]approval.Approval, error) {
	rows, err := h.S.UntoldApprovals(ctx, h.Instance, h.OrphanAfter)
	return fromAll(rows), err
}

// Pending lists the pending approvals whose timeouts this choird keeps.
func (h Handoff) Pending(ctx context.Context) ([]approval.Approval, error) {
	rows, err := h.S.PendingApprovalsHere(ctx, h.Instance)
	return fromAll(rows), err
}

func fromAll(rows []store.Approval) []approval.Approval {
	out := make([]approval.Approval, len(rows))
	for i, r := range rows {
		out[i] = from(r)
	}
	return out
}
