package lane

import (
	"context"
	"log/slog"
	"sync/atomic"

	"choir/agent/lock"
	"choir/internal/logs"
	"choir/internal/rpc"
)

// CallInfo says who makes a model call and what for. A lane puts it in
// the call's context; the model client (agent/assembly's spend.go)
// reserves, records and logs every attempt under it, and marks it, so the
// lane's own telemetry (observe) logs a call only when no client did: one
// "llm call" record per attempt, built from one rpc.CallRecord.
type CallInfo struct {
	Lane    lock.Owner // edge or core:<job>
	Purpose string     // turn, compaction or summary
	logged  atomic.Int32
}

// Logged tells the lane that the model client recorded and logged an
// attempt of this call.
func (c *CallInfo) Logged() { c.logged.Add(1) }

// Attempts is how many attempts of this call were logged so far: the
// number of the next one (0 for the first model, n for the n-th fallback).
func (c *CallInfo) Attempts() int { return int(c.logged.Load()) }

type callInfoKey struct{}

// WithCallInfo returns ctx carrying info.
func WithCallInfo(ctx context.Context, info *CallInfo) context.Context {
	return context.WithValue(ctx, callInfoKey{}, info)
}

// CallInfoFrom returns the CallInfo of a call's context, or nil.
func CallInfoFrom(ctx context.Context) *CallInfo {
	info, _ := ctx.Value(callInfoKey{}).(*CallInfo)
	return info
}

// metered marks ctx with this lane's call of purpose.
func (a *actor) metered(ctx context.Context, purpose string) (context.Context, *CallInfo) {
	info := &CallInfo{Lane: a.owner, Purpose: purpose}
	return WithCallInfo(ctx, info), info
}

// Keys of the "llm call" record beyond telemetry.go's.
const (
	keyCachedTokens = "cached_tokens"
	keyCost         = "cost"
	keyCurrency     = "currency"
	keyCostSource   = "cost_source"
	keyCallID       = "call_id"
	keyAttempt      = "attempt"
	keyRev          = "rev"
)

// LogCall writes the §22.1 "llm call" record of one attempt: the same
// rpc.CallRecord the ledger stores (rev is its ModelCall event's revision,
// 0 when it was not committed). err is the attempt's error, if any.
func LogCall(log *slog.Logger, lane lock.Owner, r rpc.CallRecord, rev int64, err error) {
	level := slog.LevelInfo
	if err != nil || r.Outcome != rpc.OutcomeOK {
		level = slog.LevelWarn
	}
	if log == nil || !log.Enabled(context.Background(), level) {
		return
	}
	attrs := []any{logs.KeyLane, string(lane), keyPurpose, r.Purpose, keyModel, r.ProviderModel,
		keyPromptTokens, r.PromptTokens, keyCompletionTokens, r.CompletionTokens, keyTotalTokens, r.Tokens(),
		keyCachedTokens, r.CachedTokens, keyLatency, r.LatencyMS, keyOutcome, r.Outcome}
	if r.CostSource != rpc.CostNone && r.CostSource != "" {
		attrs = append(attrs, keyCost, r.Cost, keyCurrency, r.Currency, keyCostSource, r.CostSource)
	}
	if r.CallID != "" {
		attrs = append(attrs, keyCallID, r.CallID)
	}
	if r.Attempt > 0 {
		attrs = append(attrs, keyAttempt, r.Attempt)
	}
	if rev > 0 {
		attrs = append(attrs, keyRev, rev)
	}
	if r.Estimated {
		attrs = append(attrs, keyEstimated, true)
	}
	if err != nil {
		attrs = append(attrs, logs.KeyError, err.Error())
	}
	log.Log(context.Background(), level, msgLLMCall, attrs...)
}

// Outcome names how a call attempt ended (ok, timeout, cancelled,
// model_<kind>_<status>, model_error), for the model client's records.
func Outcome(err error) string { return outcome(err) }
