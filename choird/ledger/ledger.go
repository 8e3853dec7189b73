// Package ledger is choird's spend control (issue 23): the caps of
// config.json's "spend" and "agents.<id>.spend" held against the usage
// ledger (choird/store's llm_usage) before every model call.
//
// An agent asks before each call attempt (rpc SPEND "reserve") with the
// attempt's worst case: its prompt estimate plus the most it may answer.
// The ledger sums, in one database round trip, what the agent and the
// installation spent this UTC day and month, adds the reservations still
// open (held in memory), and refuses the call when any cap would be
// passed. The reservation stays open until the call's record is in the
// ledger (it came with a heartbeat's batch, or by "settle"), and a settle
// first shrinks it to the call's actual cost. So calls running at once
// (parallel core jobs, compaction, the summary) can together pass a cap
// only by what their actual use exceeds their reservations: nothing when
// the provider honours max_tokens and the prompt estimate holds.
//
// Reservations live in memory: a choird restart forgets them (the records
// they await are counted when they arrive), and one whose record never
// comes (the agent died) expires after TTL.
package ledger

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"choir/choird/store"
	"choir/internal/config"
	"choir/internal/rpc"
)

// Store is what the ledger needs of choird's store.
type Store interface {
	SpendTotals(ctx context.Context, agentID string, day, month time.Time, callIDs []string) (store.Totals, error)
	InsertCall(ctx context.Context, r store.CallRow) (bool, error)
	AddAllowance(ctx context.Context, a store.Allowance) error
	Allowances(ctx context.Context, t time.Time) ([]store.Allowance, error)
	ClaimSpendNotice(ctx context.Context, key string, at time.Time) (bool, error)
}

var _ Store = (*store.Store)(nil)

// DefaultTTL is how long a reservation waits for its record.
const DefaultTTL = 15 * time.Minute

// Ledger enforces the caps. Set the fields before use.
type Ledger struct {
	Store  Store
	Config func() *config.Config // the running config
	// Notify tells an agent's bound DM and the admin DMs that a cap
	// passed warn_at (once per cap and period, also across restarts: the
	// store keeps the notices sent).
	Notify func(agentID, text string)
	Log    *slog.Logger
	Now    func() time.Time // nil: time.Now
	TTL    time.Duration    // 0: DefaultTTL

	mu   sync.Mutex
	open map[string]*reservation // by call id
	seq  int64                   // reservations closed so far
	// reading counts the reserves reading the totals, by the seq they
	// began at; closed keeps the reservations closed since the oldest.
	reading map[int64]int
	closed  []closedRes
	warned  map[string]bool // scope, cap and period: notices claimed
	allow   []store.Allowance
	loaded  bool
}

type reservation struct {
	agent, session string
	cost           float64
	tokens         int64
	expires        time.Time
	settled        bool
}

// closedRes is a reservation closed while a reserve read the totals.
type closedRes struct {
	id  string
	seq int64
	r   *reservation
}

// cap is one limit that applies to a call.
type limit struct {
	scope  string // "agent" or "installation"
	key    string // per_day, per_month, per_day_tokens, per_month_tokens
	month  bool
	tokens bool
	max    float64
}

func (l *Ledger) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *Ledger) ttl() time.Duration {
	if l.TTL > 0 {
		return l.TTL
	}
	return DefaultTTL
}

// limits lists the caps of an agent's calls.
func limits(c *config.Config, agentID string) []limit {
	var out []limit
	add := func(scope string, s *config.Spend) {
		if s == nil {
			return
		}
		if s.PerDay != nil {
			out = append(out, limit{scope, "per_day", false, false, *s.PerDay})
		}
		if s.PerMonth != nil {
			out = append(out, limit{scope, "per_month", true, false, *s.PerMonth})
		}
		if s.PerDayTokens != nil {
			out = append(out, limit{scope, "per_day_tokens", false, true, float64(*s.PerDayTokens)})
		}
		if s.PerMonthTokens != nil {
			out = append(out, limit{scope, "per_month_tokens", true, true, float64(*s.PerMonthTokens)})
		}
	}
	add("agent", c.Agents[agentID].Spend)
	add("installation", c.Spend)
	return out
}

// periods returns the start of the UTC day and month of t, and when each
// ends.
func periods(t time.Time) (day, month, nextDay, nextMonth time.Time) {
	t = t.UTC()
	day = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	month = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	return day, month, day.AddDate(0, 0, 1), month.AddDate(0, 1, 0)
}

