package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/internal/chain"
)

// testLog is one deterministic session log, chained as the agent chains
// it, grown on demand: events(from, to) are its revisions from..to, so
// batches taken from it follow one another as an agent's heartbeats do.
var testLog struct {
	sync.Mutex
	evs  []Event
	hash chain.Hasher
}

// events returns revisions from..to of testLog.
func events(from, to int64) []Event {
	testLog.Lock()
	defer testLog.Unlock()
	for int64(len(testLog.evs)) < to {
		n := int64(len(testLog.evs)) + 1
		e := Event{Rev: n, Type: "ToolResultCommitted", Lane: "edge", Time: t0.Add(time.Duration(n) * time.Microsecond),
			Payload: json.RawMessage(fmt.Sprintf(`{"id":"call-%d","output":{"status":"success","text":"line %d"},"rev":%d,"status":"success","tool":"choir.fs.read"}`, n, n, n))}
		if n%3 == 0 {
			e.Lane = ""
		}
		prev := ""
		if n > 1 {
			prev = testLog.evs[n-2].Hash
		}
		e.Hash, _ = testLog.hash.Hash(prev, chain.Event{Rev: e.Rev, Type: e.Type, Lane: e.Lane, Payload: e.Payload, Time: e.Time})
		testLog.evs = append(testLog.evs, e)
	}
	return append([]Event(nil), testLog.evs[from-1:to]...)
}

func hashOf(rev int64) string {
	if rev == 0 {
		return ""
	}
	return events(rev, rev)[0].Hash
}

func revs(es []Event) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.Rev
	}
	return out
}

func newSession(t *testing.T, s *Store, id string) {
	t.Helper()
	if _, err := s.CreateSession(ctxT(t), NewSession{SessionID: id, AgentID: "alpha", LeaseID: "l", StartedAt: t0}); err != nil {
		t.Fatal(err)
	}
}

// storedRevs lists the revisions a session's log holds.
func storedRevs(t *testing.T, s *Store, id string) string {
	t.Helper()
	all, err := s.EventsAfter(ctxT(t), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(revs(all))
}

// forge returns events with payloads changed and hashes kept, or with
// hashes made up: what an agent that does not keep the chain sends.
func forge(evs []Event, how string) []Event {
	out := append([]Event(nil), evs...)
	for i := range out {
		switch how {
		case "payload":
			out[i].Payload = json.RawMessage(`{"text":"forged"}`)
		case "hash":
			out[i].Hash = strings.Repeat("f", 64)
		case "time":
			out[i].Time = out[i].Time.Add(time.Second)
		case "type":
			out[i].Type = "UserMsg"
		case "lane":
			out[i].Lane = "core"
		}
	}
	return out
}

// TestReplicate: contiguous batches are stored and acknowledged with the
// head's hash, resends are no-ops, and a gap, a fork or a broken chain is
// refused with where the log ends, storing nothing.
func TestReplicate(t *testing.T) {
	s := newStore(t, Config{}, "alpha")
	ctx := ctxT(t)
	newSession(t, s, "s1")

	for _, tc := range []struct {
		name     string
		batch    []Event
		wantHead int64
		wantErr  error
	}{
		{"empty log, empty batch", nil, 0, nil},
		{"first batch", events(1, 3), 3, nil},
		{"resent", events(1, 3), 3, nil},
		{"resent tail", events(3, 3), 3, nil},
		{"overlapping", events(2, 5), 5, nil},
		{"empty batch", nil, 5, nil},
		{"gap", events(7, 8), 0, ErrRevGap},
		{"not contiguous", append(events(6, 6), events(8, 8)...), 0, ErrRevGap},
		{"fork of a stored event", append(forge(events(4, 4), "hash"), events(5, 7)...), 0, ErrRevFork},
		{"forged payload", forge(events(6, 7), "payload"), 0, ErrChainBroken},
		{"made-up hashes", forge(events(6, 7), "hash"), 0, ErrChainBroken},
		{"forged time", forge(events(6, 6), "time"), 0, ErrChainBroken},
		{"forged type", forge(events(6, 6), "type"), 0, ErrChainBroken},
		{"forged lane", forge(events(6, 6), "lane"), 0, ErrChainBroken},
		{"good then forged", append(events(6, 6), forge(events(7, 7), "payload")...), 0, ErrChainBroken},
		{"chained from genesis, not from the log", events(1, 2), 5, nil}, // resent: fine
		{"resent and new", events(5, 6), 6, nil},
		{"a long batch", events(7, 300), 300, nil},
	} {
		r, err := s.Replicate(ctx, "s1", Batch{Events: tc.batch})
		if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && (r.Head.Rev != tc.wantHead || r.Head.Hash != hashOf(tc.wantHead))) {
			t.Fatalf("%s: Replicate(%v) = %+v, %v; want head %d, %v", tc.name, revs(tc.batch), r, err, tc.wantHead, tc.wantErr)
		}
		var refused *RefusedError
		if errors.As(err, &refused) {
			before, _ := s.LogHead(ctx, "s1")
			if refused.Head != before {
				t.Errorf("%s: refusal names head %+v; the log ends at %+v", tc.name, refused.Head, before)
			}
			if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("send from revision %d", before.Rev+1)) {
				t.Errorf("%s: refusal %q does not say where to send from", tc.name, msg)
			}
		}
	}
	if got, want := storedRevs(t, s, "s1"), fmt.Sprint(revs(events(1, 300))); got != want {
		t.Fatalf("stored revisions = %.80s; want 1-300 (refused batches store nothing)", got)
	}
	stored, err := s.EventsAfter(ctx, "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := chain.Verify("", toChain(stored)); err != nil {
		t.Errorf("the stored log does not verify: %v", err)
	}
	e := stored[4]
	if want := events(5, 5)[0]; e.Hash != want.Hash || e.Lane != want.Lane || e.Type != want.Type || !e.Time.Equal(want.Time) || e.CreatedAt.IsZero() {
		t.Errorf("event 5 = %+v; want %+v", e, want)
	}
	if stored[2].Lane != "" {
		t.Errorf("event 3 lane = %q; want none", stored[2].Lane)
	}
}

