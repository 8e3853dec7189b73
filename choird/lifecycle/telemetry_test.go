package lifecycle

import (
	"choir/testkit"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"choir/internal/config"
	"choir/internal/rpc"
)

// Each stored batch is logged once with the session, the revisions it
// carried, the acknowledged head and the snapshot stored with it (§22.1
// heartbeat revisions); an empty heartbeat is not.
func TestHeartbeatStoredIsLogged(t *testing.T) {
	m, _, ctx := handlerManager(t, 4)
	lines := &testkit.Buffer{}
	m.Log = slog.New(slog.NewJSONHandler(lines, nil))
	log := agentLog(6)
	if _, err := m.HandleHeartbeat(ctx, beat(log, 1, 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.HandleHeartbeat(ctx, beat(log, 4, 3)); err != nil { // nothing new
		t.Fatal(err)
	}
	req := beat(log, 4, 6)
	req.Snapshot = json.RawMessage(`{"reference_summary_edge":{},"reference_summary_core":{},"event_window_boundary":{"edge":1},"skill_state":{},"lane_state":[],"open_jobs":[]}`)
	req.SnapshotRev = 5
	if _, err := m.HandleHeartbeat(ctx, req); err != nil {
		t.Fatal(err)
	}
	got := lines.Records(t, "heartbeat stored")
	if len(got) != 2 {
		t.Fatalf("%d %q records; want 2 (the empty heartbeat is not logged):\n%s", len(got), "heartbeat stored", lines.String())
	}
	for i, want := range []string{
		"session=s-1 agent=a-1 from=1 to=3 events=3 acked=3 snapshot=<nil>",
		"session=s-1 agent=a-1 from=4 to=6 events=3 acked=6 snapshot=5",
	} {
		r := got[i]
		s := fmt.Sprintf("session=%v agent=%v from=%v to=%v events=%v acked=%v snapshot=%v",
			r["session_id"], r["agent_id"], r["from_rev"], r["to_rev"], r["events"], r["acked_rev"], r["snapshot_rev"])
		if s != want {
			t.Errorf("record %d: %s; want %s", i, s, want)
		}
	}
}

// What a lane reports (its tokens, tool calls and budget left) is what
// `agent status` shows, with the config version the agent runs.
func TestStatusCarriesLaneUsage(t *testing.T) {
	m, _, ctx := handlerManager(t, 4)
	c := config.Default()
	c.Agents = map[string]config.Agent{"a-1": {}}
	loaded := &config.Loaded{Config: &c}
	m.Config = func() (*config.Loaded, int64) { return loaded, 3 }
	if _, err := m.HandleHeartbeat(ctx, rpc.HeartbeatReq{ConfigVersion: 3}); err != nil {
		t.Fatal(err)
	}
	for _, st := range []rpc.StatusReq{
		{Lane: "edge", State: "EDGE_IDLE", BudgetRemaining: map[string]int64{"total_session_tokens": 998766}, TokensUsed: 1234, ToolCalls: 5},
		{Lane: "core:j", State: "CORE_REASONING", BudgetRemaining: map[string]int64{"per_job_max_steps": 49}, TokensUsed: 200, ToolCalls: 1},
	} {
		if _, err := m.HandleStatus(ctx, st); err != nil {
			t.Fatalf("HandleStatus(%s) = %v", st.Lane, err)
		}
	}
	st, err := m.Status("a-1")
	if err != nil {
		t.Fatal(err)
	}
	edge, core := st.Lanes["edge"], st.Lanes["core:j"]
	if st.ConfigVersion != 3 || edge.TokensUsed != 1234 || edge.ToolCalls != 5 || edge.BudgetRemaining["total_session_tokens"] != 998766 ||
		core.TokensUsed != 200 || core.ToolCalls != 1 || core.BudgetRemaining["per_job_max_steps"] != 49 {
		t.Errorf("Status = config version %d, lanes %+v; want version 3 and the lanes as reported", st.ConfigVersion, st.Lanes)
	}
}
