package control

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"time"

	"choir/internal/ctl"
)

// Usage is the usage ledger and the caps (choird/ledger and the store) as
// the operator sees them: choirctl usage, usage allow, and today's spend
// in agent status and /status.
type Usage interface {
	Report(ctx context.Context, q ctl.UsageQuery) (*ctl.UsageReport, error)
	Allow(ctx context.Context, a ctl.UsageAllow, by string) error
	// Today is an agent's spend today against its daily caps, "" when
	// none applies.
	Today(ctx context.Context, agentID string) (string, error)
}

// SetUsage connects the ledger.
func (p *Plane) SetUsage(u Usage) {
	p.mu.Lock()
	p.usage = u
	p.mu.Unlock()
}

// UsageToday is today's spend line of an agent for status ("" without a
// ledger, a daily cap, or when it cannot be read).
func (p *Plane) UsageToday(ctx context.Context, agentID string) string {
	p.mu.RLock()
	u := p.usage
	p.mu.RUnlock()
	if u == nil {
		return ""
	}
	line, err := u.Today(ctx, agentID)
	if err != nil {
		return "spend unknown: " + err.Error()
	}
	return line
}

// UsageReport answers choirctl usage and /usage.
func (p *Plane) UsageReport(ctx context.Context, q ctl.UsageQuery) (*ctl.UsageReport, error) {
	p.mu.RLock()
	u := p.usage
	p.mu.RUnlock()
	if u == nil {
		return nil, ctl.Errorf(http.StatusServiceUnavailable, "unavailable", "the usage ledger is not available in this choird (it needs Postgres)")
	}
	switch q.By {
	case "", "agent", "model", "session", "day":
	default:
		return nil, ctl.Errorf(http.StatusBadRequest, "bad_request", "usage --by %q: want agent, model, session or day", q.By)
	}
	if q.Agent != "" {
		if _, ok := p.Config().Config.Agents[q.Agent]; !ok {
			return nil, ctl.Errorf(http.StatusNotFound, "not_found", "usage: agent %q is not in config.json", q.Agent)
		}
	}
	return u.Report(ctx, q)
}

// AllowUsage grants a one-off raise, logged with who asked.
func (p *Plane) AllowUsage(ctx context.Context, a ctl.UsageAllow, by string) error {
	p.mu.RLock()
	u := p.usage
	p.mu.RUnlock()
	if u == nil {
		return ctl.Errorf(http.StatusServiceUnavailable, "unavailable", "the usage ledger is not available in this choird (it needs Postgres)")
	}
	if _, ok := p.Config().Config.Agents[a.Agent]; !ok {
		return ctl.Errorf(http.StatusNotFound, "not_found", "usage allow: agent %q is not in config.json", a.Agent)
	}
	if !(a.Amount > 0) || a.Amount > 1e15 || math.IsInf(a.Amount, 0) {
		return ctl.Errorf(http.StatusBadRequest, "bad_request", "usage allow: amount %v: want a positive number", a.Amount)
	}
	if !a.Until.After(time.Now()) || a.Until.After(time.Now().AddDate(1, 0, 0)) {
		return ctl.Errorf(http.StatusBadRequest, "bad_request", "usage allow: --until %s: want a time in the next year", a.Until.UTC().Format(time.RFC3339))
	}
	return u.Allow(ctx, a, by)
}

func (p *Plane) registerUsageRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/usage", func(w http.ResponseWriter, r *http.Request) {
		v := r.URL.Query()
		q := ctl.UsageQuery{Agent: v.Get("agent"), By: v.Get("by")}
		if s := v.Get("since"); s != "" {
			t, err := time.Parse(time.RFC3339, s)
			if err != nil {
				writeError(w, ctl.Errorf(http.StatusBadRequest, "bad_request", "usage --since %q: want an RFC 3339 time", s))
				return
			}
			q.Since = t
		}
		rep, err := p.UsageReport(r.Context(), q)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, rep)
	})
	mux.HandleFunc("POST /v1/usage/allow", func(w http.ResponseWriter, r *http.Request) {
		var a ctl.UsageAllow
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			writeError(w, ctl.Errorf(http.StatusBadRequest, "bad_request", "usage allow: %v", err))
			return
		}
		if err := p.AllowUsage(r.Context(), a, "choirctl"); err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, struct{}{})
	})
}
