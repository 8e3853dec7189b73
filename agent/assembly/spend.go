package assembly

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"choir/agent/arbiter"
	"choir/agent/lane"
	"choir/agent/lock"
	"choir/agent/memory"
	"choir/internal/config"
	"choir/internal/openai"
	"choir/internal/rpc"
)

// Spend metering (issue 23). Every model call attempt goes through
// Runtime.meter, from modelClient, once per attempt (a fallback model's
// attempt is another): it asks choird's ledger to reserve the attempt's
// worst case (SPEND reserve), refuses the call when a cap would be passed,
// makes the call, then commits one rpc.CallRecord as a ModelCall event
// (replicated with the other events; choird writes it to the ledger in
// the batch's transaction), logs the §22.1 "llm call" record from it, and
// settles the reservation with it. The agent never compares anything with
// a cap: choird does.

// DefaultReserveOutputTokens is what a call reserves for its answer when
// neither the request nor the model's request template (body.max_tokens or
// body.max_completion_tokens) bounds it.
const DefaultReserveOutputTokens = 4096

// CapError is a call refused by a spend cap. Its text says which cap, what
// was spent, when it resets and the admin command that raises it.
type CapError struct {
	Cap     string
	Message string
}

func (e *CapError) Error() string { return "spend cap reached: " + e.Message }

// spendState is the runtime's view of SPEND.
type spendState struct {
	cp          rpc.Spender // nil: the control plane has no SPEND, no caps
	unsupported atomic.Bool // choird answered SPEND with 404: an older choird
}

func newSpendState(cp rpc.ControlPlane) *spendState {
	s := &spendState{}
	if sp, ok := cp.(rpc.Spender); ok {
		s.cp = sp // what SPEND carries is counts and names, never a secret
	}
	return s
}

// meter makes one attempt of a model call to the configured model name,
// with do, under the caps. ctx carries the lane's lane.CallInfo.
func (rt *Runtime) meter(ctx context.Context, name string, req openai.ChatRequest, do func(context.Context) (*openai.ChatResponse, error)) (*openai.ChatResponse, error) {
	info := lane.CallInfoFrom(ctx)
	if info == nil {
		info = &lane.CallInfo{}
	}
	d := rt.dynamic()
	rec := rpc.CallRecord{CallID: rpc.NewRequestID(), Model: name, ProviderModel: req.Model, Purpose: info.Purpose,
		Job: info.Lane.Job(), Attempt: info.Attempts(), Currency: d.Currency, CostSource: rpc.CostNone}
	prompt := promptTokens(req)
	rec.ReservedTokens = prompt + reserveOutput(req, d.Models[name])
	if err := rt.reserve(ctx, info.Lane, rec, prompt); err != nil {
		rec.ReservedTokens = 0
		var ce *CapError
		switch {
		case !errors.As(err, &ce):
			rec.Outcome = lane.Outcome(err) // cancelled or timed out while it asked
		case ce.Cap == "unknown":
			rec.Outcome = "reserve_failed" // choird could not say
		default:
			rec.Outcome = rpc.OutcomeRefused
		}
		info.Logged()
		lane.LogCall(rt.log, info.Lane, rec, 0, err)
		return nil, err
	}
	began := time.Now()
	resp, err := do(ctx)
	rec.LatencyMS = time.Since(began).Milliseconds()
	rec.Outcome = lane.Outcome(err)
	if resp != nil {
		fill(&rec, req, resp, d.Models[name].Price, prompt)
	}
	rev := rt.commitRecord(ctx, info, rec)
	info.Logged()
	lane.LogCall(rt.log, info.Lane, rec, rev, err)
	return resp, err
}

// reserve asks choird for the attempt's worst case. A control plane
// without SPEND (an older choird, a test's) has no caps; any other failure
// refuses the call, since the caps cannot be known.
func (rt *Runtime) reserve(ctx context.Context, lane lock.Owner, rec rpc.CallRecord, prompt int64) error {
	s := rt.spend
	if s == nil || s.cp == nil || s.unsupported.Load() {
		return nil
	}
	resp, err := s.cp.Spend(ctx, rpc.SpendReq{Op: rpc.SpendReserve, CallID: rec.CallID, Model: rec.Model,
		Lane: string(lane), Purpose: rec.Purpose, PromptTokens: prompt, MaxOutputTokens: rec.ReservedTokens - prompt})
	var rerr *rpc.Error
	switch {
	case errors.As(err, &rerr) && rerr.Status == http.StatusNotFound && rerr.Code == rpc.CodeUnknownVerb:
		s.unsupported.Store(true)
		rt.log.Info("choird does not serve SPEND: model calls are not capped")
		return nil
	case err != nil && ctx.Err() != nil:
		return ctx.Err() // the call was cancelled (or timed out) while it asked
	case err != nil:
		return &CapError{Cap: "unknown", Message: "the spend caps could not be checked with choird (" + err.Error() + "); try again when choird answers"}
	case !resp.Allowed:
		return &CapError{Cap: resp.Cap, Message: resp.Message}
	}
	return nil
}

