package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The usage ledger (issue 23): llm_usage holds one row per model call
// attempt. Rows come from the ModelCall events of a heartbeat's batch, in
// the batch's transaction (recordCalls), so a record is stored exactly
// when its event is and a resend adds nothing; or from InsertCall, for a
// record that never reached the log (the session summary) or a call
// choird made itself. Either way, the rows a statement added (never a
// duplicate) are told to Store.CallsStored once committed: choird's
// Prometheus counters count from there.

// CallEvent is the event type whose payload is a call record.
const CallEvent = "ModelCall"

// CallRow is one ledger row.
type CallRow struct {
	SessionID        string
	CallID           string
	AgentID          string
	Rev              int64 // 0: not from the log
	At               time.Time
	Lane, Job        string
	Purpose          string
	Model            string
	ProviderModel    string
	Attempt          int
	PromptTokens     int64
	CompletionTokens int64
	CachedTokens     int64
	Cost             float64
	CostSource       string
	Currency         string
	LatencyMS        int64
	Outcome          string
	Estimated        bool
}

// num reads a JSON member as a number between 0 and max, 0 when it is not
// a number: a record the agent got wrong never fails its batch.
func num(member, typ string, max string) string {
	return fmt.Sprintf(`CASE WHEN jsonb_typeof(e.payload->'%[1]s') = 'number'
		THEN least(greatest((e.payload->>'%[1]s')::numeric, 0), %[3]s)::%[2]s ELSE 0 END`, member, typ, max)
}

// str reads a JSON member as text of at most 128 characters, "" when absent.
func str(member, def string) string {
	return fmt.Sprintf(`left(coalesce(CASE WHEN jsonb_typeof(e.payload->'%[1]s') = 'string' THEN e.payload->>'%[1]s' END, '%[2]s'), 128)`, member, def)
}

var recordCallsSQL = `
	INSERT INTO choir_control.llm_usage (session_id, call_id, agent_id, rev, at, lane, job, purpose, model, provider_model,
		attempt, prompt_tokens, completion_tokens, cached_tokens, cost, cost_source, currency, latency_ms, outcome, estimated)
	SELECT e.session_id, left(e.payload->>'call_id', 128), s.agent_id, e.rev, coalesce(e.event_time, e.created_at), coalesce(e.lane, ''),
		` + str("job", "") + `, ` + str("purpose", "") + `, ` + str("model", "") + `, ` + str("provider_model", "") + `,
		` + num("attempt", "int", "1000") + `, ` + num("prompt_tokens", "bigint", "1e12") + `,
		` + num("completion_tokens", "bigint", "1e12") + `, ` + num("cached_tokens", "bigint", "1e12") + `,
		` + num("cost", "double precision", "1e9") + `, ` + str("cost_source", "none") + `, ` + str("currency", "") + `,
		` + num("latency_ms", "bigint", "1e12") + `, ` + str("outcome", "") + `,
		coalesce(jsonb_typeof(e.payload->'estimated') = 'boolean' AND (e.payload->>'estimated')::boolean, false)
	FROM choir_control.session_events e JOIN choir_control.sessions s ON s.session_id = e.session_id
	WHERE e.session_id = $1 AND e.rev > $2 AND e.event_type = '` + CallEvent + `'
	  AND jsonb_typeof(e.payload->'call_id') = 'string' AND e.payload->>'call_id' <> ''
	ON CONFLICT DO NOTHING
	RETURNING ` + callColumns

// callColumns are what a CallRow holds, in its order.
const callColumns = `session_id, call_id, agent_id, coalesce(rev, 0), at, lane, job, purpose, model, provider_model,
		attempt, prompt_tokens, completion_tokens, cached_tokens, cost, cost_source, currency, latency_ms, outcome, estimated`

// recordCalls writes the ledger rows of the session's ModelCall events
// after revision after, in tx (Replicate's), and returns the rows it added.
func (s *Store) recordCalls(ctx context.Context, tx pgx.Tx, sessionID string, after int64) ([]CallRow, error) {
	rows, err := tx.Query(ctx, s.q(recordCallsSQL), sessionID, after)
	if err == nil {
		var added []CallRow
		added, err = pgx.CollectRows(rows, pgx.RowToStructByPos[CallRow])
		if err == nil {
			return added, nil
		}
	}
	return nil, fmt.Errorf("usage ledger of %s after %d: %w", sessionID, after, err)
}

