package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// ApprovalStatus is pending until a human decides: approved or rejected.
type ApprovalStatus string

const (
	ApprovalPending  ApprovalStatus = "pending"
	ApprovalApproved ApprovalStatus = "approved"
	ApprovalRejected ApprovalStatus = "rejected"
)

// NewApproval is a request for a human decision.
type NewApproval struct {
	// ID is the row's id when the caller chooses it (a request asked once
	// whatever happens, such as a headless run's commit); "" for a new
	// UUID.
	ID          string
	SessionID   string // "" when no session asked
	AgentID     string
	RequestType string
	Summary     string          // one line for the operator
	Payload     json.RawMessage // nil means {}
}

// Approval is a row of pending_approvals, decided or not.
type Approval struct {
	ID          string // a UUID: 36 bytes, fits Telegram's 64-byte callback data
	SessionID   string
	AgentID     string
	RequestType string
	Summary     string
	Payload     json.RawMessage
	Status      ApprovalStatus
	CreatedAt   time.Time
	ResolvedAt  time.Time // zero while pending
	ResolvedBy  string
}

const approvalColumns = `id, coalesce(session_id, ''), agent_id, request_type, summary, payload,
	status, created_at, resolved_at, coalesce(resolved_by, '')`

func scanApproval(row pgx.Row) (Approval, error) {
	var a Approval
	var resolved *time.Time
	err := row.Scan(&a.ID, &a.SessionID, &a.AgentID, &a.RequestType, &a.Summary, &a.Payload,
		&a.Status, &a.CreatedAt, &resolved, &a.ResolvedBy)
	if resolved != nil {
		a.ResolvedAt = *resolved
	}
	return a, err
}

// CreateApproval queues a request and returns it with its new id. With
// na.ID set and a row under that id already, it changes nothing and
// returns the stored row, decided or not, with ErrApprovalExists.
func (s *Store) CreateApproval(ctx context.Context, na NewApproval) (Approval, error) {
	if na.AgentID == "" || na.RequestType == "" {
		return Approval{}, errors.New("create approval: agent id and request type are required")
	}
	payload := na.Payload
	if payload == nil {
		payload = json.RawMessage("{}")
	}
	var session *string
	if na.SessionID != "" {
		session = &na.SessionID
	}
	var a Approval
	var err error
	if na.ID == "" {
		a, err = scanApproval(s.pool.QueryRow(ctx, s.q(`
			INSERT INTO choir_control.pending_approvals (session_id, agent_id, request_type, summary, payload)
			VALUES ($1, $2, $3, $4, $5) RETURNING `+approvalColumns),
			session, na.AgentID, na.RequestType, na.Summary, payload))
	} else {
		a, err = scanApproval(s.pool.QueryRow(ctx, s.q(`
			INSERT INTO choir_control.pending_approvals (id, session_id, agent_id, request_type, summary, payload)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING RETURNING `+approvalColumns),
			na.ID, session, na.AgentID, na.RequestType, na.Summary, payload))
		if errors.Is(err, pgx.ErrNoRows) {
			if a, err = s.GetApproval(ctx, na.ID); err != nil {
				return Approval{}, fmt.Errorf("create approval %s: %w", na.ID, err)
			}
			return a, fmt.Errorf("create approval %s: it exists (%s): %w", na.ID, a.Status, ErrApprovalExists)
		}
	}
	if code, _ := pgCode(err); code == "23503" {
		return Approval{}, fmt.Errorf("create approval: agent %q or session %q: %w", na.AgentID, na.SessionID, ErrNotFound)
	}
	if err != nil {
		return Approval{}, fmt.Errorf("create approval: %w", err)
	}
	return a, nil
}

// ResolveApproval decides a pending request, once: deciding it again
// changes nothing and returns the stored decision with ErrAlreadyResolved.
// An unknown id is ErrNotFound.
func (s *Store) ResolveApproval(ctx context.Context, id string, decision ApprovalStatus, by string) (Approval, error) {
	if decision != ApprovalApproved && decision != ApprovalRejected {
		return Approval{}, fmt.Errorf("resolve approval %s: decision %q: want approved or rejected", id, decision)
	}
	a, err := scanApproval(s.pool.QueryRow(ctx, s.q(`
		UPDATE choir_control.pending_approvals
		SET status = $2, resolved_at = now(), resolved_by = $3
		WHERE id = $1 AND status = 'pending'
		RETURNING `+approvalColumns), id, decision, by))
	if err == nil {
		return a, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return Approval{}, fmt.Errorf("resolve approval %s: %w", id, err)
	}
	a, err = s.GetApproval(ctx, id)
	if err != nil {
		return Approval{}, err
	}
	return a, fmt.Errorf("resolve approval %s: %s by %q at %s: %w", id, a.Status, a.ResolvedBy,
		a.ResolvedAt.UTC().Format(time.RFC3339), ErrAlreadyResolved)
}

