package rpc

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// snapshotOfSize is a valid §13.4 snapshot of exactly n bytes.
func snapshotOfSize(n int) json.RawMessage {
	doc := `{"reference_summary_edge":{"summary":"%s"},"reference_summary_core":{},"event_window_boundary":{"edge":1},"skill_state":{},"lane_state":[],"open_jobs":[]}`
	return json.RawMessage(strings.Replace(doc, "%s", strings.Repeat("s", n-len(doc)+2), 1))
}

// TestHeartbeatSnapshotBounds: a snapshot at MaxSnapshotBytes is served,
// one byte more is a 400 naming the limit, and a snapshot that is not
// exactly §13.4's members is a 400 naming the member; neither reaches the
// handler.
func TestHeartbeatSnapshotBounds(t *testing.T) {
	valid := string(snapshotOfSize(200))
	cases := []struct {
		name     string
		snapshot string
		want     string // in the refusal; "" for served
	}{
		{"at the limit", string(snapshotOfSize(MaxSnapshotBytes)), ""},
		{"valid", valid, ""},
		{"over the limit", string(snapshotOfSize(MaxSnapshotBytes + 1)), "snapshot is 1048577 bytes; the limit is 1048576 bytes"},
		{"not an object", `[1]`, "snapshot is not a JSON object"},
		{"a string", `"x"`, "snapshot is not a JSON object"},
		{"extra member", strings.Replace(valid, `"open_jobs":[]`, `"open_jobs":[],"rev":9`, 1), `the member "rev", which §13.4 does not define`},
		{"working memory", strings.Replace(valid, `"open_jobs":[]`, `"open_jobs":[],"working_memory":{}`, 1), `"working_memory"`},
		{"missing member", strings.Replace(valid, `,"open_jobs":[]`, ``, 1), `lacks the member "open_jobs"`},
		{"null member", strings.Replace(valid, `"skill_state":{}`, `"skill_state":null`, 1), `lacks the member "skill_state"`},
		{"long member name", strings.Replace(valid, `"open_jobs":[]`, `"open_jobs":[],"`+strings.Repeat("x", 500)+`":1`, 1), "…"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := &fakeHandler{}
			srv := NewServer(h, DefaultLimits(), quietLogger())
			srv.Open("s1", "a1", "t1")
			req := HeartbeatReq{Snapshot: json.RawMessage(tc.snapshot)}
			st, body := callVerb(t, srv, VerbHeartbeat, mustJSON(req))
			h.mu.Lock()
			served := len(h.calls)
			h.mu.Unlock()
			msg := body
			var eb errorBody
			if json.Unmarshal([]byte(body), &eb) == nil && eb.Error != nil {
				msg = eb.Error.Message
			}
			switch {
			case tc.want == "" && st != http.StatusOK:
				t.Errorf("heartbeat with snapshot %s: %d %.200s; want 200", tc.name, st, body)
			case tc.want != "" && (st != http.StatusBadRequest || !strings.Contains(msg, tc.want)):
				t.Errorf("heartbeat with snapshot %s: %d %.300s; want 400 containing %q", tc.name, st, body, tc.want)
			case tc.want != "" && served != 0:
				t.Errorf("heartbeat with snapshot %s reached the handler", tc.name)
			case tc.want != "" && len(body) > 1024:
				t.Errorf("the refusal is %d bytes; it should not echo the snapshot", len(body))
			}
		})
	}
}

func TestParseSnapshot(t *testing.T) {
	s, err := ParseSnapshot(snapshotOfSize(300))
	if err != nil {
		t.Fatal(err)
	}
	if string(s.EventWindowBoundary) != `{"edge":1}` || string(s.OpenJobs) != `[]` || !strings.Contains(string(s.ReferenceSummaryEdge), "summary") {
		t.Errorf("ParseSnapshot() = %+v", s)
	}
	back, _ := json.Marshal(s)
	if _, err := ParseSnapshot(back); err != nil {
		t.Errorf("ParseSnapshot(its own encoding) = %v", err)
	}
}