// callsStored tells the CallsStored hook the rows just added.
func (s *Store) callsStored(rows []CallRow) {
	if s.CallsStored != nil && len(rows) > 0 {
		s.CallsStored(rows)
	}
}

// hasCalls says whether a batch holds a call record.
func hasCalls(events []Event) bool {
	for _, e := range events {
		if e.Type == CallEvent {
			return true
		}
	}
	return false
}

// InsertCall stores one row, unless the ledger holds its (session, call)
// already; it says whether it was new.
func (s *Store) InsertCall(ctx context.Context, r CallRow) (bool, error) {
	var rev *int64
	if r.Rev > 0 {
		rev = &r.Rev
	}
	tag, err := s.pool.Exec(ctx, s.q(`
		INSERT INTO choir_control.llm_usage (session_id, call_id, agent_id, rev, at, lane, job, purpose, model, provider_model,
			attempt, prompt_tokens, completion_tokens, cached_tokens, cost, cost_source, currency, latency_ms, outcome, estimated)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
		ON CONFLICT DO NOTHING`),
		r.SessionID, r.CallID, r.AgentID, rev, r.At.UTC(), r.Lane, r.Job, r.Purpose, r.Model, r.ProviderModel,
		r.Attempt, r.PromptTokens, r.CompletionTokens, r.CachedTokens, r.Cost, r.CostSource, r.Currency, r.LatencyMS, r.Outcome, r.Estimated)
	if err != nil {
		return false, fmt.Errorf("usage ledger: store call %s of %s: %w", r.CallID, r.SessionID, err)
	}
	if tag.RowsAffected() != 1 {
		return false, nil
	}
	s.callsStored([]CallRow{r})
	return true, nil
}

// Spent is what the ledger holds in one scope and period.
type Spent struct {
	Cost   float64
	Tokens int64
}

// Totals are an agent's and the installation's spend this day and month,
// and which of the asked call ids the ledger holds already.
type Totals struct {
	AgentDay, AgentMonth, AllDay, AllMonth Spent
	Stored                                 []string
}

// SpendTotals sums the ledger for agentID and for everyone since day and
// since month (month ≤ day), and names which of callIDs it holds, in one
// round trip.
func (s *Store) SpendTotals(ctx context.Context, agentID string, day, month time.Time, callIDs []string) (Totals, error) {
	var t Totals
	if callIDs == nil {
		callIDs = []string{}
	}
	err := s.pool.QueryRow(ctx, s.q(`
		SELECT coalesce(sum(cost) FILTER (WHERE agent_id = $1 AND at >= $2), 0),
		       coalesce(sum(prompt_tokens + completion_tokens) FILTER (WHERE agent_id = $1 AND at >= $2), 0)::bigint,
		       coalesce(sum(cost) FILTER (WHERE agent_id = $1), 0),
		       coalesce(sum(prompt_tokens + completion_tokens) FILTER (WHERE agent_id = $1), 0)::bigint,
		       coalesce(sum(cost) FILTER (WHERE at >= $2), 0),
		       coalesce(sum(prompt_tokens + completion_tokens) FILTER (WHERE at >= $2), 0)::bigint,
		       coalesce(sum(cost), 0),
		       coalesce(sum(prompt_tokens + completion_tokens), 0)::bigint,
		       (SELECT coalesce(array_agg(call_id), '{}') FROM choir_control.llm_usage WHERE call_id = ANY($4::text[]))
		FROM choir_control.llm_usage WHERE at >= $3`), agentID, day.UTC(), month.UTC(), callIDs).
		Scan(&t.AgentDay.Cost, &t.AgentDay.Tokens, &t.AgentMonth.Cost, &t.AgentMonth.Tokens,
			&t.AllDay.Cost, &t.AllDay.Tokens, &t.AllMonth.Cost, &t.AllMonth.Tokens, &t.Stored)
	if err != nil {
		return Totals{}, fmt.Errorf("usage ledger: totals of %s: %w", agentID, err)
	}
	return t, nil
}

