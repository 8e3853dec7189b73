package control

import (
	"context"
	"errors"
	"net/http"

	"choir/internal/ctl"
)

// KnowledgeBase searches the local knowledge base of headless runs
// (choird/headless/kb) for the operator (choirctl kb search). A refusal of
// the query is a *ctl.Error with status 400.
type KnowledgeBase interface {
	Search(ctx context.Context, q ctl.KBSearch) (ctl.KBAnswer, error)
}

// SetKnowledgeBase connects the knowledge base.
func (p *Plane) SetKnowledgeBase(kb KnowledgeBase) {
	p.mu.Lock()
	p.kb = kb
	p.mu.Unlock()
}

// maxKBBody bounds a knowledge-base request's body; the query itself is
// refused past 4 KiB with a precise message.
const maxKBBody = 16 << 10

func (p *Plane) registerKBRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/kb/search", func(w http.ResponseWriter, r *http.Request) {
		p.mu.RLock()
		kb := p.kb
		p.mu.RUnlock()
		if kb == nil {
			writeError(w, ctl.Errorf(http.StatusServiceUnavailable, "unavailable", "the knowledge base is not available in this choird (it needs Postgres and the object store)"))
			return
		}
		var q ctl.KBSearch
		if err := ctl.DecodeRequest(w, r, maxKBBody, "kb search", &q); err != nil {
			writeError(w, err)
			return
		}
		ans, err := kb.Search(r.Context(), q)
		if err != nil {
			var e *ctl.Error
			if !errors.As(err, &e) {
				e = ctl.Errorf(http.StatusInternalServerError, "kb_failed", "search the knowledge base: %v", err)
			}
			writeError(w, e)
			return
		}
		if ans.Pointers == nil {
			ans.Pointers = []ctl.KBPointer{}
		}
		writeJSON(w, ans)
	})
}
