package control

import (
	"context"
	"net/http"

	"choir/internal/ctl"
)

// RunContexts rebuilds a headless run's context pack from its receipts
// and the object store (runner.Contexts) for `choirctl run context`. A
// run it does not know is headless.ErrNotFound; other refusals are
// *ctl.Error.
type RunContexts interface {
	RunContext(ctx context.Context, runID string) (ctl.RunContext, error)
}

// SetRunContexts connects what rebuilds runs' context packs.
func (p *Plane) SetRunContexts(rc RunContexts) {
	p.mu.Lock()
	p.runContexts = rc
	p.mu.Unlock()
}

func (p *Plane) registerRunContextRoutes(mux *http.ServeMux) {
	f := func(w http.ResponseWriter, r *http.Request) {
		p.mu.RLock()
		rc := p.runContexts
		p.mu.RUnlock()
		if rc == nil {
			writeError(w, ctl.Errorf(http.StatusServiceUnavailable, "unavailable", "run contexts are not available in this choird (headless runs need Postgres and the object store)"))
			return
		}
		out, err := rc.RunContext(r.Context(), r.PathValue("id"))
		if err != nil {
			writeError(w, headlessError(err))
			return
		}
		writeJSON(w, out)
	}
	mux.HandleFunc("GET /run/{id}/context", f)
	mux.HandleFunc("GET /v1/run/{id}/context", f)
}
