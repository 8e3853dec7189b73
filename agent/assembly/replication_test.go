package assembly

import (
	"encoding/json"
	"testing"

	"choir/internal/chain"
	"choir/internal/rpc"
	"choir/testkit/openaitest"
)

// TestSnapshotIsSection134AtItsRevision: after a turn and a graceful stop,
// the final heartbeat carries the lanes' snapshot with exactly §13.4's
// members, taken at the log's last revision (it describes that revision,
// which the same heartbeat brings choird), and the events replicated are
// the arbiter's whole chain.
func TestSnapshotIsSection134AtItsRevision(t *testing.T) {
	a := startAgent(t)
	a.model.Expect(openaitest.Chat().ReplyText("Hello."))
	a.say("m1", "hi")
	a.waitReply()
	a.stop()

	evs := a.events()
	cevs := make([]chain.Event, len(evs))
	for i, e := range evs {
		cevs[i] = chain.Event(e)
	}
	if err := chain.Verify("", cevs); err != nil || len(evs) < 2 {
		t.Fatalf("replicated %d events, %v; want the turn's events, verifying", len(evs), err)
	}
	a.cd.mu.Lock()
	defer a.cd.mu.Unlock()
	last := a.cd.heartbeats[len(a.cd.heartbeats)-1]
	if !last.Final || len(last.Snapshot) == 0 {
		t.Fatalf("the last heartbeat: final %v, snapshot %d bytes; want a final one with the snapshot", last.Final, len(last.Snapshot))
	}
	if last.SnapshotRev != int64(len(evs)) || last.NewRev != last.SnapshotRev {
		t.Errorf("the final snapshot describes revision %d, the heartbeat reaches %d; want both %d, the last event", last.SnapshotRev, last.NewRev, len(evs))
	}
	snap, err := rpc.ParseSnapshot(last.Snapshot)
	if err != nil {
		t.Fatalf("the snapshot is not §13.4's: %v (%s)", err, last.Snapshot)
	}
	var boundary map[string]int64
	if err := json.Unmarshal(snap.EventWindowBoundary, &boundary); err != nil || boundary["edge"] < 1 || boundary["edge"] > last.SnapshotRev {
		t.Errorf("event_window_boundary = %s; want the edge's oldest windowed revision, within 1..%d", snap.EventWindowBoundary, last.SnapshotRev)
	}
	var ls struct {
		Lanes []rpc.StatusReq `json:"lanes"`
		Used  struct {
			Tokens int64 `json:"tokens"`
		} `json:"used"`
	}
	if err := json.Unmarshal(snap.LaneState, &ls); err != nil || len(ls.Lanes) == 0 || ls.Lanes[0].Lane != "edge" || ls.Used.Tokens == 0 {
		t.Errorf("lane_state = %s; want the edge's status and the tokens the session spent", snap.LaneState)
	}
}