// Reserve answers SPEND reserve for a session of agentID.
//
// The ledger's lock is not held across the database round trip, so
// reservations (of any agents) do not wait for each other's reads: the
// totals are read unlocked, then the caps are checked and the
// reservation opened under the lock, in memory. A reservation closed
// while the totals were read (its record stored meanwhile, which the read
// may have missed) is still counted by that check (closedSince), so a
// check never counts less than what the ledger and the reservations hold
// together; at worst it counts a call twice (pessimistic).
func (l *Ledger) Reserve(ctx context.Context, agentID, sessionID string, req rpc.SpendReq) (rpc.SpendResp, error) {
	cfg := l.Config()
	caps := limits(cfg, agentID)
	if len(caps) == 0 {
		return rpc.SpendResp{Allowed: true}, nil
	}
	now := l.now()
	day, month, _, _ := periods(now)

	l.mu.Lock()
	if err := l.loadAllowances(ctx, now); err != nil {
		l.mu.Unlock()
		return rpc.SpendResp{}, err
	}
	ids := l.expire(now)
	since := l.seq
	if l.reading == nil {
		l.reading = map[int64]int{}
	}
	l.reading[since]++
	l.mu.Unlock()

	tot, err := l.Store.SpendTotals(ctx, agentID, day, month, ids)

	l.mu.Lock()
	var resp rpc.SpendResp
	var claims []notice
	if err == nil {
		resp, claims = l.decide(cfg, caps, agentID, sessionID, req, now, tot, since)
	}
	l.doneReading(since)
	l.mu.Unlock()
	if err != nil {
		return rpc.SpendResp{}, fmt.Errorf("spend caps: %w", err)
	}
	for _, n := range claims {
		if first, err := l.Store.ClaimSpendNotice(ctx, n.key, now); err != nil {
			// Better a notice twice than none: send it.
			l.Log.Warn("spend notice not recorded", "agent_id", agentID, "cap", n.cap, "error", err)
		} else if !first {
			continue // sent before this choird started
		}
		if l.Notify != nil {
			go l.Notify(agentID, n.text)
		}
	}
	return resp, nil
}

// notice is a warn_at notice to claim and send.
type notice struct{ key, cap, text string }

// decide checks the caps against tot (read after the reservation count
// was since) and the reservations, and opens the call's reservation when
// they allow it. l.mu is held.
func (l *Ledger) decide(cfg *config.Config, caps []limit, agentID, sessionID string, req rpc.SpendReq, now time.Time,
	tot store.Totals, since int64) (rpc.SpendResp, []notice) {
	currency := cfg.Spend.CurrencyOrDefault()
	worstTokens := req.PromptTokens + req.MaxOutputTokens
	worstCost := cfg.Models[req.Model].Price.Cost(req.PromptTokens, 0, req.MaxOutputTokens)
	day, month, nextDay, nextMonth := periods(now)
	stored := make(map[string]bool, len(tot.Stored))
	for _, id := range tot.Stored {
		stored[id] = true
		l.close(id) // counted in the totals now
	}
	var openAgent, openAll store.Spent
	add := func(r *reservation) {
		openAll.Cost += r.cost
		openAll.Tokens += r.tokens
		if r.agent == agentID {
			openAgent.Cost += r.cost
			openAgent.Tokens += r.tokens
		}
	}
	for _, r := range l.open {
		add(r)
	}
	for _, c := range l.closed {
		if c.seq > since && !stored[c.id] {
			add(c.r) // closed while tot was read: its record may not be in tot
		}
	}
	var notices []notice
	for _, c := range caps {
		spent := pick(tot, c, openAgent, openAll)
		worst := worstCost
		if c.tokens {
			worst = float64(worstTokens)
		}
		max := c.max + l.allowed(agentID, c.tokens, now)
		reset := nextDay
		if c.month {
			reset = nextMonth
		}
		if spent+worst > max || spent >= max {
			msg := refusal(agentID, c, spent, worst, max, currency, reset)
			l.Log.Warn("model call refused by a spend cap", "agent_id", agentID, "session_id", sessionID,
				"cap", c.scope+" "+c.key, "spent", spent, "worst_case", worst, "cap_value", max)
			return rpc.SpendResp{Allowed: false, Cap: c.scope + " " + c.key, Message: msg}, nil
		}
		warnAt := cfg.Spend.WarnAtOrDefault()
		wkey := c.scope + "|" + c.key + "|" + agentScope(c, agentID) + "|" + day.Format(time.DateOnly)
		if c.month {
			wkey = c.scope + "|" + c.key + "|" + agentScope(c, agentID) + "|" + month.Format("2006-01")
		}
		if max > 0 && spent+worst >= warnAt*max && !l.warned[wkey] {
			if l.warned == nil {
				l.warned = map[string]bool{}
			}
			l.warned[wkey] = true
			notices = append(notices, notice{key: wkey, cap: c.scope + " " + c.key,
				text: fmt.Sprintf("Spend notice: %s has used %s of its %s (%s, %.0f%%). It resets %s.",
					who(c, agentID), amount(spent+worst, c.tokens, currency), capName(c), amount(max, c.tokens, currency),
					100*(spent+worst)/max, reset.Format("2006-01-02 15:04 UTC"))})
		}
	}
	if l.open == nil {
		l.open = map[string]*reservation{}
	}
	l.open[req.CallID] = &reservation{agent: agentID, session: sessionID, cost: worstCost, tokens: worstTokens, expires: now.Add(l.ttl())}
	return rpc.SpendResp{Allowed: true}, notices
}

