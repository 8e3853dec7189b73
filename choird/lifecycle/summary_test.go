package lifecycle

import (
	"choir/testkit"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"choir/internal/rpc"
)

// summaryStore records the summaries the lifecycle hands the store.
type summaryStore struct {
	Store
	mu   sync.Mutex
	sums []json.RawMessage // one per Replicate call
}

func (s *summaryStore) Replicate(ctx context.Context, id string, r Replication) (Replicated, error) {
	s.mu.Lock()
	s.sums = append(s.sums, r.Summary)
	s.mu.Unlock()
	return s.Store.Replicate(ctx, id, r)
}

func (s *summaryStore) calls() []json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]json.RawMessage(nil), s.sums...)
}

// The final heartbeat of a graceful stop hands its session summary to the
// store with its batch, and is logged with its revisions and whether it
// brought a summary.
func TestFinalHeartbeatStoresTheSummary(t *testing.T) {
	m, _, ctx := handlerManager(t, 4)
	st := &summaryStore{Store: m.Store}
	m.Store = st
	lines := &testkit.Buffer{}
	m.Log = slog.New(slog.NewJSONHandler(lines, nil))
	log := agentLog(6)
	if _, err := m.HandleHeartbeat(ctx, beat(log, 1, 3)); err != nil {
		t.Fatal(err)
	}
	doc := json.RawMessage(`{"title":"Notes","summary":"Tidied the notes."}`)
	final := beat(log, 4, 6)
	final.Final, final.Summary = true, doc
	resp, err := m.HandleHeartbeat(ctx, final)
	if err != nil || resp.AckRev != 6 {
		t.Fatalf("final heartbeat: %+v, %v; want 6 acknowledged", resp, err)
	}
	if got := st.calls(); len(got) != 2 || got[0] != nil || string(got[1]) != string(doc) {
		t.Errorf("summaries handed to the store: %q; want none, then %s", got, doc)
	}
	recs := lines.Records(t, "final heartbeat")
	if len(recs) != 1 || recs[0]["new_rev"] != 6.0 || recs[0]["acked_rev"] != 6.0 || recs[0]["summary"] != true || recs[0]["session_id"] != "s-1" {
		t.Errorf("final heartbeat records = %v; want one, at revision 6, with a summary", recs)
	}

	// A final heartbeat without a summary (it timed out) says so.
	m2, _, ctx2 := handlerManager(t, 4)
	lines2 := &testkit.Buffer{}
	m2.Log = slog.New(slog.NewJSONHandler(lines2, nil))
	bare := beat(log, 1, 2)
	bare.Final = true
	if _, err := m2.HandleHeartbeat(ctx2, bare); err != nil {
		t.Fatal(err)
	}
	if recs := lines2.Records(t, "final heartbeat"); len(recs) != 1 || recs[0]["summary"] != false {
		t.Errorf("final heartbeat records = %v; want one without a summary", recs)
	}
}

// A summary over its bound, on a heartbeat that is not final, or not a
// JSON object is a 400 naming the field (for callers that skip
// rpc.Server's check), and nothing of that heartbeat is stored.
func TestSummaryRefusals(t *testing.T) {
	big := json.RawMessage(`{"summary":"` + strings.Repeat("s", rpc.MaxSummaryBytes) + `"}`)
	for _, tc := range []struct {
		name    string
		final   bool
		summary json.RawMessage
		want    string
	}{
		{"over 64 KiB", true, big, "summary is 65550 bytes; the limit is 65536 bytes"},
		{"not final", false, json.RawMessage(`{"title":"t"}`), "summary: only the final heartbeat"},
		{"an array", true, json.RawMessage(`[1,2]`), "summary is not a JSON object"},
		{"a number", true, json.RawMessage(`42`), "summary is not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, r, ctx := handlerManager(t, 4)
			st := &summaryStore{Store: m.Store}
			m.Store = st
			req := beat(agentLog(3), 1, 3)
			req.Final, req.Summary = tc.final, tc.summary
			_, err := m.HandleHeartbeat(ctx, req)
			if msg, ok := badRequest(err); !ok || !strings.Contains(msg, tc.want) {
				t.Errorf("HandleHeartbeat = %v; want a 400 containing %q", err, tc.want)
			}
			if n := len(st.calls()); n != 0 {
				t.Errorf("the store was handed %d batches; want none", n)
			}
			if got := replicationOf(r); got.Refusals != 1 {
				t.Errorf("refusals = %d; want 1, shown in agent status", got.Refusals)
			}
		})
	}
}
