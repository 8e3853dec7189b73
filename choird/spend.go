package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"choir/choird/control"
	"choir/choird/ledger"
	"choir/choird/lifecycle"
	"choir/choird/store"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/embed"
	"choir/internal/rpc"
)

// spendPlane serves SPEND (choird/ledger) beside the lifecycle's handler
// of the other verbs.
type spendPlane struct {
	rpc.ControlPlaneHandler
	ledger *ledger.Ledger
	agents *lifecycle.Manager

	mu      sync.Mutex
	agentOf map[string]string // session → agent, learnt once
}

var _ rpc.SpendHandler = (*spendPlane)(nil)

// newLedger builds the spend room on the running config and the store.
func newLedger(plane *control.Plane, st *store.Store, agents *lifecycle.Manager, log *slog.Logger) *ledger.Ledger {
	l := &ledger.Ledger{Store: st, Log: log, Config: func() *config.Config { return plane.Config().Config }}
	l.Notify = func(agentID, text string) { spendNotice(plane, agents, agentID, text, log) }
	return l
}

// spendNotice tells the agent's DM and every admin DM.
func spendNotice(plane *control.Plane, agents *lifecycle.Manager, agentID, text string, log *slog.Logger) {
	notifyDM(plane, agents, agentID, text, true, "spend notice", log)
}

func (p *spendPlane) HandleSpend(ctx context.Context, req rpc.SpendReq) (rpc.SpendResp, error) {
	call, _ := rpc.CallFrom(ctx)
	agentID, ok := p.agent(call.SessionID)
	if !ok {
		return rpc.SpendResp{}, rpc.Errorf(http.StatusConflict, rpc.CodeFailedPrecondition, "session %s is not running", call.SessionID)
	}
	switch req.Op {
	case rpc.SpendReserve:
		resp, err := p.ledger.Reserve(ctx, agentID, call.SessionID, req)
		if err != nil {
			return resp, rpc.Errorf(http.StatusServiceUnavailable, rpc.CodeUnavailable, "%v", err)
		}
		return resp, nil
	default:
		if err := p.ledger.Settle(ctx, agentID, call.SessionID, req); err != nil {
			return rpc.SpendResp{}, rpc.Errorf(http.StatusServiceUnavailable, rpc.CodeUnavailable, "%v", err)
		}
		return rpc.SpendResp{Allowed: true}, nil
	}
}

// agent names the agent of a running session.
func (p *spendPlane) agent(sessionID string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if id, ok := p.agentOf[sessionID]; ok {
		return id, true
	}
	if id, ok := p.agents.SessionOf(sessionID); ok { // run sessions too
		return id, true
	}
	for _, st := range p.agents.List() {
		if st.SessionID == sessionID && sessionID != "" {
			if p.agentOf == nil {
				p.agentOf = map[string]string{}
			}
			p.agentOf[sessionID] = st.AgentID
			return st.AgentID, true
		}
	}
	return "", false
}

// usageView is the ledger as the operator sees it (control.Usage).
type usageView struct {
	st     *store.Store
	ledger *ledger.Ledger
	config func() *config.Config
}

var _ control.Usage = usageView{}

func (u usageView) Report(ctx context.Context, q ctl.UsageQuery) (*ctl.UsageReport, error) {
	rows, err := u.st.Usage(ctx, store.UsageQuery{Agent: q.Agent, Since: q.Since, By: q.By})
	if err != nil {
		return nil, err
	}
	c := u.config()
	rep := &ctl.UsageReport{By: q.By, Currency: c.Spend.CurrencyOrDefault(), Rows: []ctl.UsageRow{}, Today: map[string]string{}}
	if rep.By == "" {
		rep.By = "agent"
	}
	for _, r := range rows {
		rep.Rows = append(rep.Rows, ctl.UsageRow{Key: r.Key, Agent: r.Agent, Calls: r.Calls, Failed: r.Failed, PromptTokens: r.PromptTokens,
			CompletionTokens: r.CompletionTokens, CachedTokens: r.CachedTokens, Cost: r.Cost, Unpriced: r.Unpriced})
	}
	agents := []string{q.Agent}
	if q.Agent == "" {
		agents = config.SortedNames(c.Agents)
	}
	for _, a := range agents {
		if line, err := u.ledger.Today(ctx, a); err == nil && line != "" {
			rep.Today[a] = line
		}
	}
	return rep, nil
}

func (u usageView) Allow(ctx context.Context, a ctl.UsageAllow, by string) error {
	unit := "currency"
	if a.Tokens {
		unit = "tokens"
	}
	return u.ledger.Allow(ctx, store.Allowance{AgentID: a.Agent, Amount: a.Amount, Unit: unit, Until: a.Until, GrantedBy: by})
}

func (u usageView) Today(ctx context.Context, agentID string) (string, error) {
	return u.ledger.Today(ctx, agentID)
}