// close ends a reservation (its record is in the ledger, or will never
// come). While a reserve reads the totals, it is kept in closed for that
// reserve to count. l.mu is held.
func (l *Ledger) close(id string) {
	r := l.open[id]
	if r == nil {
		return
	}
	delete(l.open, id)
	l.seq++
	if len(l.reading) > 0 {
		l.closed = append(l.closed, closedRes{id: id, seq: l.seq, r: r})
	}
}

// doneReading ends a reserve's read begun at since, and forgets the
// closed reservations no read still under way needs. l.mu is held.
func (l *Ledger) doneReading(since int64) {
	if l.reading[since]--; l.reading[since] <= 0 {
		delete(l.reading, since)
	}
	oldest := int64(math.MaxInt64)
	for s := range l.reading {
		oldest = min(oldest, s)
	}
	keep := l.closed[:0]
	for _, c := range l.closed {
		if c.seq > oldest {
			keep = append(keep, c)
		}
	}
	clear(l.closed[len(keep):])
	l.closed = keep
}

// Settle answers SPEND settle: the reservation shrinks (or grows) to what
// the call used, and waits for its record; a record that will not come
// with the log (Unreplicated) is stored here, and its reservation closed.
func (l *Ledger) Settle(ctx context.Context, agentID, sessionID string, req rpc.SpendReq) error {
	rec := req.Record
	l.mu.Lock()
	if r := l.open[req.CallID]; r != nil && r.agent == agentID && r.session == sessionID {
		r.cost, r.tokens, r.settled = rec.Cost, rec.Tokens(), true
	}
	l.mu.Unlock()
	if !req.Unreplicated {
		return nil
	}
	lane := "edge"
	if rec.Job != "" {
		lane = "core"
	}
	return l.Record(ctx, store.CallRow{SessionID: sessionID, CallID: req.CallID, AgentID: agentID, At: l.now(),
		Lane: lane, Job: rec.Job, Purpose: rec.Purpose, Model: rec.Model, ProviderModel: rec.ProviderModel, Attempt: rec.Attempt,
		PromptTokens: rec.PromptTokens, CompletionTokens: rec.CompletionTokens, CachedTokens: rec.CachedTokens,
		Cost: rec.Cost, CostSource: rec.CostSource, Currency: rec.Currency, LatencyMS: rec.LatencyMS, Outcome: rec.Outcome, Estimated: rec.Estimated})
}

// Record stores a call's record that does not come with a session's log
// (a settle's unreplicated record, choird's own embedding calls) and
// closes its reservation.
func (l *Ledger) Record(ctx context.Context, row store.CallRow) error {
	if _, err := l.Store.InsertCall(ctx, row); err != nil {
		return err
	}
	l.mu.Lock()
	l.close(row.CallID)
	l.mu.Unlock()
	return nil
}

// Allow records a one-off raise of an agent's caps until a time: amount
// more in each of the caps (the agent's and the installation's) that
// bound its calls, in the currency or in tokens.
func (l *Ledger) Allow(ctx context.Context, a store.Allowance) error {
	if err := l.Store.AddAllowance(ctx, a); err != nil {
		return err
	}
	l.mu.Lock()
	l.loaded = false
	l.mu.Unlock()
	l.Log.Info("spend allowance granted", "agent_id", a.AgentID, "amount", a.Amount, "unit", a.Unit,
		"until", a.Until.UTC().Format(time.RFC3339), "granted_by", a.GrantedBy)
	return nil
}

// Open returns the number of open reservations (for tests and status).
func (l *Ledger) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.open)
}

