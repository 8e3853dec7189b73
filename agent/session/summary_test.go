package session

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/internal/chain"
	"choir/internal/rpc"
	"choir/testkit"
)

const summaryDoc = `{"title":"Notes","summary":"Tidied the notes.","decisions":[],"open_items":[],"facts":[]}`

// stopWith runs a session against a fresh fake choird, makes it stop as
// how says ("shutdown": choird's push; "end": End; "signal": Run's
// context), and returns the fake, the order the hooks ran in and the log.
func stopWith(t *testing.T, how string, summary func(context.Context) json.RawMessage) (*choird, []string, string) {
	t.Helper()
	cd := &choird{latest: 1, changed: make(chan struct{}, 1)}
	logs := &testkit.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	srv, cp := serveChoird(t, cd, "a-1", log)
	s := New(cp, Identity{AgentID: "a-1", SessionID: "s-1"}, rpc.ImageInfo{}, 5*time.Millisecond, log)
	var mu sync.Mutex
	var order []string
	s.Hooks.Stopping = func(context.Context) { mu.Lock(); order = append(order, "stopping"); mu.Unlock() }
	s.Hooks.Summary = func(ctx context.Context) json.RawMessage {
		mu.Lock()
		order = append(order, "summary")
		mu.Unlock()
		return summary(ctx)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	cd.waitFor(t, "a heartbeat", func() bool { return cd.count(rpc.VerbHeartbeat) >= 1 })
	switch how {
	case "shutdown":
		srv.Publish("s-1", rpc.EventShutdown, map[string]string{"reason": "agent stop"})
	case "end":
		s.End("the total_session_tokens budget (10) is spent")
	case "signal":
		cancel()
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v; want nil after a %s", err, how)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("Run did not end after a %s", how)
	}
	mu.Lock()
	defer mu.Unlock()
	return cd, order, logs.String()
}

// finalBeats checks that the last heartbeat is the only final one and that
// no earlier heartbeat carried a summary; it returns the final one.
func finalBeat(t *testing.T, cd *choird) rpc.HeartbeatReq {
	t.Helper()
	cd.mu.Lock()
	defer cd.mu.Unlock()
	n := len(cd.heartbeats)
	for i, hb := range cd.heartbeats[:n-1] {
		if hb.Final || len(hb.Summary) > 0 {
			t.Errorf("heartbeat %d: final %v, summary %s; want neither before the last", i, hb.Final, hb.Summary)
		}
	}
	if !cd.heartbeats[n-1].Final {
		t.Fatalf("the last heartbeat is not final")
	}
	return cd.heartbeats[n-1]
}

// At a graceful stop (choird's shutdown push, or End from inside the
// agent) the summary is made once the lanes are at their safe point, and
// the final heartbeat carries it to choird (§11.8 steps 2-4).
func TestFinalHeartbeatCarriesTheSummary(t *testing.T) {
	for _, how := range []string{"shutdown", "end"} {
		t.Run(how, func(t *testing.T) {
			cd, order, _ := stopWith(t, how, func(context.Context) json.RawMessage { return json.RawMessage(summaryDoc) })
			if strings.Join(order, ",") != "stopping,summary" {
				t.Errorf("hooks ran as %v; want the safe point, then the summary", order)
			}
			if got := finalBeat(t, cd); string(got.Summary) != summaryDoc {
				t.Errorf("final heartbeat summary = %s; want %s", got.Summary, summaryDoc)
			}
		})
	}
}

// No summary goes out when there is none to send: the hook had none (it
// timed out, say), the agent was stopped by a signal, or the summary could
// not pass choird's bounds. The stop completes with a final heartbeat all
// the same, and the log says why.
func TestFinalHeartbeatWithoutSummary(t *testing.T) {
	big := json.RawMessage(`{"summary":"` + strings.Repeat("s", rpc.MaxSummaryBytes) + `"}`)
	for _, tc := range []struct {
		name, how string
		summary   json.RawMessage
		hooks     string // the order the hooks ran in
		log       string
	}{
		{"hook has none", "shutdown", nil, "stopping,summary", ""},
		{"signal", "signal", json.RawMessage(summaryDoc), "stopping", "session summary skipped: the agent was stopped by a signal"},
		{"over the bound", "shutdown", big, "stopping,summary", "session summary dropped"},
		{"not an object", "end", json.RawMessage(`["a"]`), "stopping,summary", "summary is not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cd, order, log := stopWith(t, tc.how, func(context.Context) json.RawMessage { return tc.summary })
			if strings.Join(order, ",") != tc.hooks {
				t.Errorf("hooks ran as %v; want %s", order, tc.hooks)
			}
			if got := finalBeat(t, cd); len(got.Summary) > 0 {
				t.Errorf("final heartbeat summary = %.80s; want none", got.Summary)
			}
			if !strings.Contains(log, tc.log) {
				t.Errorf("log lacks %q:\n%s", tc.log, log)
			}
		})
	}
}

