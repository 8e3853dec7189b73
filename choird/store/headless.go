package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"choir/choird/headless"

	"github.com/jackc/pgx/v5"
)

// The headless runs' rows (issue 16): work_items, runs and run_receipts
// in the control schema. Headless adapts the store to headless.Store; the
// rules (dependencies, statuses, transitions) are the Director's, the
// atomicity of each call is the store's.

// Headless is the store as choird/headless keeps its rows.
type Headless struct{ s *Store }

var _ headless.Store = Headless{}

// Headless returns the headless runs' view of the store.
func (s *Store) Headless() Headless { return Headless{s} }

const workItemColumns = `id, agent_id, description, acceptance, verifiers, risk, depends_on, coalesce(parent, ''), status, created_at, updated_at`

func scanWorkItem(row pgx.Row) (headless.WorkItem, error) {
	var it headless.WorkItem
	err := row.Scan(&it.ID, &it.Agent, &it.Description, &it.Acceptance, &it.Verifiers, &it.Risk, &it.DependsOn,
		&it.Parent, &it.Status, &it.Created, &it.Updated)
	it.Created, it.Updated = it.Created.UTC(), it.Updated.UTC()
	return it, err
}

func jsonList(s []string) []byte {
	if s == nil {
		s = []string{}
	}
	b, _ := json.Marshal(s)
	return b
}

func (h Headless) InsertWorkItems(ctx context.Context, items []headless.WorkItem, splitParent string) error {
	return h.s.inTx(ctx, func(tx pgx.Tx) error {
		if splitParent != "" {
			tag, err := tx.Exec(ctx, h.s.q(`UPDATE choir_control.work_items SET status = 'split', updated_at = now() WHERE id = $1`), splitParent)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return fmt.Errorf("work item %s: %w", splitParent, headless.ErrNotFound)
			}
		}
		for _, it := range items {
			var parent *string
			if it.Parent != "" {
				parent = &it.Parent
			}
			_, err := tx.Exec(ctx, h.s.q(`
				INSERT INTO choir_control.work_items (id, agent_id, description, acceptance, verifiers, risk, depends_on, parent, status, created_at, updated_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`),
				it.ID, it.Agent, it.Description, jsonList(it.Acceptance), jsonList(it.Verifiers), it.Risk, jsonList(it.DependsOn),
				parent, it.Status, it.Created, it.Updated)
			switch code, constraint := pgCode(err); {
			case code == "23505":
				return fmt.Errorf("work item %s: %w", it.ID, headless.ErrExists)
			case code == "23503":
				return fmt.Errorf("work item %s: agent %q or parent %q (%s): %w", it.ID, it.Agent, it.Parent, constraint, headless.ErrNotFound)
			case err != nil:
				return fmt.Errorf("insert work item %s: %w", it.ID, err)
			}
		}
		return nil
	})
}