// GetApproval returns one request, or ErrNotFound.
func (s *Store) GetApproval(ctx context.Context, id string) (Approval, error) {
	a, err := scanApproval(s.pool.QueryRow(ctx, s.q(`
		SELECT `+approvalColumns+` FROM choir_control.pending_approvals WHERE id = $1`), id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Approval{}, fmt.Errorf("approval %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Approval{}, fmt.Errorf("approval %s: %w", id, err)
	}
	return a, nil
}

// PendingApprovals returns the undecided requests of one agent, or of all
// agents when agentID is "", oldest first.
func (s *Store) PendingApprovals(ctx context.Context, agentID string) ([]Approval, error) {
	rows, err := s.pool.Query(ctx, s.q(`
		SELECT `+approvalColumns+` FROM choir_control.pending_approvals
		WHERE status = 'pending' AND ($1 = '' OR agent_id = $1)
		ORDER BY created_at, id`), agentID)
	if err != nil {
		return nil, fmt.Errorf("pending approvals: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Approval, error) { return scanApproval(r) })
	if err != nil {
		return nil, fmt.Errorf("pending approvals: %w", err)
	}
	return out, nil
}

// Handing a decision on (issue 26): with two choird replicas the one that
// decides a request (choirctl on its admin socket, its timeout) may not be
// the one that runs the session that asked, which alone can tell the agent
// and holds the DM's request message. told_at records, once, that a
// replica took the decision to hand on. A request is handed on by the
// replica running its session; one whose session no other replica runs
// (no session, ended, or run by the deciding replica) by the replica that
// decided it. Sessions recorded without an instance are no other
// replica's.

// elsewhere is the condition that another instance than the parameter
// instance (such as "$2") runs the session of the row a.
func elsewhere(instance string) string {
	return `EXISTS (SELECT 1 FROM choir_control.sessions s
		WHERE s.session_id = a.session_id AND s.status = 'active' AND s.instance <> '' AND s.instance <> ` + instance + `)`
}

// TellApproval records that instance hands on the decision of approval id
// and reports whether it should: false when the request is pending, was
// handed on already, or its session runs on another instance (whose
// UntoldApprovals takes it). instance "" (a single choird) takes every
// decided request.
func (s *Store) TellApproval(ctx context.Context, id, instance string) (bool, error) {
	tag, err := s.pool.Exec(ctx, s.q(`UPDATE choir_control.pending_approvals a SET told_at = now()
		WHERE a.id = $1 AND a.status <> 'pending' AND a.told_at IS NULL AND ($2 = '' OR NOT `+elsewhere("$2")+`)`), id, instance)
	if err != nil {
		return false, fmt.Errorf("approval %s: record it handed on: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// UntoldApprovals takes, in one statement, the decided requests nobody
// handed on that instance should: those of the sessions it runs, and
// those decided more than orphanAfter ago (by the database's clock) whose
// session no other instance runs (the deciding replica died, or the
// session ended on another one between the decision and its hand-on). It
// returns them oldest decision first, recorded as told: the caller hands
// each on.
func (s *Store) UntoldApprovals(ctx context.Context, instance string, orphanAfter time.Duration) ([]Approval, error) {
	rows, err := s.pool.Query(ctx, s.q(`UPDATE choir_control.pending_approvals a SET told_at = now()
		WHERE a.status <> 'pending' AND a.told_at IS NULL AND (
			EXISTS (SELECT 1 FROM choir_control.sessions s WHERE s.session_id = a.session_id AND s.status = 'active' AND s.instance = $2)
			OR (a.resolved_at < now() - make_interval(secs => $1) AND NOT `+elsewhere("$2")+`))
		RETURNING `+approvalColumns), orphanAfter.Seconds(), instance)
	if err != nil {
		return nil, fmt.Errorf("untold approvals: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Approval, error) { return scanApproval(r) })
	if err != nil {
		return nil, fmt.Errorf("untold approvals: %w", err)
	}
	slices.SortFunc(out, func(x, y Approval) int { return x.ResolvedAt.Compare(y.ResolvedAt) })
	return out, nil
}

// PendingApprovalsHere returns the undecided requests whose timeouts
// instance keeps, oldest first: all but those of sessions another
// instance runs (that replica armed them when its agent asked). instance
// "" (a single choird) keeps them all.
func (s *Store) PendingApprovalsHere(ctx context.Context, instance string) ([]Approval, error) {
	rows, err := s.pool.Query(ctx, s.q(`SELECT `+approvalColumns+` FROM choir_control.pending_approvals a
		WHERE a.status = 'pending' AND ($1 = '' OR NOT `+elsewhere("$1")+`)
		ORDER BY a.created_at, a.id`), instance)
	if err != nil {
		return nil, fmt.Errorf("pending approvals of %q: %w", instance, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Approval, error) { return scanApproval(r) })
	if err != nil {
		return nil, fmt.Errorf("pending approvals of %q: %w", instance, err)
	}
	return out, nil
}