func toChain(evs []Event) []chain.Event {
	out := make([]chain.Event, len(evs))
	for i, e := range evs {
		out[i] = chain.Event{Rev: e.Rev, Type: e.Type, Lane: e.Lane, Payload: e.Payload, Hash: e.Hash, Time: e.Time}
	}
	return out
}

// TestForgedBatchThenTheRealAgent is the fault seen before replication was
// verified: a batch forged with bad hashes (a buggy or hostile process
// holding the session's token) was stored, and every later heartbeat of
// the real agent was refused as a fork. Now the forged batch is refused,
// nothing changes, and the real agent's next heartbeat is accepted.
func TestForgedBatchThenTheRealAgent(t *testing.T) {
	s := newStore(t, Config{}, "alpha")
	ctx := ctxT(t)
	newSession(t, s, "s1")
	if _, err := s.Replicate(ctx, "s1", Batch{Events: events(1, 10)}); err != nil {
		t.Fatal(err)
	}
	forged := []Event{
		{Rev: 11, Type: "ToolResultCommitted", Lane: "edge", Hash: "h11", Payload: json.RawMessage(`{"forged":true}`), Time: t0},
		{Rev: 12, Type: "ToolResultCommitted", Lane: "edge", Hash: "h12", Payload: json.RawMessage(`{"forged":true}`), Time: t0},
	}
	_, err := s.Replicate(ctx, "s1", Batch{Events: forged, Snapshot: json.RawMessage(`{"forged":1}`), SnapshotRev: 12})
	var refused *RefusedError
	if !errors.As(err, &refused) || !errors.Is(err, ErrChainBroken) || refused.Head != (Head{10, hashOf(10)}) {
		t.Fatalf("Replicate(forged 11-12) = %v; want ErrChainBroken naming head 10", err)
	}
	if !strings.Contains(err.Error(), "event 11") {
		t.Errorf("the refusal %q does not name event 11", err)
	}
	if got := storedRevs(t, s, "s1"); got != fmt.Sprint(revs(events(1, 10))) {
		t.Errorf("after the forged batch the log holds %s; want 1-10", got)
	}
	if _, err := s.LatestSnapshot(ctx, "s1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the forged batch's snapshot was stored (%v)", err)
	}
	r, err := s.Replicate(ctx, "s1", Batch{Events: events(11, 12)})
	if err != nil || r.Head != (Head{12, hashOf(12)}) {
		t.Fatalf("the real agent's next heartbeat = %+v, %v; want accepted at 12", r, err)
	}
}

