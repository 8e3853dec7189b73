package control

import (
	"context"
	"net/http"
	"strconv"

	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/rpc"
)

// SessionLog is the sessions and events Postgres keeps.
type SessionLog interface {
	Sessions(ctx context.Context, agentID string) ([]ctl.SessionInfo, error)
	Events(ctx context.Context, sessionID string, after int64) ([]ctl.SessionEvent, error)
	// Session returns one session with why it ended and its summary; nil
	// when there is no such session.
	Session(ctx context.Context, sessionID string) (*ctl.SessionDetail, error)
}

// Sessions is what the lifecycle knows of running sessions.
type Sessions interface {
	SessionOf(sessionID string) (agentID string, ok bool)
	Cores(agentID string) ([]rpc.StatusReq, error)
	CancelCore(agentID, job string) error
	Compact(agentID string) error
	Model(agentID string) (llm, voice string, err error)
	// Roles are the core jobs' and the summary's models ("" means the
	// edge's).
	Roles(agentID string) (core, summary string, err error)
	// SetModel checks every name of the choice, then sets the non-empty
	// ones together: a bad name changes nothing.
	SetModel(agentID string, choice ctl.ModelChoice) error
	Broadcast(typ string, data any) int
}

// SetSessions connects the session log and the running sessions.
func (p *Plane) SetSessions(log SessionLog, running Sessions) {
	p.mu.Lock()
	p.sessionLog, p.running = log, running
	p.mu.Unlock()
}

func (p *Plane) sessionDeps() (SessionLog, Sessions, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.sessionLog == nil || p.running == nil {
		return nil, nil, ctl.Errorf(http.StatusServiceUnavailable, "unavailable", "sessions are not available in this choird")
	}
	return p.sessionLog, p.running, nil
}

// runningAgent finds the agent of a running session.
func (p *Plane) runningAgent(sessionID string) (string, error) {
	_, running, err := p.sessionDeps()
	if err != nil {
		return "", err
	}
	agent, ok := running.SessionOf(sessionID)
	if !ok {
		return "", ctl.Errorf(http.StatusNotFound, "not_found", "no running session %q (see choirctl session list)", sessionID)
	}
	return agent, nil
}

// SetModel is `model set` / `voice set` (and /model, /voice): the agent
// uses the new model or voice from its next call until it restarts. The
// config version is bumped so the agent fetches the change, and the new
// model's key, at once.
func (p *Plane) SetModel(agentID string, choice ctl.ModelChoice) (ctl.ModelChoice, error) {
	_, running, err := p.sessionDeps()
	if err != nil {
		return ctl.ModelChoice{}, err
	}
	if err := running.SetModel(agentID, choice); err != nil {
		return ctl.ModelChoice{}, lifecycleError(err)
	}
	p.mu.Lock()
	p.configVersion++
	version := p.configVersion
	p.mu.Unlock()
	p.versionChanged(version, "model set", "agent_id", agentID, "llm", choice.LLM, "voice_profile", choice.VoiceProfile,
		"core_llm", choice.CoreLLM, "summary_llm", choice.SummaryLLM)
	running.Broadcast(rpc.EventConfigChanged, map[string]int64{"config_version": version})
	return p.modelChoice(running, agentID)
}

// Models is what a running agent uses now, every role (/model).
func (p *Plane) Models(agentID string) (ctl.ModelChoice, error) {
	_, running, err := p.sessionDeps()
	if err != nil {
		return ctl.ModelChoice{}, err
	}
	return p.modelChoice(running, agentID)
}

// modelChoice is what a running agent uses now, every role.
func (p *Plane) modelChoice(running Sessions, agentID string) (ctl.ModelChoice, error) {
	llm, voice, err := running.Model(agentID)
	if err != nil {
		return ctl.ModelChoice{}, lifecycleError(err)
	}
	core, summary, err := running.Roles(agentID)
	if err != nil {
		return ctl.ModelChoice{}, lifecycleError(err)
	}
	return ctl.ModelChoice{LLM: llm, VoiceProfile: voice, CoreLLM: core, SummaryLLM: summary}, nil
}

// Catalog lists the configured models, TTS providers and voices.
func (p *Plane) Catalog() ctl.ModelCatalog {
	c := p.Config().Config
	var out ctl.ModelCatalog
	for _, n := range config.SortedNames(c.Models) {
		m := c.Models[n]
		out.Models = append(out.Models, ctl.NamedModel{Name: n, Provider: m.Provider, Model: m.Model, Endpoint: m.Endpoint})
	}
	for _, n := range config.SortedNames(c.TTS) {
		t := c.TTS[n]
		out.TTS = append(out.TTS, ctl.NamedModel{Name: n, Provider: t.Provider, Model: t.ModelID, Endpoint: t.Endpoint})
	}
	for _, n := range config.SortedNames(c.VoiceProfiles) {
		v := c.VoiceProfiles[n]
		out.VoiceProfiles = append(out.VoiceProfiles, ctl.NamedModel{Name: n, Provider: v.TTS, Model: v.VoiceID})
	}
	return out
}

