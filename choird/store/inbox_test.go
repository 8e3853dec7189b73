package store

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// An update the leader polled for a DM whose agent the other replica runs
// is queued once per Telegram update id, read back by the DMs of the
// replica that runs them in the order queued, and delivered once.
func TestInboxRouteQueueAndDeliver(t *testing.T) {
	s := newStore(t, Config{}, "alpha", "beta")
	ctx := ctxT(t)
	if r, err := s.InboundRoute(ctx, "dm-a", "leader"); err != nil || r != (DMRoute{}) {
		t.Fatalf("InboundRoute(dm-a) with no session = %+v, %v; want nothing", r, err)
	}
	for _, ns := range []NewSession{
		{SessionID: "s-a", AgentID: "alpha", LeaseID: "l", StartedAt: t0, Bindings: json.RawMessage(`{"dm":"dm-a"}`), Instance: "follower"},
		{SessionID: "s-b", AgentID: "beta", LeaseID: "l", StartedAt: t0, Bindings: json.RawMessage(`{"dm":"dm-b"}`), Instance: "leader"},
	} {
		if _, err := s.CreateSession(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := s.InboundRoute(ctx, "dm-a", "leader"); err != nil || r.Elsewhere != "follower" || r.Agent != "alpha" || r.Waiting != 0 {
		t.Errorf("InboundRoute(dm-a) from the leader = %+v, %v; want alpha on the follower", r, err)
	}
	if r, err := s.InboundRoute(ctx, "dm-b", "leader"); err != nil || r.Elsewhere != "" {
		t.Errorf("InboundRoute(dm-b) from the leader = %+v, %v; want its own agent: nowhere else", r, err)
	}
	for i, id := range []int64{7, 8, 7} {
		fresh, err := s.QueueInbound(ctx, NewInbound{Bot: "bot", UpdateID: id, DM: "dm-a", Instance: "follower", Body: json.RawMessage(fmt.Sprintf(`{"update_id":%d}`, id))})
		if err != nil || fresh != (i < 2) {
			t.Fatalf("QueueInbound(update %d) = %v, %v; want fresh %v", id, fresh, err, i < 2)
		}
	}
	if r, _ := s.InboundRoute(ctx, "dm-a", "leader"); r.Waiting != 2 {
		t.Errorf("InboundRoute(dm-a).Waiting = %d; want 2", r.Waiting)
	}
	if got, err := s.QueuedInbound(ctx, []string{"dm-b"}, 10); err != nil || len(got) != 0 {
		t.Errorf("QueuedInbound(dm-b) = %+v, %v; want none", got, err)
	}
	got, err := s.QueuedInbound(ctx, []string{"dm-a", "dm-b"}, 10)
	if err != nil || len(got) != 2 || got[0].UpdateID != 7 || got[1].UpdateID != 8 || got[0].Instance != "follower" || string(got[0].Body) != `{"update_id":7}` {
		t.Fatalf("QueuedInbound(dm-a, dm-b) = %+v, %v; want updates 7 then 8", got, err)
	}
	for _, in := range got {
		if err := s.InboundDelivered(ctx, in.ID); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.InboundDelivered(ctx, got[0].ID); err != nil {
		t.Errorf("InboundDelivered again = %v; want no error", err)
	}
	if left, _ := s.QueuedInbound(ctx, []string{"dm-a"}, 10); len(left) != 0 {
		t.Errorf("queued after delivery: %+v", left)
	}
	if fresh, err := s.QueueInbound(ctx, NewInbound{Bot: "bot", UpdateID: 7, DM: "dm-a", Instance: "follower", Body: json.RawMessage(`{}`)}); err != nil || fresh {
		t.Errorf("QueueInbound(update 7) after its delivery = %v, %v; want a no-op", fresh, err)
	}
	if n, err := s.PruneInbound(ctx, time.Now().Add(time.Hour)); err != nil || n != 2 {
		t.Errorf("PruneInbound = %d, %v; want 2", n, err)
	}
}