// usageText answers /usage: an agent's (or, for "", every agent's) calls
// and cost this UTC month, by model for one agent, and today's spend
// against the daily caps.
func usageText(ctx context.Context, plane *control.Plane, agentID string) (string, error) {
	now := time.Now().UTC()
	q := ctl.UsageQuery{Agent: agentID, Since: time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC), By: "agent"}
	if agentID != "" {
		q.By = "model"
	}
	rep, err := plane.UsageReport(ctx, q)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Model calls since %s (UTC):\n", q.Since.Format("2006-01-02"))
	if len(rep.Rows) == 0 {
		b.WriteString("none\n")
	}
	for _, r := range rep.Rows {
		fmt.Fprintf(&b, "%s: %d calls, %d prompt (%d cached) + %d completion tokens, %.4f %s", r.Key, r.Calls,
			r.PromptTokens, r.CachedTokens, r.CompletionTokens, r.Cost, rep.Currency)
		if r.Unpriced > 0 {
			fmt.Fprintf(&b, " (%d calls unpriced)", r.Unpriced)
		}
		b.WriteString("\n")
	}
	for _, a := range slices.Sorted(maps.Keys(rep.Today)) {
		fmt.Fprintf(&b, "%s: %s\n", a, rep.Today[a])
	}
	return b.String(), nil
}

// meteredEmbedder charges each embeddings call choird makes (memory
// chunks, queries) to the usage ledger: it reserves the call's estimate
// first (a token per four bytes of the texts, no answer tokens), is
// refused at a cap like an agent's model call, then records what the call
// did. The call counts against the installation's caps, and against the
// agent's own when it embeds the query of an agent's choir.memory.query
// (the host tool's call names the session); the embedding queue's
// batches mix agents' chunks and are choird's own (agent "-"). The
// embedder reports no usage, so the tokens are estimated; the embedding
// model has a price only if config.json's models names it with one. A
// refused call fails like a failed one: the chunk is stored without a
// vector and found by text search, the query falls back to text search.
type meteredEmbedder struct {
	embed.Embedder
	ledger  *ledger.Ledger
	agentOf func(sessionID string) (string, bool) // nil: every call is choird's own
	log     *slog.Logger
}

// ErrEmbeddingRefused is an embeddings call a spend cap refused.
var ErrEmbeddingRefused = errors.New("embedding refused by a spend cap")

// meterEmbeddings wraps a remote embedder; the offline hashing one makes
// no model call and is returned as it is.
func meterEmbeddings(e embed.Embedder, l *ledger.Ledger, agentOf func(string) (string, bool), log *slog.Logger) embed.Embedder {
	if _, ok := e.(embed.Hashing); ok {
		return e
	}
	return meteredEmbedder{Embedder: e, ledger: l, agentOf: agentOf, log: log}
}

func (m meteredEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	n := 0
	for _, t := range texts {
		n += len(t)
	}
	agentID, sessionID := "-", ""
	if call, ok := rpc.CallFrom(ctx); ok && m.agentOf != nil {
		if id, ok := m.agentOf(call.SessionID); ok {
			agentID, sessionID = id, call.SessionID
		}
	}
	row := store.CallRow{SessionID: sessionID, CallID: rpc.NewRequestID(), AgentID: agentID, Purpose: "embedding",
		Model: m.Model(), ProviderModel: m.Model(), PromptTokens: int64((n + 3) / 4), Estimated: true, CostSource: rpc.CostNone}
	resp, err := m.ledger.Reserve(ctx, agentID, sessionID, rpc.SpendReq{Op: rpc.SpendReserve, CallID: row.CallID,
		Model: row.Model, Purpose: row.Purpose, PromptTokens: row.PromptTokens})
	switch {
	case err != nil:
		m.log.Warn("embedding call not made: the spend caps could not be checked", "agent_id", agentID, "texts", len(texts), "error", err.Error())
		return nil, fmt.Errorf("%w: the caps could not be checked: %v", ErrEmbeddingRefused, err)
	case !resp.Allowed:
		m.log.Warn("embedding call refused by a spend cap; the text is left to text search", "agent_id", agentID,
			"texts", len(texts), "cap", resp.Cap, "reason", resp.Message)
		return nil, fmt.Errorf("%w: %s", ErrEmbeddingRefused, resp.Message)
	}
	began := time.Now()
	v, err := m.Embedder.Embed(ctx, texts)
	row.At, row.LatencyMS, row.Outcome = time.Now(), time.Since(began).Milliseconds(), rpc.OutcomeOK
	if err != nil {
		row.Outcome, row.PromptTokens = "error", 0
	}
	if c := m.ledger.Config(); c != nil {
		if p := c.Models[row.Model].Price; p != nil && err == nil {
			row.Cost, row.CostSource, row.Currency = p.Cost(row.PromptTokens, 0, 0), rpc.CostPrice, c.Spend.CurrencyOrDefault()
		}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if rerr := m.ledger.Record(rctx, row); rerr != nil {
		m.log.Warn("embedding call not recorded in the usage ledger", "error", rerr.Error())
	}
	return v, err
}
