package session

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/internal/chain"
	"choir/internal/rpc"
)

// agentLog is the arbiter's log as the session sees it through its hooks:
// every committed event, chained.
type agentLog struct {
	mu   sync.Mutex
	evs  []rpc.Event
	size int // payload bytes of each new event
}

func (l *agentLog) commit(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for range n {
		rev := int64(len(l.evs) + 1)
		prev := ""
		if rev > 1 {
			prev = l.evs[rev-2].Hash
		}
		text := fmt.Sprintf("event %d ", rev) + strings.Repeat("x", max(0, l.size-30))
		e := rpc.Event{Rev: rev, Type: "UserMsg", Lane: "edge", Time: time.Unix(1700000000, 0).Add(time.Duration(rev) * time.Microsecond).UTC(),
			Payload: json.RawMessage(`{"text":"` + text + `"}`)}
		e.Hash, _ = chain.Hash(prev, chain.Event(e))
		l.evs = append(l.evs, e)
	}
}

func (l *agentLog) after(rev int64, n int) []rpc.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	if rev >= int64(len(l.evs)) {
		return nil
	}
	end := min(int64(len(l.evs)), rev+int64(n))
	return append([]rpc.Event(nil), l.evs[rev:end]...)
}

func (l *agentLog) head() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(len(l.evs))
}

func (l *agentLog) hashAt(rev int64) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if rev <= 0 || rev > int64(len(l.evs)) {
		return ""
	}
	return l.evs[rev-1].Hash
}

// storingChoird keeps a session's log as choird's store does (resends
// skipped, new events must continue the chain, else a 409 naming its head)
// and can be told to fail. It speaks rpc.ControlPlane directly.
type storingChoird struct {
	rpc.ControlPlane // nil: only Heartbeat is called
	mu               sync.Mutex
	stored           []rpc.Event
	snapshots        map[int64]json.RawMessage
	beats            []rpc.HeartbeatReq
	failNext         int    // heartbeats to answer 503
	ackHash          string // when set, the ack's hash (a choird whose log differs)
}

func (c *storingChoird) Heartbeat(_ context.Context, req rpc.HeartbeatReq) (rpc.HeartbeatResp, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.beats = append(c.beats, req)
	if c.failNext > 0 {
		c.failNext--
		return rpc.HeartbeatResp{}, rpc.Errorf(http.StatusServiceUnavailable, rpc.CodeUnavailable, "heartbeat not stored: postgres unreachable")
	}
	if len(req.Snapshot) > 0 {
		if _, err := rpc.ParseSnapshot(req.Snapshot); err != nil {
			return rpc.HeartbeatResp{}, rpc.Errorf(http.StatusBadRequest, rpc.CodeBadRequest, "%v", err)
		}
	}
	head := c.head()
	var fresh []chain.Event
	for _, e := range req.Patches {
		switch {
		case e.Rev <= head.Rev && c.stored[e.Rev-1].Hash != e.Hash:
			return c.refuse(head, "fork")
		case e.Rev > head.Rev:
			fresh = append(fresh, chain.Event(e))
		}
	}
	if len(fresh) > 0 && fresh[0].Rev != head.Rev+1 {
		return c.refuse(head, "gap")
	}
	if err := chain.Verify(head.Hash, fresh); err != nil {
		return c.refuse(head, err.Error())
	}
	for _, e := range fresh {
		c.stored = append(c.stored, rpc.Event(e))
	}
	head = c.head()
	newest := int64(0)
	for r := range c.snapshots {
		newest = max(newest, r)
	}
	if len(req.Snapshot) > 0 && req.SnapshotRev <= head.Rev && req.SnapshotRev > newest {
		c.snapshots[req.SnapshotRev] = req.Snapshot
		newest = req.SnapshotRev
	}
	if c.ackHash != "" {
		head.Hash = c.ackHash
	}
	return rpc.HeartbeatResp{AckRev: head.Rev, AckHash: head.Hash, SnapshotRev: newest}, nil
}

func (c *storingChoird) head() rpc.ChainHead {
	if len(c.stored) == 0 {
		return rpc.ChainHead{}
	}
	return rpc.ChainHead{Rev: int64(len(c.stored)), Hash: c.stored[len(c.stored)-1].Hash}
}