// Today is an agent's spend this UTC day against its tightest daily cap,
// one line for status: "" when no daily cap applies.
func (l *Ledger) Today(ctx context.Context, agentID string) (string, error) {
	cfg := l.Config()
	var daily []limit
	for _, c := range limits(cfg, agentID) {
		if !c.month {
			daily = append(daily, c)
		}
	}
	if len(daily) == 0 {
		return "", nil
	}
	now := l.now()
	day, month, nextDay, _ := periods(now)
	tot, err := l.Store.SpendTotals(ctx, agentID, day, month, nil)
	if err != nil {
		return "", err
	}
	l.mu.Lock()
	allowC, allowT := l.allowed(agentID, false, now), l.allowed(agentID, true, now)
	l.mu.Unlock()
	currency := cfg.Spend.CurrencyOrDefault()
	var parts []string
	for _, c := range daily {
		spent := pick(tot, c, store.Spent{}, store.Spent{})
		max := c.max + allowC
		if c.tokens {
			max = c.max + allowT
		}
		parts = append(parts, fmt.Sprintf("%s of %s (%s)", amount(spent, c.tokens, currency), amount(max, c.tokens, currency), capName(c)))
	}
	sort.Strings(parts)
	line := "today " + parts[0]
	for _, p := range parts[1:] {
		line += "; " + p
	}
	return line + ", resets " + nextDay.Format("2006-01-02 15:04 UTC"), nil
}

// loadAllowances reads the running raises once (again after Allow).
func (l *Ledger) loadAllowances(ctx context.Context, now time.Time) error {
	if l.loaded {
		return nil
	}
	a, err := l.Store.Allowances(ctx, now)
	if err != nil {
		return fmt.Errorf("spend caps: %w", err)
	}
	l.allow, l.loaded = a, true
	return nil
}

// allowed sums an agent's raises running at now in a unit.
func (l *Ledger) allowed(agentID string, tokens bool, now time.Time) float64 {
	var sum float64
	for _, a := range l.allow {
		if a.AgentID == agentID && (a.Unit == "tokens") == tokens && a.Until.After(now) {
			sum += a.Amount
		}
	}
	return sum
}

// expire drops the reservations past their time and returns the ids of
// the others.
func (l *Ledger) expire(now time.Time) []string {
	ids := make([]string, 0, len(l.open))
	for id, r := range l.open {
		if now.After(r.expires) {
			l.Log.Warn("spend reservation expired without its record", "agent_id", r.agent, "session_id", r.session, "call_id", id)
			l.close(id)
			continue
		}
		ids = append(ids, id)
	}
	return ids
}

func pick(t store.Totals, c limit, openAgent, openAll store.Spent) float64 {
	var s, o store.Spent
	switch {
	case c.scope == "agent" && !c.month:
		s, o = t.AgentDay, openAgent
	case c.scope == "agent":
		s, o = t.AgentMonth, openAgent
	case !c.month:
		s, o = t.AllDay, openAll
	default:
		s, o = t.AllMonth, openAll
	}
	if c.tokens {
		return float64(s.Tokens + o.Tokens)
	}
	return s.Cost + o.Cost
}

func agentScope(c limit, agentID string) string {
	if c.scope == "agent" {
		return agentID
	}
	return "*"
}

func who(c limit, agentID string) string {
	if c.scope == "agent" {
		return "agent " + agentID
	}
	return "the installation"
}

func capName(c limit) string {
	name := "daily cap"
	if c.month {
		name = "monthly cap"
	}
	if c.tokens {
		name += " in tokens"
	}
	return name
}

func amount(x float64, tokens bool, currency string) string {
	if tokens {
		return strconv.FormatInt(int64(math.Round(x)), 10) + " tokens"
	}
	return strconv.FormatFloat(x, 'f', 2, 64) + " " + currency
}

// refusal says which cap, what was spent, when it resets and how to raise
// it.
func refusal(agentID string, c limit, spent, worst, max float64, currency string, reset time.Time) string {
	path := "spend." + c.key
	if c.scope == "agent" {
		path = "agents." + agentID + ".spend." + c.key
	}
	unit := ""
	if c.tokens {
		unit = " --tokens"
	}
	return fmt.Sprintf("%s's %s of %s is reached: %s spent or reserved, and this call may use up to %s. "+
		"It resets %s. An admin can raise it with `choirctl usage allow %s <amount>%s --until <time>`, or in config.json (%s) then `choirctl config load` and `choirctl config apply`. "+
		"The session goes on: commands still work.",
		who(c, agentID), capName(c), amount(max, c.tokens, currency), amount(spent, c.tokens, currency),
		amount(worst, c.tokens, currency), reset.Format("2006-01-02 15:04 UTC"), agentID, unit, path)
}
