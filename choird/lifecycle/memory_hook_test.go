package lifecycle

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"choir/internal/rpc"
)

// Every end of a session, stopped or crashed, tells SessionClosed once,
// with the agent, the session and how it ended, after the end is
// recorded; a session ended twice tells it once.
func TestSessionEndTellsSessionClosedOnce(t *testing.T) {
	m, r, _ := handlerManager(t, 1)
	m.StopRestarts() // a crash schedules no restart here
	var mu sync.Mutex
	var told []string
	recorded := map[string]string{}
	m.SessionClosed = func(agentID, sessionID, status string) {
		rec := m.Store.(*memStore).status(sessionID)
		mu.Lock()
		defer mu.Unlock()
		told = append(told, fmt.Sprintf("%s/%s/%s", agentID, sessionID, status))
		recorded[sessionID] = rec
	}
	m.Store.(*memStore).CreateSession(t.Context(), SessionRecord{SessionID: "s-1", AgentID: "a-1", Status: StatusActive})
	m.end(r, StatusStopped, "agent stop")
	m.end(r, StatusStopped, "agent stop") // already ended: nothing
	r2 := &Run{AgentID: "a-1", SessionID: "s-2", state: StateRunning,
		ready: make(chan struct{}), exited: make(chan struct{}), lanes: map[string]rpc.StatusReq{}}
	m.register(r2)
	m.Store.(*memStore).CreateSession(t.Context(), SessionRecord{SessionID: "s-2", AgentID: "a-1", Status: StatusActive})
	m.end(r2, StatusCrashed, "heartbeat lost")

	want := []string{"a-1/s-1/stopped", "a-1/s-2/crashed"}
	waitUntil2(t, "SessionClosed told of both ends", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(told) >= len(want)
	})
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(told)
	if !slices.Equal(told, want) {
		t.Errorf("SessionClosed was told %v; want %v, once each", told, want)
	}
	if recorded["s-1"] != StatusStopped || recorded["s-2"] != StatusCrashed {
		t.Errorf("session status when SessionClosed ran = %v; want each end recorded first", recorded)
	}
}