func (h Headless) UpdateWorkItem(ctx context.Context, it headless.WorkItem) error {
	tag, err := h.s.pool.Exec(ctx, h.s.q(`
		UPDATE choir_control.work_items
		SET description = $2, acceptance = $3, verifiers = $4, risk = $5, depends_on = $6, status = $7, updated_at = $8
		WHERE id = $1`),
		it.ID, it.Description, jsonList(it.Acceptance), jsonList(it.Verifiers), it.Risk, jsonList(it.DependsOn), it.Status, it.Updated)
	if err != nil {
		return fmt.Errorf("update work item %s: %w", it.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("work item %s: %w", it.ID, headless.ErrNotFound)
	}
	return nil
}

func (h Headless) WorkItem(ctx context.Context, id string) (headless.WorkItem, error) {
	it, err := scanWorkItem(h.s.pool.QueryRow(ctx, h.s.q(`SELECT `+workItemColumns+` FROM choir_control.work_items WHERE id = $1`), id))
	if errors.Is(err, pgx.ErrNoRows) {
		return it, fmt.Errorf("work item %s: %w", id, headless.ErrNotFound)
	}
	return it, err
}

func (h Headless) WorkItems(ctx context.Context) ([]headless.WorkItem, error) {
	rows, err := h.s.pool.Query(ctx, h.s.q(`SELECT `+workItemColumns+` FROM choir_control.work_items ORDER BY created_at, id`))
	if err != nil {
		return nil, fmt.Errorf("list work items: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (headless.WorkItem, error) { return scanWorkItem(r) })
}

const runColumns = `id, work_item, agent_id, mood, trigger, budgets, status, base, worktree, created_at, ended_at`

func scanRun(row pgx.Row) (headless.Run, error) {
	var r headless.Run
	var ended *time.Time
	err := row.Scan(&r.ID, &r.WorkItem, &r.Agent, &r.Mood, &r.Trigger, &r.Budgets, &r.Status, &r.Base, &r.Worktree, &r.Created, &ended)
	r.Created = r.Created.UTC()
	if ended != nil {
		r.Ended = ended.UTC()
	}
	return r, err
}

func (h Headless) InsertRun(ctx context.Context, r headless.Run) error {
	budgets, err := json.Marshal(r.Budgets)
	if err != nil {
		return err
	}
	return h.s.inTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, h.s.q(`
			INSERT INTO choir_control.runs (id, work_item, agent_id, mood, trigger, budgets, status, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`),
			r.ID, r.WorkItem, r.Agent, r.Mood, r.Trigger, budgets, r.Status, r.Created)
		switch code, constraint := pgCode(err); {
		case code == "23505" && constraint == "runs_one_active":
			return fmt.Errorf("work item %s %w", r.WorkItem, headless.ErrActiveRun)
		case code == "23505":
			return fmt.Errorf("run %s: %w", r.ID, headless.ErrExists)
		case code == "23503":
			return fmt.Errorf("run %s: work item %s or agent %s: %w", r.ID, r.WorkItem, r.Agent, headless.ErrNotFound)
		case err != nil:
			return fmt.Errorf("insert run %s: %w", r.ID, err)
		}
		_, err = tx.Exec(ctx, h.s.q(`UPDATE choir_control.work_items SET status = 'running', updated_at = $2 WHERE id = $1`), r.WorkItem, r.Created)
		return err
	})
}

func (h Headless) Run(ctx context.Context, id string) (headless.Run, error) {
	r, err := scanRun(h.s.pool.QueryRow(ctx, h.s.q(`SELECT `+runColumns+` FROM choir_control.runs WHERE id = $1`), id))
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("run %s: %w", id, headless.ErrNotFound)
	}
	return r, err
}

func (h Headless) Runs(ctx context.Context, agent, workItem string) ([]headless.Run, error) {
	rows, err := h.s.pool.Query(ctx, h.s.q(`SELECT `+runColumns+` FROM choir_control.runs
		WHERE ($1 = '' OR agent_id = $1) AND ($2 = '' OR work_item = $2)
		ORDER BY created_at DESC, id DESC`), agent, workItem)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (headless.Run, error) { return scanRun(r) })
}

