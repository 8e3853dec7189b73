package control

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"choir/internal/config"
	"choir/internal/ctl"
)

// Updater is the lifecycle's part of agent update: stop a running agent
// and start it on its newest image, resuming its session.
type Updater interface {
	Update(ctx context.Context, id string) (ctl.AgentStatus, error)
}

// UpdateAgent is agent update (§17.4): build the agent's image (nothing is
// built when the repos and choir-agent are as they were), then, when the
// agent runs another image, stop it gracefully and start it on the new one,
// resuming its session. A stopped agent is only built.
func (p *Plane) UpdateAgent(ctx context.Context, id string, progress func(string)) ctl.UpdateResult {
	say := func(format string, args ...any) {
		if progress != nil {
			progress(fmt.Sprintf(format, args...))
		}
	}
	fail := func(format string, args ...any) ctl.UpdateResult {
		return ctl.UpdateResult{AgentID: id, Outcome: ctl.UpdateFailed, Detail: fmt.Sprintf(format, args...)}
	}
	p.mu.RLock()
	b, agents := p.builder, p.agents
	p.mu.RUnlock()
	up, ok := agents.(Updater)
	if b == nil || agents == nil || !ok {
		return fail("the image builder or the agent lifecycle is not running in this choird")
	}
	say("%s: building", id)
	res, err := b.Build(ctx, p.Config().Config, id, progress)
	if err != nil {
		return fail("build failed; the agent was left as it was: %v", err)
	}
	st, err := agents.Status(id)
	if err != nil {
		return fail("%v", err)
	}
	out := ctl.UpdateResult{AgentID: id, Image: res.Image}
	switch {
	case st.State == "stopped":
		out.Outcome, out.Detail = ctl.UpdateBuilt, "stopped: it starts on this image next time"
		if !res.AgentBuilt {
			out.Outcome, out.Detail = ctl.UpdateSkipped, "its image is up to date; it is stopped"
		}
	case st.Image == res.Image:
		out.Outcome, out.Detail = ctl.UpdateSkipped, "it runs this image already"
	default:
		say("%s: stopping it (its session is saved) and starting it on %s", id, res.Image)
		p.log.Info("agent update", "agent_id", id, "from", st.Image, "to", res.Image)
		after, err := up.Update(ctx, id)
		if err != nil {
			return ctl.UpdateResult{AgentID: id, Outcome: ctl.UpdateFailed, Image: res.Image,
				Detail: fmt.Sprintf("stopped, but it did not start on %s: %v; fix that, then choirctl agent start %s", res.Image, lifecycleError(err), id)}
		}
		out.Outcome, out.Detail, out.Status = ctl.UpdateRedeployed, "from "+st.Image, &after
	}
	return out
}

// UpdateAll is agent update-all (§17.5): every agent of the running
// config, one after the other, each reported as it ends.
func (p *Plane) UpdateAll(ctx context.Context, progress func(string), result func(ctl.UpdateResult)) {
	for _, id := range config.SortedNames(p.Config().Config.Agents) {
		if ctx.Err() != nil {
			return
		}
		result(p.UpdateAgent(ctx, id, progress))
	}
}

// streamUpdates answers an update request as NDJSON UpdateEvents.
func (p *Plane) streamUpdates(w http.ResponseWriter, run func(progress func(string), result func(ctl.UpdateResult))) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	var mu sync.Mutex
	enc := json.NewEncoder(w)
	emit := func(ev ctl.UpdateEvent) {
		mu.Lock()
		defer mu.Unlock()
		enc.Encode(ev)
		if flusher != nil {
			flusher.Flush()
		}
	}
	run(func(line string) { emit(ctl.UpdateEvent{Progress: line}) },
		func(r ctl.UpdateResult) {
			p.log.Info("agent update finished", "agent_id", r.AgentID, "outcome", r.Outcome, "image", r.Image)
			emit(ctl.UpdateEvent{Result: &r})
		})
}

func (p *Plane) registerUpdateRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/agents/{id}/update", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if err := p.knownAgent(id); err != nil {
			writeError(w, err)
			return
		}
		p.streamUpdates(w, func(progress func(string), result func(ctl.UpdateResult)) {
			result(p.UpdateAgent(r.Context(), id, progress))
		})
	})
	mux.HandleFunc("POST /v1/agents/update-all", func(w http.ResponseWriter, r *http.Request) {
		if p.Config() == nil {
			writeError(w, ctl.Errorf(http.StatusServiceUnavailable, "unavailable", "no configuration loaded yet"))
			return
		}
		p.streamUpdates(w, func(progress func(string), result func(ctl.UpdateResult)) {
			p.UpdateAll(r.Context(), progress, result)
		})
	})
}
