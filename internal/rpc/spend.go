package rpc

import (
	"context"
	"fmt"
	"net/http"
)

// VerbSpend asks choird's ledger before a model call (issue 23): "reserve"
// the call's worst case against the caps of the agent and of the
// installation, then "settle" it with the call's record. A verb §12.5
// does not name; choird serves it when its handler implements
// SpendHandler, and a 404 means an older choird with no caps.
const VerbSpend Verb = "SPEND"

// Spend operations.
const (
	SpendReserve = "reserve"
	SpendSettle  = "settle"
)

// ModelCallEvent is the type of the committed event that records one model
// call attempt; its payload is a CallRecord. choird writes it to the usage
// ledger in the transaction that stores its heartbeat's batch.
const ModelCallEvent = "ModelCall"

// Outcomes of a call attempt besides the lane's error codes.
const (
	OutcomeOK      = "ok"
	OutcomeRefused = "refused_cap"
)

// Where a record's cost came from.
const (
	CostProvider = "provider" // the answer's usage.cost
	CostPrice    = "price"    // models.<name>.price
	CostNone     = "none"     // the model has no price: tokens only
)

// SpendReq is SPEND's payload. A reserve names the call (CallID, unique in
// the session), its configured model, its lane and purpose, the prompt's
// estimated tokens and the most it may answer (MaxOutputTokens); a settle
// carries the call's Record, and Unreplicated when the record could not be
// committed to the session's log (the session summary, made after the
// arbiter stopped): choird then writes it to the ledger itself.
type SpendReq struct {
	Op              string      `json:"op"`
	CallID          string      `json:"call_id"`
	Model           string      `json:"model,omitempty"`
	Lane            string      `json:"lane,omitempty"`
	Purpose         string      `json:"purpose,omitempty"`
	PromptTokens    int64       `json:"prompt_tokens,omitempty"`
	MaxOutputTokens int64       `json:"max_output_tokens,omitempty"`
	Record          *CallRecord `json:"record,omitempty"`
	Unreplicated    bool        `json:"unreplicated,omitempty"`
}

// SpendResp answers a reserve: Allowed, or refused with Message saying
// which cap, what was spent, when it resets and the admin command that
// raises it; Cap names the cap ("agent per_day", "installation
// per_month_tokens"…). Warning is set once when a cap passes warn_at.
type SpendResp struct {
	Allowed bool   `json:"allowed"`
	Cap     string `json:"cap,omitempty"`
	Message string `json:"message,omitempty"`
}

// CallRecord is one model call attempt as the ledger and the "llm call"
// telemetry see it: the payload of a ModelCall event. Members are in
// sorted order of their JSON names (canonical when marshalled).
type CallRecord struct {
	Attempt          int     `json:"attempt,omitempty"` // 0 for the first model, n for the n-th fallback
	CachedTokens     int64   `json:"cached_tokens"`
	CallID           string  `json:"call_id"`
	CompletionTokens int64   `json:"completion_tokens"`
	Cost             float64 `json:"cost"`
	CostSource       string  `json:"cost_source"`
	Currency         string  `json:"currency,omitempty"`
	Estimated        bool    `json:"estimated,omitempty"` // no usage reported: a token per four bytes
	Job              string  `json:"job,omitempty"`
	LatencyMS        int64   `json:"latency_ms"`
	Model            string  `json:"model"` // the configured name
	Outcome          string  `json:"outcome"`
	PromptTokens     int64   `json:"prompt_tokens"`
	ProviderModel    string  `json:"provider_model,omitempty"` // the model id sent
	Purpose          string  `json:"purpose,omitempty"`
	ReservedTokens   int64   `json:"reserved_tokens,omitempty"` // what the reserve held: estimate + max output
}

// Tokens is what the call counts against a cap in tokens.
func (r CallRecord) Tokens() int64 { return r.PromptTokens + r.CompletionTokens }

func (r SpendReq) check() error {
	if r.Op != SpendReserve && r.Op != SpendSettle {
		return Errorf(http.StatusBadRequest, CodeBadRequest, "op: %q: want %q or %q", r.Op, SpendReserve, SpendSettle)
	}
	for name, v := range map[string]string{"call_id": r.CallID, "model": r.Model, "lane": r.Lane, "purpose": r.Purpose} {
		if len(v) > MaxIDBytes {
			return Errorf(http.StatusBadRequest, CodeBadRequest, "%s: %d bytes, at most %d", name, len(v), MaxIDBytes)
		}
	}
	if r.CallID == "" {
		return Errorf(http.StatusBadRequest, CodeBadRequest, "call_id: empty")
	}
	if r.PromptTokens < 0 || r.MaxOutputTokens < 0 || r.PromptTokens > 1<<40 || r.MaxOutputTokens > 1<<40 {
		return Errorf(http.StatusBadRequest, CodeBadRequest, "prompt_tokens and max_output_tokens: want 0 to 2^40")
	}
	if r.Op == SpendSettle {
		if r.Record == nil {
			return Errorf(http.StatusBadRequest, CodeBadRequest, "record: a settle carries the call's record")
		}
		if err := r.Record.check(); err != nil {
			return err
		}
	}
	return nil
}

func (r *CallRecord) check() error {
	for name, v := range map[string]string{"call_id": r.CallID, "model": r.Model, "job": r.Job, "purpose": r.Purpose,
		"outcome": r.Outcome, "cost_source": r.CostSource, "currency": r.Currency, "provider_model": r.ProviderModel} {
		if len(v) > MaxIDBytes {
			return Errorf(http.StatusBadRequest, CodeBadRequest, "record.%s: %d bytes, at most %d", name, len(v), MaxIDBytes)
		}
	}
	for name, v := range map[string]int64{"prompt_tokens": r.PromptTokens, "completion_tokens": r.CompletionTokens,
		"cached_tokens": r.CachedTokens, "latency_ms": r.LatencyMS, "reserved_tokens": r.ReservedTokens} {
		if v < 0 || v > 1<<40 {
			return Errorf(http.StatusBadRequest, CodeBadRequest, "record.%s: %d: want 0 to 2^40", name, v)
		}
	}
	if r.Cost < 0 || r.Cost > 1e9 || r.Cost != r.Cost {
		return Errorf(http.StatusBadRequest, CodeBadRequest, "record.cost: %v: want 0 to 1e9", r.Cost)
	}
	return nil
}

// SpendHandler is the part of choird's handler that serves SPEND.
type SpendHandler interface {
	HandleSpend(ctx context.Context, req SpendReq) (SpendResp, error)
}

// Spender is the agent's side of SPEND; *Client implements it.
type Spender interface {
	Spend(ctx context.Context, req SpendReq) (SpendResp, error)
}

var _ Spender = (*Client)(nil)

// Spend calls SPEND.
func (c *Client) Spend(ctx context.Context, req SpendReq) (SpendResp, error) {
	resp, err := call[SpendResp](ctx, c, VerbSpend, req)
	if err != nil {
		return resp, fmt.Errorf("spend %s: %w", req.Op, err)
	}
	return resp, nil
}
