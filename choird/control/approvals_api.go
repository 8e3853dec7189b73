package control

import (
	"context"
	"errors"
	"net/http"

	"choir/choird/approval"
	"choir/internal/ctl"
)

// Approvals is the approval pipeline as the admin API uses it.
type Approvals interface {
	List(ctx context.Context, agentID string) ([]approval.Approval, error)
	Get(ctx context.Context, id string) (approval.Approval, error)
	Decide(ctx context.Context, id string, approve bool, who approval.Decider) (approval.Approval, error)
}

// SetApprovals connects the approval service.
func (p *Plane) SetApprovals(a Approvals) {
	p.mu.Lock()
	p.approvals = a
	p.mu.Unlock()
}

func (p *Plane) approvalService() (Approvals, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.approvals == nil {
		return nil, ctl.Errorf(http.StatusServiceUnavailable, "unavailable", "approvals are not available in this choird")
	}
	return p.approvals, nil
}

func wireApproval(a approval.Approval) ctl.Approval {
	return ctl.Approval{ID: a.ID, SessionID: a.SessionID, AgentID: a.AgentID, RequestType: a.RequestType, Summary: a.Summary,
		Payload: a.Payload, Status: string(a.Status), CreatedAt: a.CreatedAt, ResolvedAt: a.ResolvedAt, ResolvedBy: a.ResolvedBy}
}

func approvalError(err error) error {
	switch {
	case errors.Is(err, approval.ErrNotFound):
		return ctl.Errorf(http.StatusNotFound, "not_found", "%v", err)
	case errors.Is(err, approval.ErrAlreadyDecided):
		return ctl.Errorf(http.StatusConflict, "already_decided", "%v", err)
	case errors.Is(err, approval.ErrNotAllowed):
		return ctl.Errorf(http.StatusForbidden, "forbidden", "%v", err)
	}
	return err
}

func (p *Plane) registerApprovalRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/approvals", func(w http.ResponseWriter, r *http.Request) {
		svc, err := p.approvalService()
		if err != nil {
			writeError(w, err)
			return
		}
		list, err := svc.List(r.Context(), r.URL.Query().Get("agent"))
		if err != nil {
			writeError(w, approvalError(err))
			return
		}
		out := make([]ctl.Approval, len(list))
		for i, a := range list {
			out[i] = wireApproval(a)
		}
		writeJSON(w, out)
	})
	mux.HandleFunc("GET /v1/approvals/{id}", func(w http.ResponseWriter, r *http.Request) {
		svc, err := p.approvalService()
		if err != nil {
			writeError(w, err)
			return
		}
		a, err := svc.Get(r.Context(), r.PathValue("id"))
		if err != nil {
			writeError(w, approvalError(err))
			return
		}
		writeJSON(w, wireApproval(a))
	})
	for verb, approve := range map[string]bool{"approve": true, "reject": false} {
		mux.HandleFunc("POST /v1/approvals/{id}/"+verb, func(w http.ResponseWriter, r *http.Request) {
			svc, err := p.approvalService()
			if err != nil {
				writeError(w, err)
				return
			}
			a, err := svc.Decide(r.Context(), r.PathValue("id"), approve, approval.Operator("choirctl"))
			if err != nil {
				writeError(w, approvalError(err))
				return
			}
			writeJSON(w, wireApproval(a))
		})
	}
}
