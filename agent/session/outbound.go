package session

import (
	"context"
	"maps"

	"choir/agent/redact"
	"choir/internal/rpc"
)

// Redacted wraps cp so that every text the agent sends choird has the
// values of its secrets replaced by markers (see agent/redact): host tool
// inputs (choir.dm.send's replies, notices and file names), approval
// payloads, status reports, the termination reason, and the working-memory
// snapshot and summary of heartbeats. A heartbeat's committed events pass
// unchanged: the arbiter redacted them before hashing them, and changing
// them here would break the chain choird stores.
func Redacted(cp rpc.ControlPlane, r *redact.Redactor) rpc.ControlPlane {
	if o, ok := cp.(outbound); ok && o.r == r {
		return cp
	}
	return outbound{ControlPlane: cp, r: r}
}

type outbound struct {
	rpc.ControlPlane
	r *redact.Redactor
}

func (o outbound) Heartbeat(ctx context.Context, req rpc.HeartbeatReq) (rpc.HeartbeatResp, error) {
	req.Snapshot = o.raw(req.Snapshot)
	req.Summary = o.raw(req.Summary)
	return o.ControlPlane.Heartbeat(ctx, req)
}

func (o outbound) RequestApproval(ctx context.Context, req rpc.ApprovalReq) (rpc.ApprovalResp, error) {
	req.RequestType = o.r.String(req.RequestType)
	req.Payload = o.raw(req.Payload)
	return o.ControlPlane.RequestApproval(ctx, req)
}

func (o outbound) ReportStatus(ctx context.Context, req rpc.StatusReq) (rpc.StatusResp, error) {
	req.Lane, req.State, req.Skill = o.r.String(req.Lane), o.r.String(req.State), o.r.String(req.Skill)
	if req.BudgetRemaining != nil {
		b := make(map[string]int64, len(req.BudgetRemaining))
		for k, v := range maps.All(req.BudgetRemaining) {
			b[o.r.String(k)] = v
		}
		req.BudgetRemaining = b
	}
	return o.ControlPlane.ReportStatus(ctx, req)
}

func (o outbound) Terminate(ctx context.Context, req rpc.TerminateReq) (rpc.TerminateResp, error) {
	req.Reason = o.r.String(req.Reason)
	return o.ControlPlane.Terminate(ctx, req)
}

func (o outbound) ExecuteHostTool(ctx context.Context, req rpc.HostToolReq) (rpc.HostToolResp, error) {
	req.Input = o.raw(req.Input)
	return o.ControlPlane.ExecuteHostTool(ctx, req)
}

func (o outbound) raw(doc []byte) []byte {
	if len(doc) == 0 {
		return doc
	}
	return o.r.JSON(doc)
}
