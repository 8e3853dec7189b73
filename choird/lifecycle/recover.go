package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"choir/internal/ctl"
	"choir/internal/rpc"
)

// Recovery (§13.2). `agent start` resumes the agent's last session when it
// has ended (stopped or crashed) with events stored, unless the start asks
// for a fresh one or that session ended because a session budget was
// spent (resuming it would end at once). The session keeps its id, its
// log and its snapshots; it is active again with the new start's bindings
// and leases, a new container and a new lease token. At INIT_HELLO the
// agent learns the head of the stored log and the newest snapshot, reads
// the tail it needs with FETCH_EVENTS, verifies it, and rehydrates to the
// last acknowledged revision; its first heartbeat continues from there.

// EndedSession is an agent's last session once it has ended: what a start
// may resume.
type EndedSession struct {
	SessionID string
	Status    string // stopped or crashed
	EndReason string
	Resumes   int
	Head      rpc.ChainHead
}

// ErrNoSession reports that an agent has no ended session to resume.
var ErrNoSession = errors.New("no ended session")

// BudgetSpentReason starts the TERMINATE_SELF reason of a session whose
// budget is spent (§7.6); such a session is not resumed.
const BudgetSpentReason = "session budget spent"

// resumeInfo is what a resumed run knows of the session it continues.
type resumeInfo struct {
	from    string // how the last run ended
	rev     int64  // the stored head when it resumed
	resumes int
}

// resumable picks the session a start resumes: the agent's last one when
// it ended with events stored and not for a spent budget. ok is false for
// a fresh start; an error means the store could not say (a start then
// fails rather than silently forgetting the session).
func (m *Manager) resumable(ctx context.Context, agentID string) (EndedSession, bool, error) {
	e, err := m.Store.LastEnded(ctx, agentID)
	switch {
	case errors.Is(err, ErrNoSession):
		return EndedSession{}, false, nil
	case err != nil:
		return EndedSession{}, false, fmt.Errorf("find %s's last session to resume it: %w (start with --fresh to begin a new session instead)", agentID, err)
	case e.Head.Rev == 0:
		return e, false, nil
	case strings.Contains(e.EndReason, BudgetSpentReason):
		m.Log.Info("not resuming a session whose budget was spent", "agent_id", agentID, "session_id", e.SessionID)
		return e, false, nil
	}
	return e, true, nil
}

// recovery is INIT_HELLO's answer to a resumed session: the stored head
// and the newest snapshot.
func (m *Manager) recovery(ctx context.Context, r *Run) (*rpc.Recovery, error) {
	rec, err := m.Store.Recovery(ctx, r.SessionID)
	if err != nil {
		return nil, rpc.Errorf(http.StatusServiceUnavailable, rpc.CodeUnavailable, "read the session's stored state to resume it: %v", err)
	}
	rec.Resumes = r.resume.resumes
	return &rec, nil
}

// HandleFetchEvents pages the session's stored log for a recovering agent:
// at most rpc.HeartbeatMaxEvents events after a revision the log holds,
// about rpc.HeartbeatMaxBytes of them, with the hash they chain from.
func (m *Manager) HandleFetchEvents(ctx context.Context, req rpc.FetchEventsReq) (rpc.FetchEventsResp, error) {
	r, err := m.caller(ctx)
	if err != nil {
		return rpc.FetchEventsResp{}, err
	}
	n := req.Max
	if n <= 0 || n > rpc.HeartbeatMaxEvents {
		n = rpc.HeartbeatMaxEvents
	}
	page, err := m.Store.EventsPage(ctx, r.SessionID, req.AfterRev, n)
	if errors.Is(err, ErrNoSession) {
		return rpc.FetchEventsResp{}, rpc.Errorf(http.StatusNotFound, rpc.CodeBadRequest, "the session's log does not hold revision %d", req.AfterRev)
	}
	if err != nil {
		return rpc.FetchEventsResp{}, rpc.Errorf(http.StatusServiceUnavailable, rpc.CodeUnavailable, "read the session's log: %v", err)
	}
	size := 0
	for i, e := range page.Events {
		size += len(e.Payload) + 256
		if i > 0 && size > rpc.HeartbeatMaxBytes {
			page.Events = page.Events[:i]
			break
		}
	}
	return page, nil
}

// resumed is what `agent status` says of a resumed session.
func (r *Run) resumed() *ctl.Resumed {
	if r.resume == nil {
		return nil
	}
	return &ctl.Resumed{Rev: r.resume.rev, Resumes: r.resume.resumes, From: r.resume.from}
}