func (h Headless) RunsIn(ctx context.Context, statuses ...headless.RunStatus) ([]headless.Run, error) {
	list := make([]string, len(statuses))
	for i, st := range statuses {
		list[i] = string(st)
	}
	rows, err := h.s.pool.Query(ctx, h.s.q(`SELECT `+runColumns+` FROM choir_control.runs
		WHERE status = ANY($1::text[]) ORDER BY created_at, id`), list)
	if err != nil {
		return nil, fmt.Errorf("list runs by status: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (headless.Run, error) { return scanRun(r) })
}

const receiptColumns = `seq, run_id, kind, body, objects, at`

func scanReceipt(row pgx.Row) (headless.Receipt, error) {
	var r headless.Receipt
	var body []byte
	err := row.Scan(&r.Seq, &r.RunID, &r.Kind, &body, &r.Objects, &r.At)
	r.Body, r.At = json.RawMessage(body), r.At.UTC()
	return r, err
}

func (h Headless) Append(ctx context.Context, a headless.Append) (headless.Receipt, bool, error) {
	var out headless.Receipt
	fresh := false
	err := h.s.inTx(ctx, func(tx pgx.Tx) error {
		var status headless.RunStatus
		err := tx.QueryRow(ctx, h.s.q(`SELECT status FROM choir_control.runs WHERE id = $1 FOR UPDATE`), a.RunID).Scan(&status)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("run %s: %w", a.RunID, headless.ErrNotFound)
		}
		if err != nil {
			return err
		}
		// Under the run's lock: a resend under a known key answers with
		// the receipt it first made.
		if a.Key != "" {
			var hash string
			out, err = scanReceiptHash(tx.QueryRow(ctx, h.s.q(`SELECT `+receiptColumns+`, key_hash FROM choir_control.run_receipts WHERE run_id = $1 AND idem_key = $2`), a.RunID, a.Key), &hash)
			if err == nil {
				if hash != a.KeyHash {
					return fmt.Errorf("key %q already stands for receipt %s: %w", a.Key, out.Ref(), headless.ErrKeyReused)
				}
				return nil
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
		}
		if status != a.From {
			return fmt.Errorf("run %s is %s, not %s: %w", a.RunID, status, a.From, headless.ErrConflict)
		}
		var key *string
		if a.Key != "" {
			key = &a.Key
		}
		out, err = scanReceipt(tx.QueryRow(ctx, h.s.q(`
			INSERT INTO choir_control.run_receipts (run_id, seq, kind, body, objects, idem_key, key_hash)
			VALUES ($1, (SELECT coalesce(max(seq), 0) + 1 FROM choir_control.run_receipts WHERE run_id = $1), $2, $3::json, $4, $5, $6)
			RETURNING `+receiptColumns), a.RunID, a.Kind, string(a.Body), jsonList(a.Objects), key, a.KeyHash))
		if err != nil {
			return fmt.Errorf("append %s: %w", a.Kind, err)
		}
		if a.To != "" {
			if _, err := tx.Exec(ctx, h.s.q(`
				UPDATE choir_control.runs SET status = $2,
					ended_at = CASE WHEN $3 THEN $4::timestamptz ELSE ended_at END,
					base = CASE WHEN $5 <> '' THEN $5 ELSE base END,
					worktree = CASE WHEN $5 <> '' THEN $6 ELSE worktree END
				WHERE id = $1`), a.RunID, a.To, a.To.Ended(), out.At, a.Base, a.Worktree); err != nil {
				return fmt.Errorf("move run to %s: %w", a.To, err)
			}
		}
		if a.WorkItem != "" {
			if _, err := tx.Exec(ctx, h.s.q(`
				UPDATE choir_control.work_items SET status = $2, updated_at = $3
				WHERE id = (SELECT work_item FROM choir_control.runs WHERE id = $1)`), a.RunID, a.WorkItem, out.At); err != nil {
				return fmt.Errorf("set the work item %s: %w", a.WorkItem, err)
			}
		}
		fresh = true
		return nil
	})
	if err != nil {
		return headless.Receipt{}, false, err
	}
	return out, fresh, nil
}

func scanReceiptHash(row pgx.Row, hash *string) (headless.Receipt, error) {
	var r headless.Receipt
	var body []byte
	err := row.Scan(&r.Seq, &r.RunID, &r.Kind, &body, &r.Objects, &r.At, hash)
	r.Body, r.At = json.RawMessage(body), r.At.UTC()
	return r, err
}

func (h Headless) ReceiptByKey(ctx context.Context, runID, key string) (headless.Receipt, string, error) {
	var hash string
	r, err := scanReceiptHash(h.s.pool.QueryRow(ctx, h.s.q(`SELECT `+receiptColumns+`, key_hash FROM choir_control.run_receipts WHERE run_id = $1 AND idem_key = $2`), runID, key), &hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, "", fmt.Errorf("run %s key %q: %w", runID, key, headless.ErrNotFound)
	}
	return r, hash, err
}

func (h Headless) Receipts(ctx context.Context, runID string, after int64) ([]headless.Receipt, error) {
	rows, err := h.s.pool.Query(ctx, h.s.q(`SELECT `+receiptColumns+` FROM choir_control.run_receipts WHERE run_id = $1 AND seq > $2 ORDER BY seq`), runID, after)
	if err != nil {
		return nil, fmt.Errorf("receipts of run %s: %w", runID, err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (headless.Receipt, error) { return scanReceipt(r) })
}

func (h Headless) AllReceipts(ctx context.Context, agent string) ([]headless.Receipt, error) {
	rows, err := h.s.pool.Query(ctx, h.s.q(`SELECT r.seq, r.run_id, r.kind, r.body, r.objects, r.at
		FROM choir_control.run_receipts r JOIN choir_control.runs u ON u.id = r.run_id
		WHERE $1 = '' OR u.agent_id = $1 ORDER BY r.id`), agent)
	if err != nil {
		return nil, fmt.Errorf("receipts: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (headless.Receipt, error) { return scanReceipt(r) })
}
