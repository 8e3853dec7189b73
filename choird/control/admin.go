package control

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"choir/internal/ctl"
	"choir/internal/logs"
)

// AdminHandler serves the admin protocol (package ctl) for choirctl.
func (p *Plane) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, p.Status())
	})
	mux.HandleFunc("GET /v1/config", func(w http.ResponseWriter, r *http.Request) {
		raw, err := p.ConfigJSON()
		if err != nil {
			writeError(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(raw)
	})
	mux.HandleFunc("GET /v1/logs/{source}", func(w http.ResponseWriter, r *http.Request) {
		path, err := p.LogPath(r.PathValue("source"))
		if err != nil {
			writeError(w, err)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		flusher, _ := w.(http.Flusher)
		flush := func() {
			if flusher != nil {
				flusher.Flush()
			}
		}
		if r.URL.Query().Get("follow") != "1" {
			http.ServeFile(w, r, path)
			return
		}
		if err := logs.Follow(r.Context(), path, w, flush); err != nil {
			p.log.Warn("follow log", "path", path, logs.KeyError, err.Error())
		}
	})
	p.registerAgentRoutes(mux)
	p.registerChatRoutes(mux)
	p.registerApprovalRoutes(mux)
	p.registerSessionRoutes(mux)
	p.registerMemoryRoutes(mux)
	p.registerStagingRoutes(mux)
	p.registerUpdateRoutes(mux)
	p.registerUsageRoutes(mux)
	p.registerHeadlessRoutes(mux)
	p.registerKBRoutes(mux)         // kb_api.go
	p.registerRunContextRoutes(mux) // run_context_api.go
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, ctl.Errorf(http.StatusNotFound, "not_found", "no admin endpoint %s %s: is choirctl newer than choird?", r.Method, r.URL.Path))
	})
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, err error) {
	var e *ctl.Error
	if !errors.As(err, &e) {
		e = ctl.Errorf(http.StatusInternalServerError, "internal", "%s", strings.TrimSpace(err.Error()))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	json.NewEncoder(w).Encode(ctl.ErrorBody{Error: e})
}
