package metrics

import (
	"context"
	"errors"
	"net/http"
)

// choird's families, registered in Default. Those whose values live
// elsewhere (agents by state, sessions, approvals pending, Telegram
// updates, heartbeat age) are function families that choird registers at
// start (choird/metrics.go). Label values are choird's own names (agent
// ids, configured model names, verbs, codes) or, for values an agent
// reports, checked against a pattern and the configuration first: never a
// secret, a message's text or a user id.
var (
	// RPCRequests counts agent protocol calls of the verbs choird serves,
	// refused or answered (rpc.Server.Observe).
	RPCRequests = Default.Counter("choir_rpc_requests_total",
		"Agent protocol requests to choird, by verb and outcome (ok or the error code answered, refusals included).", "verb", "code")
	// RPCSeconds times them.
	RPCSeconds = Default.Histogram("choir_rpc_request_duration_seconds",
		"Time choird took to handle an agent protocol request, by verb.", nil, "verb")
	// AdminRequests counts choirctl's requests on the admin socket.
	AdminRequests = Default.Counter("choir_admin_requests_total",
		"Admin API requests (choirctl), by route pattern and HTTP status.", "route", "code")

	// HeartbeatsReceived counts heartbeats that reached a running session.
	HeartbeatsReceived = Default.Counter("choir_heartbeats_received_total",
		"Heartbeats received from agents, by agent.", "agent")
	// HeartbeatsMissed counts sessions declared crashed for lack of heartbeats.
	HeartbeatsMissed = Default.Counter("choir_heartbeats_missed_total",
		"Sessions declared crashed because no heartbeat arrived within the crash detection threshold, by agent.", "agent")
	// SessionsEnded counts ended sessions by how they ended.
	SessionsEnded = Default.Counter("choir_sessions_ended_total",
		"Agent sessions ended, by status (stopped, crashed, ...).", "status")

	// LLMCalls counts model call attempts as the usage ledger stored them
	// (each fallback attempt is one, embeddings too).
	LLMCalls = Default.Counter("choir_llm_calls_total",
		"Model call attempts stored in the usage ledger, by agent (\"-\" for choird's own), model and purpose (turn, compaction, summary, embedding, other).", "agent", "model", "purpose")
	// LLMErrors counts those whose outcome was not ok.
	LLMErrors = Default.Counter("choir_llm_call_errors_total",
		"Model call attempts stored with an outcome other than ok, by agent, model and purpose.", "agent", "model", "purpose")
	// LLMFallbacks counts the attempts made on a fallback model.
	LLMFallbacks = Default.Counter("choir_llm_fallback_attempts_total",
		"Model call attempts made on a fallback model after the one before failed, by agent and the fallback model.", "agent", "model")
	// LLMTokens counts their tokens.
	LLMTokens = Default.Counter("choir_llm_tokens_total",
		"Tokens of stored model call attempts, by agent, model and kind (prompt, completion; cached is the part of prompt served from a cache).", "agent", "model", "kind")
	// LLMCost sums their cost.
	LLMCost = Default.Counter("choir_llm_cost_total",
		"Cost of stored model call attempts in the installation's currency (spend.currency), by agent and model; a model without a price adds nothing.", "agent", "model")
	// LLMSeconds times them.
	LLMSeconds = Default.Histogram("choir_llm_call_duration_seconds",
		"Latency of stored model call attempts, by agent and model.", nil, "agent", "model")

	// ToolCalls counts tool results the agents committed.
	ToolCalls = Default.Counter("choir_tool_calls_total",
		"Tool calls finished (replicated ToolResultCommitted events), by tool.", "tool")
	// ToolErrors counts those whose status is error.
	ToolErrors = Default.Counter("choir_tool_call_errors_total",
		"Tool calls that finished with an error, by tool.", "tool")
	// ToolSeconds times them.
	ToolSeconds = Default.Histogram("choir_tool_call_duration_seconds",
		"How long tool calls ran, by tool.", nil, "tool")

	// TelegramRequests counts Bot API calls.
	TelegramRequests = Default.Counter("choir_telegram_requests_total",
		"Telegram Bot API calls, by method and HTTP status (\"error\" when no answer came); 429 is rate limiting.", "method", "code")

	// ImageBuildSeconds times image builds.
	ImageBuildSeconds = Default.Histogram("choir_image_build_duration_seconds",
		"Duration of agent image builds, by outcome.",
		[]float64{1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800}, "outcome")
	// AgentStartSeconds times agent starts up to INIT_HELLO.
	AgentStartSeconds = Default.Histogram("choir_agent_start_duration_seconds",
		"Duration of agent starts, from the request to INIT_HELLO accepted, by outcome.",
		[]float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}, "outcome")

	// PostgresErrors counts failed Postgres operations.
	PostgresErrors = Default.Counter("choir_postgres_errors_total",
		"Failed Postgres queries, batches and connection acquisitions, by SQLSTATE class (or \"connection\").", "class")
	// EngineErrors counts failed Docker Engine API requests.
	EngineErrors = Default.Counter("choir_engine_errors_total",
		"Docker Engine API requests that got no answer (unreachable) or a 5xx answer (server).", "kind")
)

// Observe returns a RoundTripper that sends through rt and reports every
// round trip to f, answer or error, before returning it.
func Observe(rt http.RoundTripper, f func(*http.Request, *http.Response, error)) http.RoundTripper {
	return observer{rt: rt, f: f}
}

type observer struct {
	rt http.RoundTripper
	f  func(*http.Request, *http.Response, error)
}

func (o observer) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := o.rt.RoundTrip(req)
	o.f(req, resp, err)
	return resp, err
}

// CountEngineErrors counts a Docker Engine API round trip in EngineErrors
// when it got no answer (not counting a request its caller cancelled) or
// a 5xx answer. A 4xx is the engine's answer about the request (a missing
// container, a conflict) and is not counted.
func CountEngineErrors(req *http.Request, resp *http.Response, err error) {
	switch {
	case err != nil:
		if errors.Is(err, context.Canceled) || req.Context().Err() != nil {
			return
		}
		EngineErrors.With("unreachable").Inc()
	case resp.StatusCode >= 500:
		EngineErrors.With("server").Inc()
	}
}
