package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"choir/choird/headless"
	"choir/choird/headless/mood"
	"choir/choird/headless/objects"
	"choir/choird/lifecycle"
	"choir/choird/netfetch"
	"choir/choird/store"
	"choir/internal/config"
	"choir/internal/netpolicy"
)

// choir.net.fetch (choird/netfetch): the policy of the calling session, found
// from the session itself (a run session: its run's mood's allowlist; an
// interactive one: agents.<id>.network in policy mode), and the record of
// each request (a NetRequest receipt on the run with the body stored as a
// source object, or a log line).

// netFetchPolicies finds what governs a session's fetches.
type netFetchPolicies struct {
	config   func() *config.Config
	sessions sessionRuns
	director *headless.Director
	objs     *objects.Store
	log      *slog.Logger
}

func noPolicy(format string, args ...any) error {
	return &netfetch.NetError{Code: netfetch.CodeNoPolicy, Msg: fmt.Sprintf(format, args...)}
}

func fetchLimits(n config.Network) netfetch.Limits {
	return netfetch.Limits{MaxBytes: n.FetchMaxBytes(), Timeout: time.Duration(n.FetchTimeoutS()) * time.Second}
}

func (p *netFetchPolicies) policy(ctx context.Context, agentID, sessionID string) (netfetch.Source, error) {
	cfg := p.config()
	agent, ok := cfg.Agents[agentID]
	if !ok {
		return netfetch.Source{}, noPolicy("agent %s is not in config.json", agentID)
	}
	s, err := p.sessions.GetSession(ctx, sessionID)
	if err != nil {
		return netfetch.Source{}, noPolicy("choir.net.fetch: session %s is not known to choird: %v", sessionID, err)
	}
	if s.AgentID != agentID || s.Status != store.SessionActive {
		return netfetch.Source{}, noPolicy("choir.net.fetch: session %s is not an active session of %s", sessionID, agentID)
	}
	if s.Kind == store.SessionRun {
		run, err := p.director.Run(ctx, s.RunID)
		if err != nil {
			return netfetch.Source{}, noPolicy("choir.net.fetch: run %s: %v", s.RunID, err)
		}
		set, err := mood.Resolve(cfg.Headless)
		if err != nil {
			return netfetch.Source{}, noPolicy("choir.net.fetch: the moods in config.json do not resolve: %v", err)
		}
		prof, ok := set.Profile(mood.Mood(run.Mood))
		if !ok || !prof.Network {
			return netfetch.Source{}, noPolicy("choir.net.fetch: run %s is in mood %s, which has no network", run.ID, run.Mood)
		}
		pol, err := prof.NetPolicy()
		if err != nil {
			return netfetch.Source{}, noPolicy("choir.net.fetch: %v", err)
		}
		return netfetch.Source{Policy: pol, Limits: fetchLimits(agent.Network), RunID: run.ID}, nil
	}
	if !agent.Network.Policy() {
		return netfetch.Source{}, noPolicy("choir.net.fetch serves agents in network policy mode; %s is in open mode (agents.%s.network)", agentID, agentID)
	}
	pol, err := netpolicy.Compile("agents."+agentID+".network.allow", config.Entries(agent.Network.Allow))
	if err != nil {
		return netfetch.Source{}, noPolicy("choir.net.fetch: agents.%s.network.allow: %v", agentID, err)
	}
	return netfetch.Source{Policy: pol, Limits: fetchLimits(agent.Network)}, nil
}

// record keeps one request: on a run, the body as an object and a
// NetRequest receipt citing it; for an interactive session, a log line.
func (p *netFetchPolicies) record(ctx context.Context, agentID, sessionID string, src netfetch.Source, rec netfetch.Record, body []byte) (string, error) {
	p.log.Info("choir.net.fetch", "agent_id", agentID, "session_id", sessionID, "run_id", src.RunID,
		"method", rec.Method, "url", rec.URL, "allowed", rec.Allowed, "status", rec.Status, "bytes", rec.Bytes,
		"code", rec.Code, "reason", rec.Reason, "policy", rec.Policy, "duration_ms", rec.DurationMS)
	if src.RunID == "" {
		return "", nil
	}
	var objs []string
	if rec.Allowed && len(body) > 0 {
		h, err := p.objs.Put(body)
		if err != nil {
			return "", fmt.Errorf("store the body as a source object: %w", err)
		}
		rec.Source, objs = h, []string{h}
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return "", err
	}
	if _, _, err := p.director.Record(ctx, src.RunID, headless.KindNetRequest, b, objs, ""); err != nil {
		return "", fmt.Errorf("NetRequest receipt on run %s: %w", src.RunID, err)
	}
	return rec.Source, nil
}

// registerNetFetch offers choir.net.fetch to the agents' sessions.
func registerNetFetch(agents *lifecycle.Manager, cfg func() *config.Config, st *store.Store, d *headless.Director, home config.Home, log *slog.Logger) (stop func(), err error) {
	objs, err := objects.Open(filepath.Join(home.Dir, "objects"))
	if err != nil {
		return nil, fmt.Errorf("choir.net.fetch: %w", err)
	}
	p := &netFetchPolicies{config: cfg, sessions: st, director: d, objs: objs, log: log}
	f := netfetch.New(netfetch.Options{})
	t := &netfetch.Tool{Fetcher: f, Policy: p.policy, Record: p.record}
	for name, h := range t.HostTools() {
		agents.HostTools[name] = h
	}
	return f.Close, nil
}
