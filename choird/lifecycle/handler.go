package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"choir/internal/config"
	"choir/internal/metrics"
	"choir/internal/rpc"
)

// The Manager is choird's side of the agent protocol for everything that
// concerns a running session.
var _ rpc.ControlPlaneHandler = (*Manager)(nil)

// MaxApprovalsPerSession bounds the REQUEST_APPROVALs of one session: each
// is stored, shown to a person and held pending with a timer.
const MaxApprovalsPerSession = 100

var errUnknownSession = rpc.Errorf(http.StatusGone, rpc.CodeFailedPrecondition, "this session has ended")

// caller finds the run of the authenticated session.
func (m *Manager) caller(ctx context.Context) (*Run, error) {
	call, ok := rpc.CallFrom(ctx)
	if !ok {
		return nil, errors.New("no authenticated call in context")
	}
	r := m.bySession(call.SessionID)
	if r == nil {
		return nil, errUnknownSession
	}
	return r, nil
}

// HandleInitHello checks the agent's identity and image against what choird
// started and answers with its bindings (§12.5, §14.2).
func (m *Manager) HandleInitHello(ctx context.Context, req rpc.InitHelloReq) (rpc.InitHelloResp, error) {
	r, err := m.caller(ctx)
	if err != nil {
		return rpc.InitHelloResp{}, err
	}
	if req.AgentID != r.AgentID || req.SessionID != r.SessionID {
		return rpc.InitHelloResp{}, rpc.Forbidden("INIT_HELLO for agent %q session %q does not match this session (agent %q)", req.AgentID, req.SessionID, r.AgentID)
	}
	if err := m.checkImage(ctx, r, req); err != nil {
		m.refuseImage(r, err)
		return rpc.InitHelloResp{}, err
	}
	_, version := m.Config()
	resp := rpc.InitHelloResp{Status: rpc.InitFresh, LeaseToken: r.token, ResourceBindings: r.bindings(), ConfigVersion: version, ModelProxy: r.ModelProxy, Tunnel: r.tunnel()}
	r.perf.brief(&resp) // run_session.go: a run session's brief
	// choird/netfetch: an interactive agent in policy mode offers choir.net.fetch
	if l, _ := m.Config(); r.perf == nil && l != nil {
		resp.NetFetch = l.Config.Agents[r.AgentID].Network.Policy()
	}
	if r.resume != nil {
		rec, err := m.recovery(ctx, r)
		if err != nil {
			m.logf(r, "INIT_HELLO of a resumed session failed", "error", err.Error())
			return rpc.InitHelloResp{}, err
		}
		resp.Status, resp.Recovery = rpc.InitRecover, rec
	}
	r.mu.Lock()
	first := r.state == StateStarting
	if first {
		r.state = StateRunning
	}
	r.lastHeartbeat = m.now()
	r.mu.Unlock()
	if first {
		close(r.ready)
		m.imageAccepted(r.AgentID)
		m.logf(r, "agent said hello", "image_version", req.ImageVersion, "status", resp.Status)
		if m.SessionOpened != nil && r.perf == nil {
			m.SessionOpened(r.AgentID, r.SessionID)
		}
	}
	return resp, nil
}

// HandleSecrets grants the secrets of the session's bound resources only; a
// request for anything else is refused, logged by name, and nothing is sent.
func (m *Manager) HandleSecrets(ctx context.Context, req rpc.SecretReq) (rpc.SecretResp, error) {
	r, err := m.caller(ctx)
	if err != nil {
		return rpc.SecretResp{}, err
	}
	m.opening(r) // liveness.go: a sign of life until the first heartbeat
	defer m.opening(r)
	l, _ := m.Config()
	b := r.bindings()
	if r.ModelProxy { // choird holds the model keys (choird/modelproxy.go)
		b.LLM, b.CoreLLM, b.SummaryLLM = "", "", ""
	}
	bound := l.Config.BoundSecrets(b.LLM, b.CoreLLM, b.SummaryLLM, b.VoiceProfile, b.GitIdentity, b.Notion, b.Email)
	bound = append(bound, m.mcpSecrets(ctx, r, l.Config)...) // mcp_secrets.go
	bound = r.perf.secrets(bound, l.Config)                  // run_session.go: a run's may be fewer
	names := req.Resources
	if len(names) == 0 {
		names = bound
	}
	var refused []string
	for _, n := range names {
		if !slices.Contains(bound, n) {
			refused = append(refused, n)
		}
	}
	if len(refused) > 0 {
		m.logf(r, "secret request refused", "names", strings.Join(refused, ","))
		return rpc.SecretResp{}, rpc.Forbidden("secrets %s are not bound to this session", strings.Join(refused, ", "))
	}
	out := make(map[string]string, len(names))
	for _, n := range names {
		if v, ok := l.Secrets[n]; ok {
			out[n] = v
		}
	}
	return rpc.SecretResp{Secrets: out}, nil
}