// TestStoredLogVerifies: payloads jsonb rewrites (numbers in exponent
// form, negative zero, escapes, unsorted members, U+0000 the agent maps,
// U+2028, astral characters) are stored in their canonical form and read
// back to a log that verifies from genesis: what recovery needs.
func TestStoredLogVerifies(t *testing.T) {
	s := newStore(t, Config{}, "alpha")
	ctx := ctxT(t)
	newSession(t, s, "s1")
	payloads := []string{
		`{"n":[1E5,1.50e1,-0,-0.0,0e10,2.5e-1,1e20,12345678901234567890,1.10],"z":1,"a":2}`,
		`{"text":"<b> & \u003c \u2028 \u2029 é 😀 \ud83d\ude00 tab\t nl\n \u0001 \u007f"}`,
		`{"nested":{"b":{"d":1,"c":[{"y":1,"x":2}]},"a":null},"empty":{},"list":[]}`,
		`"a string"`, `123.4560`, `null`, `true`, `[]`,
		`{"s":"` + strings.Repeat("long ", 2000) + `"}`,
	}
	var evs []Event
	prev := ""
	var h chain.Hasher
	for i, p := range payloads {
		e := Event{Rev: int64(i + 1), Type: "ModelOutput", Lane: "core", Time: t0.Add(time.Duration(i) * time.Millisecond)}
		// The agent commits canonical payloads; the store must not rely on it.
		e.Payload = json.RawMessage(p)
		e.Hash, _ = h.Hash(prev, chain.Event{Rev: e.Rev, Type: e.Type, Lane: e.Lane, Payload: e.Payload, Time: e.Time})
		prev = e.Hash
		evs = append(evs, e)
	}
	// A payload with U+0000: the agent's canonical form maps it; a raw
	// one verifies (the hash covers the canonical form) and is stored so.
	nul := Event{Rev: int64(len(evs) + 1), Type: "UserMsg", Lane: "edge", Time: t0, Payload: json.RawMessage(`{"text":"a\u0000b"}`)}
	nul.Hash, _ = h.Hash(prev, chain.Event{Rev: nul.Rev, Type: nul.Type, Lane: nul.Lane, Payload: nul.Payload, Time: nul.Time})
	evs = append(evs, nul)
	if _, err := s.Replicate(ctx, "s1", Batch{Events: evs}); err != nil {
		t.Fatalf("Replicate(tricky payloads) = %v", err)
	}
	stored, err := s.EventsAfter(ctx, "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := chain.Verify("", toChain(stored)); err != nil {
		t.Fatalf("the log read back does not verify: %v", err)
	}
	for i, e := range stored {
		want, _ := chain.Canonical(evs[i].Payload)
		got, _ := chain.Canonical(e.Payload)
		if string(got) != string(want) {
			t.Errorf("event %d payload reads back as %.200s; want %.200s", e.Rev, got, want)
		}
	}
	// The tail after any revision verifies from that revision's hash.
	tail, err := s.EventsAfter(ctx, "s1", 4)
	if err != nil || chain.Verify(stored[3].Hash, toChain(tail)) != nil || len(tail) != len(evs)-4 {
		t.Errorf("EventsAfter(4) = %d events, %v; want the rest, verifying from event 4's hash", len(tail), err)
	}
}

