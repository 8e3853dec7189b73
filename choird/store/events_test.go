package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"testing"
)

// events makes events from..to with hashes "h<rev>".
func events(from, to int64) []Event {
	var out []Event
	for r := from; r <= to; r++ {
		out = append(out, Event{Rev: r, Type: "TOOL_CALL_COMMITTED", Lane: "edge", Hash: "h" + strconv.FormatInt(r, 10),
			Payload: json.RawMessage(fmt.Sprintf(`{"rev": %d}`, r))})
	}
	return out
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

func TestAppendEvents(t *testing.T) {
	s := newStore(t, Config{}, "alpha")
	ctx := ctxT(t)
	newSession(t, s, "s1")

	for _, tc := range []struct {
		name    string
		batch   []Event
		wantAck int64
		wantErr error
	}{
		{"empty log, empty batch", nil, 0, nil},
		{"first batch", events(1, 3), 3, nil},
		{"resent", events(1, 3), 3, nil},
		{"resent tail", events(3, 3), 3, nil},
		{"overlapping", events(2, 5), 5, nil},
		{"gap", events(7, 8), 0, ErrRevGap},
		{"not contiguous", append(events(6, 6), events(8, 8)...), 0, ErrRevGap},
		{"fork", append([]Event{{Rev: 4, Type: "T", Hash: "other"}}, events(5, 7)...), 0, ErrRevFork},
		{"resent and new", []Event{{Rev: 5, Type: "T", Hash: "h5"}, {Rev: 6, Type: "T", Hash: "h6"}}, 6, nil},
		{"resent only", append(events(6, 6), Event{Rev: 7, Type: "T", Hash: "h7"}), 7, nil},
		{"fork of last", []Event{{Rev: 7, Type: "T", Hash: "x"}}, 0, ErrRevFork},
	} {
		ack, err := s.AppendEvents(ctx, "s1", tc.batch)
		if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && ack != tc.wantAck) {
			t.Fatalf("%s: AppendEvents(%v) = %d, %v; want %d, %v", tc.name, revs(tc.batch), ack, err, tc.wantAck, tc.wantErr)
		}
	}
	all, err := s.EventsAfter(ctx, "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(revs(all)); got != "[1 2 3 4 5 6 7]" {
		t.Fatalf("EventsAfter(0) revisions = %s; want [1 2 3 4 5 6 7] (refused batches store nothing)", got)
	}
	if ack, err := s.AckedRev(ctx, "s1"); ack != 7 || err != nil {
		t.Errorf("AckedRev() = %d, %v; want 7", ack, err)
	}

	tail, err := s.EventsAfter(ctx, "s1", 4)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(revs(tail)); got != "[5 6 7]" {
		t.Errorf("EventsAfter(4) = %s; want [5 6 7]", got)
	}
	e := tail[0]
	var p struct{ Rev int }
	if err := json.Unmarshal(e.Payload, &p); err != nil || p.Rev != 5 || e.Hash != "h5" || e.Lane != "edge" ||
		e.Type != "TOOL_CALL_COMMITTED" || e.CreatedAt.IsZero() {
		t.Errorf("event 5 = %+v (payload %s)", e, e.Payload)
	}
	if tail[1].Lane != "" {
		t.Errorf("event 6 lane = %q; want none", tail[1].Lane)
	}
	if none, err := s.EventsAfter(ctx, "s1", 7); err != nil || len(none) != 0 {
		t.Errorf("EventsAfter(7) = %v, %v; want none", none, err)
	}
}

func TestAppendEventsRefuses(t *testing.T) {
	s := newStore(t, Config{}, "alpha")
	ctx := ctxT(t)
	newSession(t, s, "s1")
	if _, err := s.AppendEvents(ctx, "s1", events(1, 2)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		batch []Event
	}{
		{"rev 0", []Event{{Rev: 0, Type: "T", Hash: "h"}}},
		{"no hash", []Event{{Rev: 3, Type: "T"}}},
		{"no type", []Event{{Rev: 3, Hash: "h"}}},
		{"bad lane", []Event{{Rev: 3, Type: "T", Hash: "h", Lane: "side"}}},
		{"bad json", []Event{{Rev: 3, Type: "T", Hash: "h", Payload: json.RawMessage(`{`)}}},
	} {
		if _, err := s.AppendEvents(ctx, "s1", tc.batch); err == nil {
			t.Errorf("%s: AppendEvents succeeded", tc.name)
		}
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
	if all, _ := s.EventsAfter(ctx, "s1", 0); len(all) != 2 {
		t.Errorf("the crashed session's log has %d events; want 2", len(all))
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
