package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"choir/internal/chain"
	"choir/internal/rpc"
)

// storedLog makes n chained events, as a session's heartbeats stored them.
func storedLog(t *testing.T, n int) []rpc.Event {
	t.Helper()
	var h chain.Hasher
	out := make([]rpc.Event, n)
	prev := ""
	for i := range out {
		e := rpc.Event{Rev: int64(i + 1), Type: "UserMsg", Lane: "edge", Payload: json.RawMessage(fmt.Sprintf(`{"text":"m%d"}`, i+1)),
			Time: time.Date(2026, 1, 1, 0, 0, 0, i*1000, time.UTC)}
		var err error
		if e.Hash, err = h.Hash(prev, chain.Event(e)); err != nil {
			t.Fatal(err)
		}
		out[i], prev = e, e.Hash
	}
	return out
}

// A start resumes the agent's last session when it ended with events
// stored, not for a spent budget; a resumed session's INIT_HELLO says
// recover with the stored head and newest snapshot, and FETCH_EVENTS pages
// its log from any revision it holds.
func TestResumedSessionHelloAndTail(t *testing.T) {
	m, r, ctx := handlerManager(t, 3)
	st := m.Store.(*memStore)
	log := storedLog(t, 5)
	st.events["s-1"] = log
	st.snapshots["s-1"] = &storedSnapshot{rev: 3, data: json.RawMessage(`{"snap":3}`)}
	st.sessions["s-1"] = SessionRecord{SessionID: "s-1", AgentID: "a-1", Status: StatusCrashed, StartedAt: time.Unix(100, 0)}

	prev, ok, err := m.resumable(context.Background(), "a-1")
	if err != nil || !ok || prev.SessionID != "s-1" || prev.Head.Rev != 5 {
		t.Fatalf("resumable = %+v, %v, %v; want s-1 at 5", prev, ok, err)
	}
	st.reasons = map[string]string{"s-1": "terminated by the agent: " + BudgetSpentReason + ": total_session_tokens"}
	if _, ok, _ := m.resumable(context.Background(), "a-1"); ok {
		t.Error("a session whose budget was spent would be resumed")
	}
	st.sessions["s-2"] = SessionRecord{SessionID: "s-2", AgentID: "a-1", Status: StatusStopped, StartedAt: time.Unix(200, 0)}
	if _, ok, _ := m.resumable(context.Background(), "a-1"); ok {
		t.Error("a last session without events would be resumed")
	}
	st.sessions["s-3"] = SessionRecord{SessionID: "s-3", AgentID: "a-1", Status: StatusActive, StartedAt: time.Unix(300, 0)}
	if _, ok, err := m.resumable(context.Background(), "a-1"); ok || err != nil {
		t.Errorf("resumable with an active last session = %v, %v; want a fresh start", ok, err)
	}

	r.resume = &resumeInfo{from: StatusCrashed, rev: 5, resumes: 2}
	r.state = StateStarting
	r.ImageVersion = "v1"
	hello, err := m.HandleInitHello(ctx, rpc.InitHelloReq{AgentID: "a-1", SessionID: "s-1", ImageVersion: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	rec := hello.Recovery
	if hello.Status != rpc.InitRecover || rec == nil || rec.Head.Rev != 5 || rec.Head.Hash != log[4].Hash || rec.SnapshotRev != 3 || string(rec.Snapshot) != `{"snap":3}` || rec.Resumes != 2 {
		t.Fatalf("INIT_HELLO = %+v (recovery %+v); want recover at 5 with the snapshot at 3", hello, rec)
	}
	var got []chain.Event
	first := ""
	for after := int64(2); after < 5; {
		page, err := m.HandleFetchEvents(ctx, rpc.FetchEventsReq{AfterRev: after, Max: 2})
		if err != nil {
			t.Fatal(err)
		}
		if after == 2 {
			first = page.PrevHash
		}
		for _, e := range page.Events {
			got = append(got, chain.Event(e))
		}
		after = page.Events[len(page.Events)-1].Rev
	}
	if err := chain.Verify(first, got); err != nil || len(got) != 3 || first != log[1].Hash {
		t.Errorf("the tail after 2 = %d events from %q: %v; want 3 verifying from revision 2's hash", len(got), first, err)
	}
	if _, err := m.HandleFetchEvents(ctx, rpc.FetchEventsReq{AfterRev: 9}); err == nil {
		t.Error("FETCH_EVENTS after a revision the log lacks succeeded")
	}
}
