package control

import (
	"context"
	"errors"
	"net/http"

	"choir/choird/lease"
	"choir/choird/lifecycle"
	"choir/internal/ctl"
)

// Agents is the agent lifecycle as the control plane commands it; the
// admin API and (later) the gateway both go through it.
type Agents interface {
	Start(ctx context.Context, id string, o lease.Overrides) (ctl.AgentStatus, error)
	Stop(ctx context.Context, id string) error
	Restart(ctx context.Context, id string) (ctl.AgentStatus, error)
	Status(id string) (ctl.AgentStatus, error)
	List() []ctl.AgentStatus
	Workspaces() []ctl.Workspace
	ResetWorkspace(ctx context.Context, name string) (ctl.ResetResult, error)
	Running() int
	Broadcast(typ string, data any) int
}

// SetAgents connects the lifecycle once choird has started it.
func (p *Plane) SetAgents(a Agents) {
	p.mu.Lock()
	p.agents = a
	p.mu.Unlock()
}

func (p *Plane) lifecycle() (Agents, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.agents == nil {
		return nil, ctl.Errorf(http.StatusServiceUnavailable, "unavailable", "the agent lifecycle is not running in this choird")
	}
	return p.agents, nil
}

// knownAgent refuses ids that are not in the running config.
func (p *Plane) knownAgent(id string) error {
	l := p.Config()
	if l == nil {
		return ctl.Errorf(http.StatusServiceUnavailable, "unavailable", "no configuration loaded yet")
	}
	if _, ok := l.Config.Agents[id]; !ok {
		return ctl.Errorf(http.StatusNotFound, "not_found", "no agent named %q in config.json", id)
	}
	return nil
}

// lifecycleError gives a lifecycle failure its admin status.
func lifecycleError(err error) error {
	var conflict *lease.ConflictError
	switch {
	case errors.As(err, &conflict), errors.Is(err, lease.ErrAlreadyRunning):
		return ctl.Errorf(http.StatusConflict, "conflict", "%v", err)
	case errors.Is(err, lifecycle.ErrNotRunning):
		return ctl.Errorf(http.StatusConflict, "not_running", "%v", err)
	}
	return ctl.Errorf(http.StatusUnprocessableEntity, "failed", "%v", err)
}

func (p *Plane) registerAgentRoutes(mux *http.ServeMux) {
	withAgents := func(h func(a Agents, w http.ResponseWriter, r *http.Request) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			a, err := p.lifecycle()
			if err == nil {
				err = h(a, w, r)
			}
			if err != nil {
				writeError(w, err)
			}
		}
	}
	mux.HandleFunc("GET /v1/agents", withAgents(func(a Agents, w http.ResponseWriter, r *http.Request) error {
		writeJSON(w, a.List())
		return nil
	}))
	mux.HandleFunc("GET /v1/agents/{id}", withAgents(func(a Agents, w http.ResponseWriter, r *http.Request) error {
		id := r.PathValue("id")
		if err := p.knownAgent(id); err != nil {
			return err
		}
		st, err := a.Status(id)
		if err != nil {
			return lifecycleError(err)
		}
		st.Spend = p.UsageToday(r.Context(), id)    // usage_api.go
		st.Outbox = p.OutboxStatus(r.Context(), id) // chat_api.go
		writeJSON(w, st)
		return nil
	}))
	mux.HandleFunc("POST /v1/agents/{id}/start", withAgents(func(a Agents, w http.ResponseWriter, r *http.Request) error {
		id := r.PathValue("id")
		if err := p.knownAgent(id); err != nil {
			return err
		}
		var req ctl.StartRequest
		if err := ctl.DecodeRequest(w, r, 64<<10, "start request", &req); err != nil {
			return err
		}
		st, err := a.Start(r.Context(), id, lease.Overrides(req))
		if err != nil {
			return lifecycleError(err)
		}
		writeJSON(w, st)
		return nil
	}))
	mux.HandleFunc("POST /v1/agents/{id}/stop", withAgents(func(a Agents, w http.ResponseWriter, r *http.Request) error {
		id := r.PathValue("id")
		if err := p.knownAgent(id); err != nil {
			return err
		}
		if err := a.Stop(r.Context(), id); err != nil {
			return lifecycleError(err)
		}
		writeJSON(w, struct{}{})
		return nil
	}))
	mux.HandleFunc("POST /v1/agents/{id}/restart", withAgents(func(a Agents, w http.ResponseWriter, r *http.Request) error {
		id := r.PathValue("id")
		if err := p.knownAgent(id); err != nil {
			return err
		}
		st, err := a.Restart(r.Context(), id)
		if err != nil {
			return lifecycleError(err)
		}
		writeJSON(w, st)
		return nil
	}))
	mux.HandleFunc("POST /v1/agents/{id}/build", p.buildAgent)
	mux.HandleFunc("POST /v1/secrets/apply", func(w http.ResponseWriter, r *http.Request) {
		res, err := p.ApplySecrets()
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, res)
	})
	mux.HandleFunc("GET /v1/workspaces", withAgents(func(a Agents, w http.ResponseWriter, r *http.Request) error {
		writeJSON(w, a.Workspaces())
		return nil
	}))
	mux.HandleFunc("POST /v1/workspaces/{name}/reset", withAgents(func(a Agents, w http.ResponseWriter, r *http.Request) error {
		res, err := a.ResetWorkspace(r.Context(), r.PathValue("name"))
		if err != nil {
			return lifecycleError(err)
		}
		writeJSON(w, res)
		return nil
	}))
}
