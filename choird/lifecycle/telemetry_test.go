package lifecycle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// logBuffer collects JSON log lines, safely for concurrent writers.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) records(t *testing.T, msg string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// Each stored batch is logged once with the session, the revisions it
// carried, the acknowledged head and the snapshot stored with it (§22.1
// heartbeat revisions); an empty heartbeat is not.
func TestHeartbeatStoredIsLogged(t *testing.T) {
	m, _, ctx := handlerManager(t, 4)
	lines := &logBuffer{}
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
	got := lines.records(t, "heartbeat stored")
	if len(got) != 2 {
		t.Fatalf("%d %q records; want 2 (the empty heartbeat is not logged):\n%s", len(got), "heartbeat stored", lines.buf.String())
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
