package netfetch

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"choir/internal/netpolicy"
	"choir/internal/rpc"
)

// Source is the policy that governs one session's fetches, found by the
// authenticated caller, never by anything in the input.
type Source struct {
	Policy *netpolicy.Policy
	Limits Limits
	// RunID is the run a run session performs ("" for an interactive
	// session): its fetches are receipts on the run.
	RunID string
}

// Tool is choir.net.fetch's handler.
type Tool struct {
	Fetcher *Fetcher
	// Policy finds the session's policy; an error (a *NetError with
	// CodeNoPolicy when the session has none) refuses the call.
	Policy func(ctx context.Context, agentID, sessionID string) (Source, error)
	// Record keeps one request, allowed or denied: for a run a NetRequest
	// receipt (and the body as a "source" object, whose hash it returns),
	// for an interactive session a log line. Its failure fails the call:
	// an unrecorded request is not answered.
	Record func(ctx context.Context, agentID, sessionID string, src Source, rec Record, body []byte) (source string, err error)
}

// Record is the body of a NetRequest receipt.
type Record struct {
	Method     string   `json:"method"`
	URL        string   `json:"url"`
	Allowed    bool     `json:"allowed"`
	Reason     string   `json:"reason,omitempty"` // why refused or failed
	Code       string   `json:"code,omitempty"`   // the tool error's code
	Policy     string   `json:"policy"`           // the list's config.json path
	Rule       string   `json:"rule,omitempty"`   // the admitting entry
	Status     int      `json:"status,omitempty"`
	Bytes      int64    `json:"bytes"`
	Truncated  bool     `json:"truncated,omitempty"`
	DurationMS int64    `json:"duration_ms"`
	Redirects  []string `json:"redirects,omitempty"`
	Source     string   `json:"source,omitempty"` // the body's object hash
}

// Handle is the host tool: decode, find the policy, fetch, record, answer.
func (t *Tool) Handle(ctx context.Context, agentID, sessionID string, input json.RawMessage) (json.RawMessage, error) {
	var in rpc.NetFetch
	if err := rpc.DecodeStrict(input, &in); err != nil {
		return nil, badInput("%v", err)
	}
	if in.URL == "" {
		return nil, badInput("url: required (an http or https URL the network policy admits)")
	}
	src, err := t.Policy(ctx, agentID, sessionID)
	if err != nil {
		return nil, err
	}
	res, ferr := t.Fetcher.Do(ctx, src.Policy, src.Limits, in)
	rec := Record{Method: res.Method, URL: res.URL, Allowed: res.Allowed, Reason: res.Reason, Policy: policyName(src.Policy),
		Rule: res.Rule, Status: res.Status, Bytes: res.Bytes, Truncated: res.Truncated,
		DurationMS: res.Duration.Milliseconds(), Redirects: res.Redirects}
	var c interface{ ToolCode() string }
	if errors.As(ferr, &c) {
		rec.Code = c.ToolCode()
	}
	if ferr != nil && rec.Code == "" {
		rec.Code = CodeNetwork
	}
	// Record without the caller's deadline: a fetch that ran is recorded.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	hash, rerr := t.Record(rctx, agentID, sessionID, src, rec, res.Body)
	if rerr != nil {
		return nil, &NetError{Code: "record_failed", Msg: "the request could not be recorded, so its answer is withheld: " + rerr.Error()}
	}
	if ferr != nil {
		return nil, ferr
	}
	res.Answer.Source = hash
	return json.Marshal(res.Answer)
}

// HostTools returns the handler for lifecycle.Manager.HostTools.
func (t *Tool) HostTools() map[string]func(context.Context, string, string, json.RawMessage) (json.RawMessage, error) {
	return map[string]func(context.Context, string, string, json.RawMessage) (json.RawMessage, error){rpc.HostToolNetFetch: t.Handle}
}
