package main

import (
	"choir/choird/store"
	"choir/internal/config"
	"choir/internal/metrics"
	"choir/internal/rpc"
)

// callCounter counts the choir_llm_* families from the usage ledger's
// rows, as store.Store.CallsStored tells them once committed: the rows of
// a heartbeat's ModelCall events, a settle's unreplicated record (the
// session summary) and choird's own embedding calls. So the counters,
// `choirctl usage` and the agent's "llm call" log line all come from the
// same record of each attempt, and a resend counts nothing twice (the
// ledger adds no row for it).
//
// What the agent wrote is checked before it becomes a label (the agent is
// hostile): the agent is choird's own id of the session's agent ("-" for
// choird's own calls), kept only when config.json names it; a model must
// be one config.json names (a models key, a provider's model id or the
// embedding model) or it is "other"; a purpose is one of callPurposes or
// "other". Numbers are the ledger's, which clamps them (never negative).
type callCounter struct{ loaded func() *config.Loaded }

// callPurposes are the purposes a record may carry as a label.
var callPurposes = map[string]bool{"turn": true, "compaction": true, "summary": true, "embedding": true}

// stored is store.Store.CallsStored.
func (c callCounter) stored(rows []store.CallRow) {
	for _, r := range rows {
		c.count(r)
	}
}

func (c callCounter) count(r store.CallRow) {
	agent, model, purpose := c.agentLabel(r.AgentID), c.modelLabel(r.Model), "other"
	if callPurposes[r.Purpose] {
		purpose = r.Purpose
	}
	metrics.LLMCalls.With(agent, model, purpose).Inc()
	if r.Outcome != rpc.OutcomeOK {
		metrics.LLMErrors.With(agent, model, purpose).Inc()
	}
	if r.Attempt > 0 {
		metrics.LLMFallbacks.With(agent, model).Inc()
	}
	metrics.LLMTokens.With(agent, model, "prompt").Add(float64(r.PromptTokens))
	metrics.LLMTokens.With(agent, model, "cached").Add(float64(r.CachedTokens))
	metrics.LLMTokens.With(agent, model, "completion").Add(float64(r.CompletionTokens))
	metrics.LLMCost.With(agent, model).Add(r.Cost)
	if r.LatencyMS > 0 {
		metrics.LLMSeconds.With(agent, model).Observe(float64(r.LatencyMS) / 1000)
	}
}

// agentLabel is id when it is choird's own ("-") or a configured agent,
// else "other".
func (c callCounter) agentLabel(id string) string {
	if id == "-" {
		return id
	}
	if l := c.loaded(); l != nil && l.Config != nil {
		if _, ok := l.Config.Agents[id]; ok {
			return id
		}
	}
	return "other"
}

// modelLabel is name when the configuration names that model (as a
// models key, a provider's model id or the embedding model), else "other".
func (c callCounter) modelLabel(name string) string {
	l := c.loaded()
	if l == nil || l.Config == nil || name == "" {
		return "other"
	}
	if _, ok := l.Config.Models[name]; ok {
		return name
	}
	for _, m := range l.Config.Models {
		if m.Model == name {
			return name
		}
	}
	if e := l.Config.Embedding; e != nil && e.Model == name {
		return name
	}
	return "other"
}