func (c *storingChoird) refuse(head rpc.ChainHead, why string) (rpc.HeartbeatResp, error) {
	e := rpc.Errorf(http.StatusConflict, rpc.CodeReplicationRefused, "heartbeat refused, nothing stored: %s", why)
	e.Head = &head
	return rpc.HeartbeatResp{}, e
}

func (c *storingChoird) storedRevs() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := chain.Verify("", toChain(c.stored)); err != nil {
		return -1
	}
	return int64(len(c.stored))
}

func toChain(evs []rpc.Event) []chain.Event {
	out := make([]chain.Event, len(evs))
	for i, e := range evs {
		out[i] = chain.Event(e)
	}
	return out
}

// replicating is a session over c replicating l, recording its notices.
func replicating(c *storingChoird, l *agentLog) (*Session, *[]string) {
	if c.snapshots == nil {
		c.snapshots = map[int64]json.RawMessage{}
	}
	s := New(c, Identity{AgentID: "a", SessionID: "s"}, rpc.ImageInfo{}, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)))
	var mu sync.Mutex
	notices := &[]string{}
	s.Hooks = Hooks{Events: l.after, Head: l.head, HashAt: l.hashAt, Notify: func(t string) {
		mu.Lock()
		*notices = append(*notices, t)
		mu.Unlock()
	}}
	return s, notices
}

// TestBacklogDrainsOverSeveralHeartbeats: a backlog goes out oldest first
// in heartbeats of at most rpc.HeartbeatMaxEvents events and about
// rpc.HeartbeatMaxBytes, one after the other in the same tick, each
// starting where choird's ack left off, until choird holds it all.
func TestBacklogDrainsOverSeveralHeartbeats(t *testing.T) {
	for _, tc := range []struct {
		name       string
		events     int
		size       int
		atLeast    int // heartbeats
		byteBudget bool
	}{
		{"small events, count-bound", 4 * rpc.HeartbeatMaxEvents, 100, 4, false},
		{"large events, byte-bound", 60, 64 << 10, 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &agentLog{size: tc.size}
			l.commit(tc.events)
			c := &storingChoird{}
			s, _ := replicating(c, l)
			if _, err := s.replicate(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := c.storedRevs(); got != int64(tc.events) {
				t.Fatalf("choird holds %d events (verifying); want %d", got, tc.events)
			}
			if len(c.beats) < tc.atLeast {
				t.Errorf("%d heartbeats; want at least %d", len(c.beats), tc.atLeast)
			}
			next := int64(1)
			for i, b := range c.beats {
				body, _ := json.Marshal(b)
				if len(b.Patches) > rpc.HeartbeatMaxEvents || (tc.byteBudget && len(b.Patches) > 1 && len(body) > rpc.HeartbeatMaxBytes+4096) {
					t.Errorf("heartbeat %d: %d events, %d bytes; want at most %d and about %d", i, len(b.Patches), len(body), rpc.HeartbeatMaxEvents, rpc.HeartbeatMaxBytes)
				}
				if b.BaseRev != next-1 || (len(b.Patches) > 0 && b.Patches[0].Rev != next) {
					t.Errorf("heartbeat %d starts after %d; want after %d", i, b.BaseRev, next-1)
				}
				next += int64(len(b.Patches))
			}
			if s.Acked() != int64(tc.events) {
				t.Errorf("Acked() = %d; want %d", s.Acked(), tc.events)
			}
		})
	}
}