// HandleHeartbeat records liveness in memory (a refused heartbeat still
// shows the agent alive; the store gets it in batches, see liveness.go)
// and replicates committed events and the snapshot (see replicate): the
// answer acknowledges the revision choird holds.
func (m *Manager) HandleHeartbeat(ctx context.Context, req rpc.HeartbeatReq) (rpc.HeartbeatResp, error) {
	r, err := m.caller(ctx)
	if err != nil {
		return rpc.HeartbeatResp{}, err
	}
	metrics.HeartbeatsReceived.With(r.AgentID).Inc()
	now := m.now()
	r.mu.Lock()
	r.lastHeartbeat, r.beaten = now, true
	r.configVersion = req.ConfigVersion
	r.beating++
	r.mu.Unlock()
	got, err := m.replicate(ctx, r, req, now)
	r.mu.Lock()
	r.beating--
	if done := m.now(); done.After(r.lastHeartbeat) {
		r.lastHeartbeat = done // it waited on choird (a slow store), not the other way
	}
	r.mu.Unlock()
	if err != nil {
		return rpc.HeartbeatResp{}, err
	}
	_, version := m.Config()
	return rpc.HeartbeatResp{AckRev: got.Head.Rev, AckHash: got.Head.Hash, SnapshotRev: max(got.SnapshotRev, 0), ConfigVersionLatest: version}, nil
}

// HandleStatus keeps each lane's last report for `agent status`: the edge
// and at most max_core_jobs core jobs (the running config's, at most
// rpc.MaxLanes-1), each report at most rpc.MaxStatusBytes (rpc.Server
// checks the name and size before; they are checked again here for callers
// that skip it). A report of one lane more is refused with a 400 naming the
// lane and the limit, logged, and nothing is stored.
func (m *Manager) HandleStatus(ctx context.Context, req rpc.StatusReq) (rpc.StatusResp, error) {
	r, err := m.caller(ctx)
	if err != nil {
		return rpc.StatusResp{}, err
	}
	if !rpc.ValidLane(req.Lane) {
		m.logf(r, "status refused: not a lane", "lane", clip(req.Lane))
		return rpc.StatusResp{}, rpc.Errorf(http.StatusBadRequest, rpc.CodeBadRequest, "lane %q is not a lane: want %q or %q<job-name>", clip(req.Lane), rpc.LaneEdge, rpc.LaneCorePrefix)
	}
	if n, _ := json.Marshal(req); len(n) > rpc.MaxStatusBytes {
		m.logf(r, "status refused: too large", "lane", req.Lane, "bytes", len(n), "limit", rpc.MaxStatusBytes)
		return rpc.StatusResp{}, rpc.Errorf(http.StatusBadRequest, rpc.CodeBadRequest, "status of lane %s is %d bytes; the limit is %d bytes", req.Lane, len(n), rpc.MaxStatusBytes)
	}
	maxCores := m.maxCoreLanes()
	r.mu.Lock()
	_, known := r.lanes[req.Lane]
	cores := 0
	for name := range r.lanes {
		if strings.HasPrefix(name, rpc.LaneCorePrefix) {
			cores++
		}
	}
	if !known && req.Lane != rpc.LaneEdge && cores >= maxCores {
		r.mu.Unlock()
		m.logf(r, "status refused: too many lanes", "lane", req.Lane, "core_lanes", cores, "limit", maxCores)
		return rpc.StatusResp{}, rpc.Errorf(http.StatusBadRequest, rpc.CodeBadRequest,
			"lane %s would be core job %d of this session; the limit is %d (max_core_jobs): report only the edge and the session's core jobs", req.Lane, cores+1, maxCores)
	}
	r.lanes[req.Lane] = req
	r.mu.Unlock()
	return rpc.StatusResp{Ack: true}, nil
}

