package control

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"choir/choird/build"
	"choir/internal/config"
	"choir/internal/ctl"
)

// Builder builds agent images (choird/build).
type Builder interface {
	Build(ctx context.Context, cfg *config.Config, agentID string, progress func(string)) (*build.Result, error)
}

// SetBuilder connects the image builder.
func (p *Plane) SetBuilder(b Builder) {
	p.mu.Lock()
	p.builder = b
	p.mu.Unlock()
}

// buildAgent streams a build as NDJSON BuildEvents: the progress lines,
// then the result or the error.
func (p *Plane) buildAgent(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := p.knownAgent(id); err != nil {
		writeError(w, err)
		return
	}
	p.mu.RLock()
	b := p.builder
	p.mu.RUnlock()
	if b == nil {
		writeError(w, ctl.Errorf(http.StatusServiceUnavailable, "unavailable", "the image builder is not running in this choird"))
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	var mu sync.Mutex
	enc := json.NewEncoder(w)
	emit := func(ev ctl.BuildEvent) {
		mu.Lock()
		defer mu.Unlock()
		enc.Encode(ev)
		if flusher != nil {
			flusher.Flush()
		}
	}
	p.log.Info("agent build started", "agent_id", id)
	res, err := b.Build(r.Context(), p.Config().Config, id, func(line string) { emit(ctl.BuildEvent{Progress: line}) })
	if err != nil {
		p.log.Warn("agent build failed", "agent_id", id, "error", err.Error())
		emit(ctl.BuildEvent{Error: ctl.Errorf(http.StatusUnprocessableEntity, "build_failed", "%v", err)})
		return
	}
	var out ctl.BuildResult
	raw, _ := json.Marshal(res)
	json.Unmarshal(raw, &out)
	p.log.Info("agent build finished", "agent_id", id, "image", res.Image, "built", res.AgentBuilt)
	emit(ctl.BuildEvent{Result: &out})
}