// TestResendAfterFailure: heartbeats that fail (choird cannot store) leave
// the events with the agent, which sends them again with what it
// committed meanwhile; choird ends up with each event once, in order, and
// the user is told once when the backlog passes the limit and once when
// it drains.
func TestResendAfterFailure(t *testing.T) {
	l := &agentLog{size: 50}
	c := &storingChoird{}
	s, notices := replicating(c, l)
	s.BacklogLimit = 20
	ctx := context.Background()
	l.commit(5)
	if _, err := s.replicate(ctx); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.failNext = 4
	c.mu.Unlock()
	for range 4 { // four ticks fail while the agent works on
		l.commit(8)
		if _, err := s.replicate(ctx); err == nil {
			t.Fatal("replicate succeeded while choird fails")
		}
	}
	if s.Acked() != 5 {
		t.Errorf("after failures Acked() = %d; want 5", s.Acked())
	}
	if len(*notices) != 1 || !strings.Contains((*notices)[0], "not stored my last 24 events") || !strings.Contains((*notices)[0], "postgres unreachable") {
		t.Errorf("notices while failing = %q; want one saying 24 events are not stored and why", *notices)
	}
	l.commit(3)
	if _, err := s.replicate(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.storedRevs(); got != 40 {
		t.Errorf("choird holds %d events (verifying); want all 40", got)
	}
	if len(*notices) != 2 || !strings.Contains((*notices)[1], "caught up") {
		t.Errorf("notices = %q; want a second one saying replication caught up", *notices)
	}
	// The failed heartbeats carried events 6..; the next one resent them.
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.beats[1:5] {
		if b.BaseRev != 5 {
			t.Errorf("a heartbeat while failing started after %d; want 5, the acknowledged revision", b.BaseRev)
		}
	}
}

// TestResendFromChoirdsHead: when choird says it holds less than the agent
// believed (its refusal names its head, or its ack does), the agent sends
// again from that head + 1, in the same tick.
func TestResendFromChoirdsHead(t *testing.T) {
	l := &agentLog{size: 50}
	l.commit(30)
	c := &storingChoird{}
	s, notices := replicating(c, l)
	ctx := context.Background()
	if _, err := s.replicate(ctx); err != nil || c.storedRevs() != 30 {
		t.Fatalf("first replication: %v, %d stored", err, c.storedRevs())
	}
	// choird lost events 21-30 (a database restored from a backup).
	c.mu.Lock()
	c.stored = c.stored[:20]
	c.mu.Unlock()
	l.commit(5)
	n := len(c.beats)
	if _, err := s.replicate(ctx); err != nil {
		t.Fatalf("replicate after choird lost events = %v; want the resend to succeed in the same tick", err)
	}
	if got := c.storedRevs(); got != 35 {
		t.Errorf("choird holds %d events; want 35", got)
	}
	if got := c.beats[n+1]; got.BaseRev != 20 {
		t.Errorf("the heartbeat after the refusal started after %d; want 20 (choird's head)", got.BaseRev)
	}
	if len(*notices) != 0 {
		t.Errorf("notices = %q; want none (nothing was lost for good)", *notices)
	}
}

// TestDivergedLogIsTold: a choird whose log differs from the agent's (its
// ack names a hash the agent's log does not have) cannot be mended by
// resending: the acknowledged revision stays, and the user is told once.
func TestDivergedLogIsTold(t *testing.T) {
	l := &agentLog{size: 50}
	l.commit(3)
	c := &storingChoird{ackHash: strings.Repeat("e", 64)}
	s, notices := replicating(c, l)
	for range 3 {
		s.replicate(context.Background())
	}
	if s.Acked() != 0 {
		t.Errorf("Acked() = %d; want 0: an ack with a foreign hash is not taken", s.Acked())
	}
	if len(*notices) != 1 || !strings.Contains((*notices)[0], "differs from mine at revision 3") || !strings.Contains((*notices)[0], "fresh") {
		t.Errorf("notices = %q; want one saying the logs differ and what to do", *notices)
	}
}

// snapshotHook returns a snapshot naming the revision it was taken at.
func snapshotHook(l *agentLog, taken *[]int64) func() (int64, json.RawMessage, bool) {
	return func() (int64, json.RawMessage, bool) {
		rev := l.head()
		*taken = append(*taken, rev)
		return rev, json.RawMessage(fmt.Sprintf(`{"reference_summary_edge":{"summary":"at %d"},"reference_summary_core":{},"event_window_boundary":{"edge":%d},"skill_state":{},"lane_state":[],"open_jobs":[]}`, rev, rev)), true
	}
}

// TestSnapshotCadence: a snapshot is taken every N revisions or after T
// when something was committed, and at a graceful stop; each is stored
// under the revision it describes; none is taken when nothing changed.
func TestSnapshotCadence(t *testing.T) {
	l := &agentLog{size: 20}
	c := &storingChoird{}
	s, _ := replicating(c, l)
	clock := time.Unix(1700000000, 0)
	s.repl.clock = func() time.Time { return clock }
	s.repl.snapAt = clock
	var taken []int64
	s.Hooks.Snapshot = snapshotHook(l, &taken)
	s.Hooks.SnapshotCadence = func() (int64, time.Duration) { return 10, time.Minute }
	ctx := context.Background()
	tick := func(commit int, advance time.Duration) {
		t.Helper()
		l.commit(commit)
		clock = clock.Add(advance)
		if _, err := s.replicate(ctx); err != nil {
			t.Fatal(err)
		}
	}
	tick(4, time.Second)  // 4: none due
	tick(4, time.Second)  // 8: none
	tick(4, time.Second)  // 12: 12 ≥ 0+10
	tick(5, time.Second)  // 17: none (5 since 12)
	tick(0, time.Minute)  // 17: interval passed, changes since 12
	tick(0, time.Minute)  // 17: interval passed, nothing new: none
	tick(25, time.Second) // 42: 25 since 17
	if got := fmt.Sprint(taken); got != "[12 17 42]" {
		t.Errorf("snapshots taken at %s; want [12 17 42]", got)
	}
	l.commit(3)
	s.flush(ctx, nil)
	if got := fmt.Sprint(taken); got != "[12 17 42 45]" {
		t.Errorf("snapshots taken at %s; want the final one at 45 too", got)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for rev, doc := range c.snapshots {
		if !strings.Contains(string(doc), fmt.Sprintf(`"summary":"at %d"`, rev)) {
			t.Errorf("the snapshot stored under %d is %s: another revision's", rev, doc)
		}
	}
	if len(c.snapshots) != 4 {
		t.Errorf("choird holds %d snapshots; want 4", len(c.snapshots))
	}
	if last := c.beats[len(c.beats)-1]; !last.Final || last.SnapshotRev != 45 || last.NewRev != 45 {
		t.Errorf("last heartbeat: final %v, snapshot at %d, up to %d; want final, 45, 45", last.Final, last.SnapshotRev, last.NewRev)
	}
}

// TestSnapshotWaitsForItsRevision: a snapshot taken at a revision beyond
// what a heartbeat carries rides the heartbeat that carries its revision,
// never an earlier one (choird stores it only once it holds the revision).
func TestSnapshotWaitsForItsRevision(t *testing.T) {
	l := &agentLog{size: 20}
	l.commit(2*rpc.HeartbeatMaxEvents + 100) // three heartbeats' worth
	c := &storingChoird{}
	s, _ := replicating(c, l)
	var taken []int64
	s.Hooks.Snapshot = snapshotHook(l, &taken)
	s.Hooks.SnapshotCadence = func() (int64, time.Duration) { return 2 * rpc.HeartbeatMaxEvents, time.Hour }
	if _, err := s.replicate(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, b := range c.beats {
		if len(b.Snapshot) > 0 && b.SnapshotRev > b.NewRev {
			t.Errorf("heartbeat %d carries the snapshot of %d but reaches only %d", i, b.SnapshotRev, b.NewRev)
		}
	}
	want := int64(2*rpc.HeartbeatMaxEvents + 100)
	if _, ok := c.snapshots[want]; !ok || fmt.Sprint(taken) != fmt.Sprintf("[%d]", want) {
		t.Errorf("snapshots stored %v, taken %v; want the one of revision %d", c.snapshots, taken, want)
	}
}

// TestRefusedSnapshotDoesNotHoldEventsBack: a snapshot choird refuses as
// malformed is dropped; the events go on.
func TestRefusedSnapshotDoesNotHoldEventsBack(t *testing.T) {
	l := &agentLog{size: 20}
	l.commit(12)
	c := &storingChoird{}
	s, _ := replicating(c, l)
	s.Hooks.Snapshot = func() (int64, json.RawMessage, bool) { return l.head(), json.RawMessage(`{"rev":12}`), true }
	s.Hooks.SnapshotCadence = func() (int64, time.Duration) { return 10, time.Hour }
	if _, err := s.replicate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := c.storedRevs(); got != 12 {
		t.Errorf("choird holds %d events; want 12 despite the refused snapshot", got)
	}
}