// refusingChoird refuses any heartbeat that carries a summary with a 400,
// as a choird with a smaller bound would.
type refusingChoird struct{ *storingChoird }

func (c refusingChoird) Heartbeat(ctx context.Context, req rpc.HeartbeatReq) (rpc.HeartbeatResp, error) {
	if len(req.Summary) > 0 {
		c.mu.Lock()
		c.beats = append(c.beats, req)
		c.mu.Unlock()
		return rpc.HeartbeatResp{}, rpc.Errorf(http.StatusBadRequest, rpc.CodeBadRequest, "summary is 80 bytes; the limit is 10 bytes")
	}
	return c.storingChoird.Heartbeat(ctx, req)
}

// A summary choird refuses never holds the events back: the final
// heartbeat goes again without it, and choird holds every event.
func TestRefusedSummaryDoesNotHoldTheEventsBack(t *testing.T) {
	l := &agentLog{size: 100}
	l.commit(5)
	c := &storingChoird{}
	s, _ := replicating(c, l)
	s.cp = refusingChoird{c}
	s.flush(context.Background(), json.RawMessage(summaryDoc))
	if got := c.storedRevs(); got != 5 {
		t.Fatalf("choird holds %d events; want all 5", got)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.beats)
	if n < 2 || len(c.beats[n-2].Summary) == 0 || len(c.beats[n-1].Summary) != 0 || !c.beats[n-1].Final {
		t.Errorf("heartbeats: %d; want the final one with the summary refused, then sent again without it", n)
	}
}

// The events the lanes committed reach choird before the session summary
// is asked for, which may take session_summary_timeout_ms: an agent killed
// while the summary is made loses only the summary.
func TestEventsGoBeforeTheSummary(t *testing.T) {
	cd := &choird{latest: 1, changed: make(chan struct{}, 1)}
	log := slog.New(slog.DiscardHandler)
	srv, cp := serveChoird(t, cd, "a-1", log)
	s := New(cp, Identity{AgentID: "a-1", SessionID: "s-1"}, rpc.ImageInfo{}, time.Hour, log)
	var mu sync.Mutex
	var evs []rpc.Event
	commit := func(n int) { // n events, chained
		mu.Lock()
		defer mu.Unlock()
		for range n {
			e := rpc.Event{Rev: int64(len(evs) + 1), Type: "UserMsg", Lane: "edge", Payload: json.RawMessage(`{"text":"x"}`), Time: time.Now().UTC()}
			prev := ""
			if len(evs) > 0 {
				prev = evs[len(evs)-1].Hash
			}
			e.Hash, _ = chain.Hash(prev, chain.Event(e))
			evs = append(evs, e)
		}
	}
	s.Hooks.Events = func(after int64, max int) []rpc.Event {
		mu.Lock()
		defer mu.Unlock()
		return append([]rpc.Event(nil), evs[after:min(int64(len(evs)), after+int64(max))]...)
	}
	s.Hooks.Head = func() int64 { mu.Lock(); defer mu.Unlock(); return int64(len(evs)) }
	s.Hooks.HashAt = func(rev int64) string {
		mu.Lock()
		defer mu.Unlock()
		if rev == 0 {
			return ""
		}
		return evs[rev-1].Hash
	}
	s.Hooks.Stopping = func(context.Context) { commit(3) } // the lanes' last events
	stored := -1
	s.Hooks.Summary = func(context.Context) json.RawMessage {
		cd.mu.Lock()
		defer cd.mu.Unlock()
		stored = 0
		for _, hb := range cd.heartbeats {
			stored = max(stored, int(hb.NewRev))
		}
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	cd.waitFor(t, "the session to open", func() bool { return cd.count(rpc.VerbFetchDynamicConfig) >= 1 })
	srv.Publish("s-1", rpc.EventShutdown, map[string]string{"reason": "agent stop"})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if stored != 3 {
		t.Errorf("when the summary was asked for, choird had events through %d; want all 3 the lanes committed", stored)
	}
}