// UsageQuery selects and groups ledger rows for choirctl usage.
type UsageQuery struct {
	Agent string    // "" for all
	Since time.Time // zero for all time
	By    string    // agent (default), model, session or day
}

// UsageRow is one group of a usage report.
type UsageRow struct {
	Key              string // the agent, model, session or day (YYYY-MM-DD, UTC)
	Agent            string // the session's agent when By is session
	Calls            int64
	Failed           int64 // attempts whose outcome was not ok
	PromptTokens     int64
	CompletionTokens int64
	CachedTokens     int64
	Cost             float64
	Unpriced         int64 // calls with no cost known (tokens only)
}

// Usage reports the ledger grouped as q asks, largest cost first.
func (s *Store) Usage(ctx context.Context, q UsageQuery) ([]UsageRow, error) {
	key, agent := "agent_id", "''"
	switch q.By {
	case "", "agent":
	case "model":
		key = "model"
	case "session":
		key, agent = "session_id", "min(agent_id)"
	case "day":
		key = "to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
	default:
		return nil, fmt.Errorf("usage: group by %q: want agent, model, session or day", q.By)
	}
	rows, err := s.pool.Query(ctx, s.q(`
		SELECT `+key+`, `+agent+`, count(*), count(*) FILTER (WHERE outcome <> 'ok'),
		       coalesce(sum(prompt_tokens), 0)::bigint, coalesce(sum(completion_tokens), 0)::bigint,
		       coalesce(sum(cached_tokens), 0)::bigint, coalesce(sum(cost), 0),
		       count(*) FILTER (WHERE cost_source = 'none' AND outcome = 'ok')
		FROM choir_control.llm_usage
		WHERE ($1 = '' OR agent_id = $1) AND at >= $2
		GROUP BY 1 ORDER BY 8 DESC, 1`), q.Agent, q.Since.UTC())
	if err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[UsageRow])
	if err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	return out, nil
}

// Allowance is a one-off raise of an agent's caps until a time.
type Allowance struct {
	AgentID   string
	Amount    float64
	Unit      string // "currency" or "tokens"
	Until     time.Time
	GrantedBy string
	GrantedAt time.Time
}

// AddAllowance records a raise.
func (s *Store) AddAllowance(ctx context.Context, a Allowance) error {
	if _, err := s.pool.Exec(ctx, s.q(`
		INSERT INTO choir_control.usage_allowances (agent_id, amount, unit, until, granted_by)
		VALUES ($1, $2, $3, $4, $5)`), a.AgentID, a.Amount, a.Unit, a.Until.UTC(), a.GrantedBy); err != nil {
		return fmt.Errorf("usage allow %s: %w", a.AgentID, err)
	}
	return nil
}

// ClaimSpendNotice records that the warn_at notice named key was sent and
// reports whether this call was the first to claim it, so each notice goes
// out once also across choird restarts. Claims older than two months (no
// period lasts longer) are pruned on the way.
func (s *Store) ClaimSpendNotice(ctx context.Context, key string, at time.Time) (bool, error) {
	tag, err := s.pool.Exec(ctx, s.q(`
		INSERT INTO choir_control.spend_notices (key, sent_at) VALUES ($1, $2)
		ON CONFLICT (key) DO NOTHING`), key, at.UTC())
	if err != nil {
		return false, fmt.Errorf("spend notice %s: %w", key, err)
	}
	if tag.RowsAffected() == 0 {
		return false, nil
	}
	if _, err := s.pool.Exec(ctx, s.q(`DELETE FROM choir_control.spend_notices WHERE sent_at < $1`), at.UTC().AddDate(0, -2, 0)); err != nil {
		return true, fmt.Errorf("prune spend notices: %w", err)
	}
	return true, nil
}

// Allowances returns the raises still running at t.
func (s *Store) Allowances(ctx context.Context, t time.Time) ([]Allowance, error) {
	rows, err := s.pool.Query(ctx, s.q(`
		SELECT agent_id, amount, unit, until, granted_by, granted_at FROM choir_control.usage_allowances
		WHERE until > $1 ORDER BY granted_at`), t.UTC())
	if err != nil {
		return nil, fmt.Errorf("usage allowances: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Allowance])
	if err != nil {
		return nil, fmt.Errorf("usage allowances: %w", err)
	}
	return out, nil
}