// maxCoreLanes is how many core lanes a session may report: the running
// config's max_core_jobs (a session spawns no more), at most rpc.MaxLanes-1.
func (m *Manager) maxCoreLanes() int {
	n := config.DefaultTunables().Budgets.MaxCoreJobs
	if l, _ := m.Config(); l != nil && l.Config != nil && l.Config.Budgets.MaxCoreJobs > 0 {
		n = l.Config.Budgets.MaxCoreJobs
	}
	return min(n, rpc.MaxLanes-1)
}

// clip shortens what a refusal echoes or logs.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// HandleTerminate notes that the agent is exiting on its own; the session
// ends as stopped when its container exits.
func (m *Manager) HandleTerminate(ctx context.Context, req rpc.TerminateReq) (rpc.TerminateResp, error) {
	r, err := m.caller(ctx)
	if err != nil {
		return rpc.TerminateResp{}, err
	}
	r.mu.Lock()
	r.terminating = req.Reason
	if r.terminating == "" {
		r.terminating = "no reason given"
	}
	r.mu.Unlock()
	m.logf(r, "agent terminating", "reason", req.Reason)
	return rpc.TerminateResp{Ack: true}, nil
}

// HandleFetchConfig sends the whole hot-reloadable config when the agent is
// behind (§16.3).
func (m *Manager) HandleFetchConfig(ctx context.Context, req rpc.ConfigReq) (rpc.ConfigResp, error) {
	r, err := m.caller(ctx)
	if err != nil {
		return rpc.ConfigResp{}, err
	}
	m.opening(r) // liveness.go
	defer m.opening(r)
	l, version := m.Config()
	if req.CurrentConfigVersion >= version {
		return rpc.ConfigResp{ConfigVersion: version}, nil
	}
	b := r.bindings()
	dyn := l.Config.DynamicFor(version, b.LLM, b.CoreLLM, b.SummaryLLM, b.VoiceProfile, b.GitIdentity, b.Notion, b.Email)
	r.perf.budgets(&dyn) // run_session.go: a run's own budgets
	blob, err := json.Marshal(dyn)
	if err != nil {
		return rpc.ConfigResp{}, err
	}
	return rpc.ConfigResp{ConfigVersion: version, Config: blob}, nil
}

// HandleApproval stores a proposal for a human to decide (§8.10); the
// decision reaches the agent later as an approval push event.
func (m *Manager) HandleApproval(ctx context.Context, req rpc.ApprovalReq) (rpc.ApprovalResp, error) {
	r, err := m.caller(ctx)
	if err != nil {
		return rpc.ApprovalResp{}, err
	}
	if req.RequestType == "" {
		return rpc.ApprovalResp{}, rpc.Errorf(http.StatusBadRequest, rpc.CodeBadRequest, "request_type is required")
	}
	if m.RequestApproval == nil {
		return rpc.ApprovalResp{}, rpc.Errorf(http.StatusNotImplemented, rpc.CodeUnavailable, "approvals are not available in this choird")
	}
	r.mu.Lock()
	over := r.approvals >= MaxApprovalsPerSession
	if !over {
		r.approvals++
	}
	r.mu.Unlock()
	if over {
		m.logf(r, "approval refused: too many", "request_type", req.RequestType, "limit", MaxApprovalsPerSession)
		return rpc.ApprovalResp{}, rpc.Errorf(http.StatusTooManyRequests, rpc.CodeRateLimited,
			"this session has requested %d approvals, the limit per session: wait for decisions (choirctl approval list) or start a new session", MaxApprovalsPerSession)
	}
	id, status, err := m.RequestApproval(ctx, r.AgentID, r.SessionID, req.RequestType, req.Payload)
	if err != nil {
		return rpc.ApprovalResp{}, err
	}
	m.logf(r, "approval requested", "approval_id", id, "request_type", req.RequestType)
	return rpc.ApprovalResp{ApprovalID: id, Status: status}, nil
}
