package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestOutboxQueueResendCapAndOrder(t *testing.T) {
	s := newStore(t, Config{}, "alpha", "beta")
	ctx := ctxT(t)
	body := json.RawMessage(`{"parts":[{"text":"hi"}]}`)
	var ids []int64
	for i := range 3 {
		m, fresh, err := s.QueueOutbox(ctx, NewOutbox{AgentID: "alpha", DM: "alice", Key: fmt.Sprint("k", i), Body: body}, 3)
		if err != nil || !fresh || m.Status != OutboxQueued || m.Attempt != -1 {
			t.Fatalf("QueueOutbox(k%d) = %+v, %v, %v; want a fresh queued message", i, m, fresh, err)
		}
		ids = append(ids, m.ID)
	}
	again, fresh, err := s.QueueOutbox(ctx, NewOutbox{AgentID: "alpha", DM: "alice", Key: "k1", Body: json.RawMessage(`{"other":1}`)}, 3)
	if err != nil || fresh || again.ID != ids[1] {
		t.Errorf("QueueOutbox(k1 again) = %+v, %v, %v; want message %d, not fresh", again, fresh, err, ids[1])
	}
	if _, _, err := s.QueueOutbox(ctx, NewOutbox{AgentID: "alpha", DM: "alice", Key: "k3", Body: body}, 3); !errors.Is(err, ErrOutboxFull) {
		t.Errorf("QueueOutbox(past the cap) = %v; want ErrOutboxFull", err)
	}
	if _, fresh, err := s.QueueOutbox(ctx, NewOutbox{AgentID: "beta", DM: "bob", Key: "k3", Body: body}, 3); err != nil || !fresh {
		t.Errorf("QueueOutbox(another agent) = %v, %v; want queued: the cap is per agent", fresh, err)
	}
	if _, _, err := s.QueueOutbox(ctx, NewOutbox{AgentID: "alpha", DM: "alice", Key: "bad", Body: json.RawMessage(`{`)}, 0); err == nil {
		t.Error("QueueOutbox(invalid JSON) succeeded")
	}

	next, err := s.NextOutbox(ctx, "alice")
	if err != nil || next.ID != ids[0] || next.Attempt != -1 {
		t.Fatalf("NextOutbox() = %+v, %v; want message %d, never attempted", next, err, ids[0])
	}
	// NextOutbox recorded the start of part 0: the next reader sees it.
	if again, _ := s.NextOutbox(ctx, "alice"); again.Attempt != 0 || again.PartsDone != 0 {
		t.Errorf("NextOutbox() again: attempt %d, parts done %d; want 0, 0 (a start never recorded as done)", again.Attempt, again.PartsDone)
	}
	if err := s.OutboxAttempt(ctx, next.ID, 0); err != nil {
		t.Fatal(err)
	}
	if m, _ := s.NextOutbox(ctx, "alice"); m.Attempt != 0 || m.PartsDone != 0 {
		t.Errorf("after OutboxAttempt(0): attempt %d, parts done %d; want 0, 0", m.Attempt, m.PartsDone)
	}
	if err := s.OutboxPartSent(ctx, next.ID, 0, 555, "", false); err != nil {
		t.Fatal(err)
	}
	if err := s.OutboxPartSent(ctx, next.ID, 0, 556, "", false); err != nil { // recorded before: nothing changes
		t.Fatal(err)
	}
	if err := s.OutboxPartSent(ctx, next.ID, 1, 0, "x.bin: refused", true); err != nil {
		t.Fatal(err)
	}
	next, err = s.NextOutbox(ctx, "alice")
	if err != nil || next.ID != ids[1] {
		t.Fatalf("NextOutbox() after the first was sent = %+v, %v; want message %d", next, err, ids[1])
	}
	if err := s.FailOutbox(ctx, ids[1], "Forbidden: bot was blocked by the user"); err != nil {
		t.Fatal(err)
	}
	// Below the cap again: the next message is queued.
	if _, fresh, err := s.QueueOutbox(ctx, NewOutbox{AgentID: "alpha", DM: "alice", Key: "k4", Body: body}, 3); err != nil || !fresh {
		t.Errorf("QueueOutbox(below the cap again) = %v, %v", fresh, err)
	}

	stats, err := s.OutboxStats(ctx, "alpha")
	if err != nil || len(stats) != 1 {
		t.Fatalf("OutboxStats(alpha) = %+v, %v; want one DM", stats, err)
	}
	st := stats[0]
	if st.DM != "alice" || st.Queued != 2 || st.Failed != 1 || st.Oldest.IsZero() || st.LastError != "Forbidden: bot was blocked by the user" {
		t.Errorf("OutboxStats(alpha) = %+v; want alice: 2 queued, 1 failed, the refusal", st)
	}
	n, err := s.FailQueuedOutbox(ctx, "alice", "Forbidden: bot was blocked by the user")
	if err != nil || n != 2 {
		t.Errorf("FailQueuedOutbox() = %d, %v; want 2", n, err)
	}
	if _, err := s.NextOutbox(ctx, "alice"); !errors.Is(err, ErrNotFound) {
		t.Errorf("NextOutbox() of a failed DM = %v; want ErrNotFound", err)
	}
	all, err := s.OutboxStats(ctx, "")
	if err != nil || len(all) != 2 {
		t.Errorf("OutboxStats(all) = %+v, %v; want alpha's and beta's", all, err)
	}
	pruned, err := s.PruneOutbox(ctx, time.Now().Add(time.Hour))
	if err != nil || pruned != 4 {
		t.Errorf("PruneOutbox() = %d, %v; want the 4 finished messages", pruned, err)
	}
}