func (p *Plane) registerSessionRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/sessions", func(w http.ResponseWriter, r *http.Request) {
		log, _, err := p.sessionDeps()
		if err == nil {
			var list []ctl.SessionInfo
			if list, err = log.Sessions(r.Context(), r.URL.Query().Get("agent")); err == nil {
				writeJSON(w, list)
				return
			}
		}
		writeError(w, err)
	})
	mux.HandleFunc("GET /v1/sessions/{id}", func(w http.ResponseWriter, r *http.Request) {
		log, _, err := p.sessionDeps()
		if err != nil {
			writeError(w, err)
			return
		}
		id := r.PathValue("id")
		d, err := log.Session(r.Context(), id)
		switch {
		case err != nil:
			writeError(w, ctl.Errorf(http.StatusServiceUnavailable, "unavailable", "read session %s: %v", id, err))
		case d == nil:
			writeError(w, ctl.Errorf(http.StatusNotFound, "not_found", "no session %q (see choirctl session list)", id))
		default:
			writeJSON(w, d)
		}
	})
	mux.HandleFunc("GET /v1/sessions/{id}/events", func(w http.ResponseWriter, r *http.Request) {
		log, _, err := p.sessionDeps()
		if err != nil {
			writeError(w, err)
			return
		}
		after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
		evs, err := log.Events(r.Context(), r.PathValue("id"), after)
		if err != nil {
			writeError(w, ctl.Errorf(http.StatusNotFound, "not_found", "%v", err))
			return
		}
		writeJSON(w, evs)
	})
	mux.HandleFunc("GET /v1/sessions/{id}/cores", func(w http.ResponseWriter, r *http.Request) {
		agent, err := p.runningAgent(r.PathValue("id"))
		if err != nil {
			writeError(w, err)
			return
		}
		_, running, _ := p.sessionDeps()
		cores, err := running.Cores(agent)
		if err != nil {
			writeError(w, lifecycleError(err))
			return
		}
		writeJSON(w, cores)
	})
	mux.HandleFunc("POST /v1/sessions/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
		agent, err := p.runningAgent(r.PathValue("id"))
		if err != nil {
			writeError(w, err)
			return
		}
		var req ctl.CancelRequest
		if err := ctl.DecodeRequest(w, r, 64<<10, "cancel request", &req); err != nil {
			writeError(w, err)
			return
		}
		if req.JobName == "" {
			writeError(w, ctl.Errorf(http.StatusBadRequest, "bad_request", "name the core job to cancel"))
			return
		}
		_, running, _ := p.sessionDeps()
		if err := running.CancelCore(agent, req.JobName); err != nil {
			writeError(w, lifecycleError(err))
			return
		}
		writeJSON(w, struct{}{})
	})
	mux.HandleFunc("POST /v1/sessions/{id}/compact", func(w http.ResponseWriter, r *http.Request) {
		agent, err := p.runningAgent(r.PathValue("id"))
		if err != nil {
			writeError(w, err)
			return
		}
		_, running, _ := p.sessionDeps()
		if err := running.Compact(agent); err != nil {
			writeError(w, lifecycleError(err))
			return
		}
		writeJSON(w, struct{}{})
	})
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, p.Catalog())
	})
	mux.HandleFunc("GET /v1/agents/{id}/model", func(w http.ResponseWriter, r *http.Request) {
		_, running, err := p.sessionDeps()
		if err != nil {
			writeError(w, err)
			return
		}
		choice, err := p.modelChoice(running, r.PathValue("id"))
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, choice)
	})
	mux.HandleFunc("POST /v1/agents/{id}/model", func(w http.ResponseWriter, r *http.Request) {
		var req ctl.ModelChoice
		if err := ctl.DecodeRequest(w, r, 64<<10, "model choice", &req); err != nil {
			writeError(w, err)
			return
		}
		if req.LLM == "" && req.VoiceProfile == "" && req.CoreLLM == "" && req.SummaryLLM == "" {
			writeError(w, ctl.Errorf(http.StatusBadRequest, "bad_request", "name a model (llm, core_llm or summary_llm) or a voice profile"))
			return
		}
		out, err := p.SetModel(r.PathValue("id"), req)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, out)
	})
}