// commitRecord commits the record as a ModelCall event and settles its
// reservation. When the arbiter has stopped (the session summary is made
// after the lanes end), the settle carries the record for choird to store
// itself. It returns the event's revision, 0 when not committed.
func (rt *Runtime) commitRecord(ctx context.Context, info *lane.CallInfo, rec rpc.CallRecord) int64 {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	var rev int64
	unreplicated := true
	if arb := rt.arbiter(); arb != nil {
		ev, err := arb.Record(ctx, info.Lane, rpc.ModelCallEvent, rec)
		switch {
		case err == nil:
			rev, unreplicated = ev.Rev, false
		case errors.Is(err, arbiter.ErrClosed):
		default:
			rt.log.Warn("model call record not committed", "call_id", rec.CallID, "error", err.Error())
		}
	}
	s := rt.spend
	if s == nil || s.cp == nil || s.unsupported.Load() {
		cancel()
		if unreplicated {
			rt.log.Warn("model call record neither committed nor sent to choird", "call_id", rec.CallID)
		}
		return rev
	}
	settle := func() {
		defer cancel()
		if _, err := s.cp.Spend(ctx, rpc.SpendReq{Op: rpc.SpendSettle, CallID: rec.CallID, Record: &rec, Unreplicated: unreplicated}); err != nil {
			rt.log.Warn("spend settle failed: the reservation stays until its record arrives or it expires", "call_id", rec.CallID, "error", err.Error())
		}
	}
	if unreplicated {
		settle() // the record exists nowhere else: deliver it before the session ends
	} else {
		go settle() // off the reply path; the heartbeat brings the record anyway
	}
	return rev
}

// fill sets the record's tokens and cost from the answer: the provider's
// usage (estimated as a token per four bytes when it reported none), its
// usage.cost when given, else the model's price.
func fill(rec *rpc.CallRecord, req openai.ChatRequest, resp *openai.ChatResponse, price *config.Price, prompt int64) {
	u := resp.Usage
	rec.PromptTokens, rec.CompletionTokens = int64(u.PromptTokens), int64(u.CompletionTokens)
	rec.CachedTokens = min(int64(u.PromptTokensDetails.CachedTokens), rec.PromptTokens)
	if rec.PromptTokens+rec.CompletionTokens <= 0 {
		rec.Estimated = true
		rec.PromptTokens, rec.CompletionTokens = prompt, int64(memory.MessageTokens(resp.Message()))
	}
	if resp.Model != "" {
		rec.ProviderModel = resp.Model
	}
	switch {
	case u.Cost != nil && *u.Cost >= 0:
		rec.Cost, rec.CostSource = *u.Cost, rpc.CostProvider
	case price != nil:
		rec.Cost, rec.CostSource = price.Cost(rec.PromptTokens, rec.CachedTokens, rec.CompletionTokens), rpc.CostPrice
	}
}

// promptTokens estimates a request's prompt as the lanes do: a token per
// four bytes of each message (plus framing) and of each tool's definition.
func promptTokens(req openai.ChatRequest) int64 {
	var n int
	for _, m := range req.Messages {
		n += memory.MessageTokens(m)
	}
	for _, t := range req.Tools {
		n += memory.Tokens(len(t.Name)+len(t.Description)+len(t.Parameters)) + 4
	}
	return int64(n)
}

// reserveOutput is the most the call may answer: the request's max_tokens
// or max_completion_tokens, else the model's request template's, else
// DefaultReserveOutputTokens.
func reserveOutput(req openai.ChatRequest, m config.Model) int64 {
	for _, p := range []*int{req.MaxTokens, req.MaxCompletionTokens} {
		if p != nil && *p > 0 {
			return int64(*p)
		}
	}
	if m.Request != nil {
		for _, key := range []string{"max_tokens", "max_completion_tokens"} {
			var n int64
			if raw, ok := m.Request.Body[key]; ok && json.Unmarshal(raw, &n) == nil && n > 0 {
				return n
			}
		}
	}
	return DefaultReserveOutputTokens
}