// TestReplicateSnapshots: a batch's snapshot is stored under the revision
// it describes once the log holds it, never under the batch's end; one
// ahead of the log is kept nowhere and the answer says so; an older one
// than stored is ignored.
func TestReplicateSnapshots(t *testing.T) {
	s := newStore(t, Config{}, "alpha")
	ctx := ctxT(t)
	newSession(t, s, "s1")
	snap := func(rev int64) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"at": %d}`, rev)) }
	steps := []struct {
		name      string
		batch     Batch
		wantSnap  int64 // Replicated.SnapshotRev
		wantLatst int64 // LatestSnapshot's rev, -1 for none
	}{
		{"no snapshot", Batch{Events: events(1, 3)}, -1, -1},
		{"ahead of the batch", Batch{Events: events(4, 5), Snapshot: snap(8), SnapshotRev: 8}, -1, -1},
		{"behind the batch's end", Batch{Events: events(6, 9), Snapshot: snap(8), SnapshotRev: 8}, 8, 8},
		{"older than stored", Batch{Snapshot: snap(4), SnapshotRev: 4}, 8, 8},
		{"alone, at the head", Batch{Snapshot: snap(9), SnapshotRev: 9}, 9, 9},
		{"refused batch", Batch{Events: forge(events(10, 10), "hash"), Snapshot: snap(9), SnapshotRev: 9}, -2, 9},
	}
	for _, st := range steps {
		r, err := s.Replicate(ctx, "s1", st.batch)
		if st.wantSnap == -2 {
			if err == nil {
				t.Fatalf("%s: Replicate succeeded", st.name)
			}
		} else if err != nil || r.SnapshotRev != st.wantSnap {
			t.Fatalf("%s: Replicate() = %+v, %v; want snapshot rev %d", st.name, r, err, st.wantSnap)
		}
		latest, err := s.LatestSnapshot(ctx, "s1")
		switch {
		case st.wantLatst < 0 && !errors.Is(err, ErrNotFound):
			t.Errorf("%s: LatestSnapshot() = %+v, %v; want none", st.name, latest, err)
		case st.wantLatst >= 0 && (err != nil || latest.Rev != st.wantLatst):
			t.Errorf("%s: LatestSnapshot() = rev %d, %v; want %d", st.name, latest.Rev, err, st.wantLatst)
		case st.wantLatst >= 0:
			var d struct{ At int64 }
			if json.Unmarshal(latest.Data, &d); d.At != latest.Rev {
				t.Errorf("%s: the snapshot stored under %d describes %d", st.name, latest.Rev, d.At)
			}
		}
	}
}

func TestAppendEventsRefuses(t *testing.T) {
	s := newStore(t, Config{}, "alpha")
	ctx := ctxT(t)
	newSession(t, s, "s1")
	if _, err := s.AppendEvents(ctx, "s1", events(1, 2)); err != nil {
		t.Fatal(err)
	}
	three := events(3, 3)[0]
	with := func(f func(*Event)) []Event { e := three; f(&e); return []Event{e} }
	for _, tc := range []struct {
		name  string
		batch []Event
	}{
		{"rev 0", with(func(e *Event) { e.Rev = 0 })},
		{"rev -1", with(func(e *Event) { e.Rev = -1 })},
		{"no hash", with(func(e *Event) { e.Hash = "" })},
		{"no type", with(func(e *Event) { e.Type = "" })},
		{"bad lane", with(func(e *Event) { e.Lane = "side" })},
		{"bad json", with(func(e *Event) { e.Payload = json.RawMessage(`{`) })},
		{"duplicate member", with(func(e *Event) { e.Payload = json.RawMessage(`{"a":1,"a":2}`) })},
		{"huge number", with(func(e *Event) { e.Payload = json.RawMessage(`[1e999999]`) })},
		{"long made-up hash", with(func(e *Event) { e.Hash = strings.Repeat("x", 10000) })},
	} {
		_, err := s.AppendEvents(ctx, "s1", tc.batch)
		if err == nil {
			t.Errorf("%s: AppendEvents succeeded", tc.name)
		} else if len(err.Error()) > 1000 {
			t.Errorf("%s: the refusal is %d bytes long; it must not echo what was sent", tc.name, len(err.Error()))
		}
	}
	if got := storedRevs(t, s, "s1"); got != "[1 2]" {
		t.Errorf("after the refusals the log holds %s; want [1 2]", got)
	}
	if _, err := s.AppendEvents(ctx, "nope", events(1, 1)); !errors.Is(err, ErrNotFound) {
		t.Errorf("AppendEvents(unknown session) = %v; want ErrNotFound", err)
	}
	if _, err := s.EventsAfter(ctx, "nope", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("EventsAfter(unknown session) = %v; want ErrNotFound", err)
	}
	if err := s.EndSession(ctx, "s1", SessionCrashed, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendEvents(ctx, "s1", events(3, 3)); !errors.Is(err, ErrSessionEnded) {
		t.Errorf("AppendEvents after a crash = %v; want ErrSessionEnded", err)
	}
	if got := storedRevs(t, s, "s1"); got != "[1 2]" {
		t.Errorf("the crashed session's log holds %s; want [1 2]", got)
	}
}

func TestSnapshots(t *testing.T) {
	s := newStore(t, Config{}, "alpha")
	ctx := ctxT(t)
	newSession(t, s, "s1")
	if _, err := s.LatestSnapshot(ctx, "s1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("LatestSnapshot() before any = %v; want ErrNotFound", err)
	}
	if _, err := s.AppendEvents(ctx, "s1", events(1, 4)); err != nil {
		t.Fatal(err)
	}
	for _, snap := range []struct {
		rev  int64
		data string
	}{{0, `{"at": 0}`}, {4, `{"at": 4}`}, {2, `{"at": 2}`}, {4, `{"at": "again"}`}} {
		if err := s.SaveSnapshot(ctx, "s1", snap.rev, json.RawMessage(snap.data)); err != nil {
			t.Fatalf("SaveSnapshot(%d) = %v", snap.rev, err)
		}
	}
	if err := s.SaveSnapshot(ctx, "s1", 5, json.RawMessage(`{}`)); !errors.Is(err, ErrSnapshotAhead) {
		t.Errorf("SaveSnapshot beyond the log = %v; want ErrSnapshotAhead", err)
	}
	if err := s.SaveSnapshot(ctx, "nope", 0, json.RawMessage(`{}`)); !errors.Is(err, ErrNotFound) {
		t.Errorf("SaveSnapshot(unknown session) = %v; want ErrNotFound", err)
	}
	got, err := s.LatestSnapshot(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	var data struct{ At any }
	if err := json.Unmarshal(got.Data, &data); err != nil || got.Rev != 4 || data.At != float64(4) || got.SessionID != "s1" {
		t.Errorf("LatestSnapshot() = rev %d, %s, %v; want rev 4, the first data saved at 4", got.Rev, got.Data, err)
	}
	// Replay from the snapshot: nothing after it yet.
	if tail, err := s.EventsAfter(ctx, "s1", got.Rev); err != nil || len(tail) != 0 {
		t.Errorf("EventsAfter(snapshot) = %v, %v; want none", tail, err)
	}
}
