package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"choir/choird/lease"
	"choir/internal/config"
	"choir/internal/rpc"
)

// handlerManager is a Manager with one running session "s-1" of agent
// "a-1", no engine, and max_core_jobs set to maxCores.
func handlerManager(t *testing.T, maxCores int) (*Manager, *Run, context.Context) {
	t.Helper()
	c := config.Default()
	c.Budgets.MaxCoreJobs = maxCores
	loaded := &config.Loaded{Config: &c}
	m := &Manager{Docker: &stubDocker{}, Store: newMemStore(), Sessions: &stubSessions{}, Leases: lease.NewTable(), Logs: stubLogs{},
		Config: func() (*config.Loaded, int64) { return loaded, 1 }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	r := &Run{AgentID: "a-1", SessionID: "s-1", state: StateRunning,
		ready: make(chan struct{}), exited: make(chan struct{}), lanes: map[string]rpc.StatusReq{}}
	m.register(r)
	return m, r, rpc.WithCall(context.Background(), rpc.Call{RequestID: "r", SessionID: "s-1"})
}

func lanesOf(r *Run) map[string]rpc.StatusReq {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]rpc.StatusReq{}
	for k, v := range r.lanes {
		out[k] = v
	}
	return out
}

func badRequest(err error) (string, bool) {
	var rerr *rpc.Error
	if !errors.As(err, &rerr) || rerr.Status != http.StatusBadRequest {
		return "", false
	}
	return rerr.Message, true
}

// TestStatusKeepsOnlyTheSessionsLanes: the edge and max_core_jobs core
// lanes are kept (a lane may report again and again); one core lane more
// is refused with a 400 naming it and the limit, and nothing changes.
func TestStatusKeepsOnlyTheSessionsLanes(t *testing.T) {
	m, r, ctx := handlerManager(t, 3)
	for _, lane := range []string{"core:a", "core:b", "edge", "core:c", "core:a", "edge"} {
		if _, err := m.HandleStatus(ctx, rpc.StatusReq{Lane: lane, State: "RUNNING"}); err != nil {
			t.Fatalf("HandleStatus(%s) = %v; want accepted", lane, err)
		}
	}
	before := lanesOf(r)
	_, err := m.HandleStatus(ctx, rpc.StatusReq{Lane: "core:d", State: "RUNNING"})
	msg, ok := badRequest(err)
	if !ok || !strings.Contains(msg, "core:d") || !strings.Contains(msg, "the limit is 3 (max_core_jobs)") {
		t.Errorf("a 4th core lane with max_core_jobs 3 = %v; want 400 naming core:d and the limit 3", err)
	}
	if after := lanesOf(r); len(after) != len(before) || len(after) != 4 {
		t.Errorf("lanes after the refusal = %d; want the 4 kept before", len(after))
	}
	// Known lanes still update.
	if _, err := m.HandleStatus(ctx, rpc.StatusReq{Lane: "core:b", State: "DONE"}); err != nil {
		t.Errorf("update of a kept lane = %v", err)
	}
	if got := lanesOf(r)["core:b"].State; got != "DONE" {
		t.Errorf("core:b state = %q; want DONE", got)
	}
}

// TestStatusLaneLimitFollowsConfig: the limit is the running config's
// max_core_jobs, capped at rpc.MaxLanes-1.
func TestStatusLaneLimitFollowsConfig(t *testing.T) {
	for _, tc := range []struct{ configured, want int }{{1, 1}, {4, 4}, {1000, rpc.MaxLanes - 1}} {
		m, r, ctx := handlerManager(t, tc.configured)
		for i := range tc.want {
			if _, err := m.HandleStatus(ctx, rpc.StatusReq{Lane: fmt.Sprintf("core:j%d", i)}); err != nil {
				t.Fatalf("max_core_jobs %d: core lane %d = %v; want accepted", tc.configured, i+1, err)
			}
		}
		if _, err := m.HandleStatus(ctx, rpc.StatusReq{Lane: "core:one-more"}); err == nil {
			t.Errorf("max_core_jobs %d: core lane %d accepted; want refused", tc.configured, tc.want+1)
		}
		if n := len(lanesOf(r)); n != tc.want {
			t.Errorf("max_core_jobs %d: %d lanes kept; want %d", tc.configured, n, tc.want)
		}
	}
}

// TestStatusRefusesBadLanesAndSizes: names that are no lane and reports
// over rpc.MaxStatusBytes are 400s that store nothing; a report of exactly
// the limit is kept.
func TestStatusRefusesBadLanesAndSizes(t *testing.T) {
	m, r, ctx := handlerManager(t, 4)
	atLimit := rpc.StatusReq{Lane: "edge", State: "S"}
	raw, _ := json.Marshal(atLimit)
	atLimit.Skill = strings.Repeat("k", rpc.MaxStatusBytes-len(raw)-len(`,"skill":""`))
	over := atLimit
	over.Skill += "k"
	for _, tc := range []struct {
		req  rpc.StatusReq
		want string
	}{
		{rpc.StatusReq{Lane: ""}, "is not a lane"},
		{rpc.StatusReq{Lane: "EDGE"}, "is not a lane"},
		{rpc.StatusReq{Lane: "core:a/b"}, "is not a lane"},
		{rpc.StatusReq{Lane: "core:" + strings.Repeat("x", 65)}, "is not a lane"},
		{rpc.StatusReq{Lane: "memory"}, "is not a lane"},
		{over, fmt.Sprintf("status of lane edge is %d bytes; the limit is %d bytes", rpc.MaxStatusBytes+1, rpc.MaxStatusBytes)},
	} {
		_, err := m.HandleStatus(ctx, tc.req)
		if msg, ok := badRequest(err); !ok || !strings.Contains(msg, tc.want) {
			t.Errorf("HandleStatus(lane %.20q) = %v; want 400 containing %q", tc.req.Lane, err, tc.want)
		}
	}
	if n := len(lanesOf(r)); n != 0 {
		t.Errorf("%d lanes stored after refusals; want none", n)
	}
	if _, err := m.HandleStatus(ctx, atLimit); err != nil {
		t.Errorf("a status of exactly %d bytes = %v; want kept", rpc.MaxStatusBytes, err)
	}
}

// TestApprovalsPerSessionBounded: a session may request
// MaxApprovalsPerSession approvals; the next is a 429 that reaches no
// person.
func TestApprovalsPerSessionBounded(t *testing.T) {
	m, _, ctx := handlerManager(t, 4)
	asked := 0
	m.RequestApproval = func(context.Context, string, string, string, json.RawMessage) (string, string, error) {
		asked++
		return fmt.Sprintf("ap-%d", asked), rpc.ApprovalPending, nil
	}
	for i := range MaxApprovalsPerSession {
		if _, err := m.HandleApproval(ctx, rpc.ApprovalReq{RequestType: "tool"}); err != nil {
			t.Fatalf("approval %d = %v; want accepted", i+1, err)
		}
	}
	_, err := m.HandleApproval(ctx, rpc.ApprovalReq{RequestType: "tool"})
	var rerr *rpc.Error
	if !errors.As(err, &rerr) || rerr.Status != http.StatusTooManyRequests || !strings.Contains(rerr.Message, fmt.Sprint(MaxApprovalsPerSession)) {
		t.Errorf("approval %d = %v; want 429 naming the limit", MaxApprovalsPerSession+1, err)
	}
	if asked != MaxApprovalsPerSession {
		t.Errorf("approvals passed on = %d; want %d", asked, MaxApprovalsPerSession)
	}
}
