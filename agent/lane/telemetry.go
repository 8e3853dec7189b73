package lane

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"choir/internal/openai"
	"choir/internal/rpc"
)

// LLM call telemetry (§22.1): every model call of a lane, its turns, its
// compactions and the session summary (the edge's), is logged as one "llm call" record (model, tokens, latency,
// lane, outcome); a turn's call also puts its usage and latency in the
// ModelOutput event that records its reply, which choird stores. The
// session id comes with Config.Log.

// Keys and values of the "llm call" record.
const (
	msgLLMCall           = "llm call"
	keyModel             = "model"
	keyPurpose           = "purpose" // turn, compaction or summary
	keyPromptTokens      = "prompt_tokens"
	keyCompletionTokens  = "completion_tokens"
	keyTotalTokens       = "total_tokens"
	keyEstimated         = "estimated" // the provider reported no usage
	keyLatency           = "latency_ms"
	keyOutcome           = "outcome" // ok, or an error code
	purposeTurn          = "turn"
	purposeCompaction    = "compaction"
	purposeSummary       = "summary"
	outcomeOK            = "ok"
	outcomeTimeout       = "timeout"
	outcomeCancelled     = "cancelled"
	outcomeModelError    = "model_error"
	outcomeModelErrorPre = "model_"
)

// callUsage is the token usage of a ModelOutput payload: as the provider
// reported it, or (estimated) a count of a token per four bytes; Total is
// what counted against total_session_tokens.
type callUsage struct {
	Completion int64 `json:"completion_tokens"`
	Estimated  bool  `json:"estimated,omitempty"`
	Prompt     int64 `json:"prompt_tokens"`
	Total      int64 `json:"total_tokens"`
}

// meter counts one lane's model calls and keeps the usage and latency of
// its last turn call for the ModelOutput that records the reply.
type meter struct {
	mu     sync.Mutex
	tokens int64 // every call of the lane, compactions included
	calls  int64
	last   *openai.ChatResponse
	usage  callUsage
	took   time.Duration
}

// used is the tokens the lane's calls used so far.
func (m *meter) used() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tokens
}

// forOutput returns the usage and latency of resp when it is the lane's
// last turn call, else nothing.
func (m *meter) forOutput(resp *openai.ChatResponse) (*callUsage, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if resp == nil || resp != m.last {
		return nil, 0
	}
	u := m.usage
	return &u, m.took.Milliseconds()
}

// observe ends one model call: it counts the tokens against the session
// and the lane, keeps a turn call's figures for its ModelOutput, and logs
// the "llm call" record unless the model client logged each attempt
// already (CallInfo.Logged; callinfo.go).
func (a *actor) observe(info *CallInfo, req openai.ChatRequest, resp *openai.ChatResponse, err error, took time.Duration) {
	purpose := info.Purpose
	var u callUsage
	var cached int64
	if resp != nil {
		u = callUsage{Prompt: int64(resp.Usage.PromptTokens), Completion: int64(resp.Usage.CompletionTokens), Total: usage(req, resp)}
		u.Estimated = resp.Usage.TotalTokens <= 0 && resp.Usage.PromptTokens+resp.Usage.CompletionTokens <= 0
		cached = int64(resp.Usage.PromptTokensDetails.CachedTokens)
		a.l.session.addTokens(u.Total)
	}
	a.meter.mu.Lock()
	a.meter.tokens += u.Total
	a.meter.calls++
	if purpose == purposeTurn {
		a.meter.last, a.meter.usage, a.meter.took = resp, u, took
	}
	a.meter.mu.Unlock()
	if info.logged.Load() > 0 {
		return
	}
	LogCall(a.l.cfg.Log, a.owner, rpc.CallRecord{Purpose: purpose, ProviderModel: req.Model,
		PromptTokens: u.Prompt, CompletionTokens: u.Total - u.Prompt, CachedTokens: cached, Estimated: u.Estimated,
		LatencyMS: took.Milliseconds(), Outcome: outcome(err), CostSource: rpc.CostNone}, 0, err)
}

// outcome names how a call ended: ok, or an error code (timeout,
// cancelled, model_<kind> for a provider's answer, model_error).
func outcome(err error) string {
	var api *openai.APIError
	switch {
	case err == nil:
		return outcomeOK
	case errors.Is(err, context.DeadlineExceeded):
		return outcomeTimeout
	case errors.Is(err, context.Canceled):
		return outcomeCancelled
	case errors.As(err, &api):
		switch api.Kind {
		case openai.KindTimeout:
			return outcomeTimeout
		case openai.KindCanceled:
			return outcomeCancelled
		}
		code := strings.ReplaceAll(api.Kind.String(), " ", "_")
		if api.Status != 0 {
			code += "_" + strconv.Itoa(api.Status)
		}
		return outcomeModelErrorPre + code
	}
	return outcomeModelError
}

// used is what the session has spent so far: tokens of every model call
// and tool calls of every lane.
func (s *session) used() (tokens, tools int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokens, s.tools
}
