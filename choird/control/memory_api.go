package control

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"choir/internal/ctl"
)

// Memory runs the memory tools for the operator (choirctl memory): the
// same handlers as the agents' EXECUTE_HOST_TOOL calls (choird/memory).
// Inputs and answers are the tools' own JSON (rpc.MemoryQuery,
// rpc.MemoryUpsert, rpc.MemoryAnswer).
type Memory interface {
	OperatorQuery(ctx context.Context, agent string, input json.RawMessage) (json.RawMessage, error)
	Upsert(ctx context.Context, agent, sessionID string, input json.RawMessage) (json.RawMessage, error)
	List(ctx context.Context, agent string, limit int) (json.RawMessage, error)
}

// SetMemory connects the memory tools.
func (p *Plane) SetMemory(m Memory) {
	p.mu.Lock()
	p.memory = m
	p.mu.Unlock()
}

// maxMemoryBody bounds a memory request's body; the tools refuse inputs
// over their own, smaller limits with a precise message.
const maxMemoryBody = 64 << 10

func (p *Plane) registerMemoryRoutes(mux *http.ServeMux) {
	with := func(h func(m Memory, r *http.Request) (json.RawMessage, error)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			p.mu.RLock()
			m := p.memory
			p.mu.RUnlock()
			if m == nil {
				writeError(w, ctl.Errorf(http.StatusServiceUnavailable, "unavailable", "memory is not available in this choird (it needs Postgres)"))
				return
			}
			out, err := h(m, r)
			if err != nil {
				writeError(w, memoryError(err))
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(out)
		}
	}
	body := func(r *http.Request) (json.RawMessage, error) {
		data, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxMemoryBody))
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, ctl.Errorf(http.StatusRequestEntityTooLarge, "too_large", "memory request: the body is larger than the limit of %d bytes", maxMemoryBody)
		}
		return data, err
	}
	mux.HandleFunc("POST /v1/memory/{agent}/search", with(func(m Memory, r *http.Request) (json.RawMessage, error) {
		in, err := body(r)
		if err != nil {
			return nil, err
		}
		return m.OperatorQuery(r.Context(), r.PathValue("agent"), in)
	}))
	mux.HandleFunc("POST /v1/memory/{agent}/upsert", with(func(m Memory, r *http.Request) (json.RawMessage, error) {
		in, err := body(r)
		if err != nil {
			return nil, err
		}
		return m.Upsert(r.Context(), r.PathValue("agent"), "", in)
	}))
	mux.HandleFunc("GET /v1/memory/{agent}/knowledge", with(func(m Memory, r *http.Request) (json.RawMessage, error) {
		limit := 0
		if s := r.URL.Query().Get("limit"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				return nil, ctl.Errorf(http.StatusBadRequest, "bad_request", "limit %q: want a number", s)
			}
			limit = n
		}
		return m.List(r.Context(), r.PathValue("agent"), limit)
	}))
}

// memoryError gives a memory tool's refusal its HTTP status.
func memoryError(err error) error {
	var e *ctl.Error
	if errors.As(err, &e) {
		return e
	}
	var c interface{ ToolCode() string }
	if !errors.As(err, &c) {
		return ctl.Errorf(http.StatusInternalServerError, "memory_failed", "%v", err)
	}
	status := map[string]int{"invalid_input": http.StatusBadRequest, "forbidden": http.StatusForbidden,
		"not_found": http.StatusNotFound, "unavailable": http.StatusServiceUnavailable}[c.ToolCode()]
	if status == 0 {
		status = http.StatusInternalServerError
	}
	return ctl.Errorf(status, c.ToolCode(), "%v", err)
}
