package session

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"choir/internal/chain"
	"choir/internal/rpc"
)

// Recovered is what a resumed session (§13.2) rehydrates from: choird's
// newest snapshot, and the stored events after Base (whose hash is
// BaseHash) through the head, verified. Recovered state is the last
// host-acknowledged revision: what was committed but not acknowledged
// before the agent stopped is gone.
type Recovered struct {
	Head        rpc.ChainHead
	SnapshotRev int64
	Snapshot    json.RawMessage // §13.4's members (rpc.Snapshot); nil without one
	Base        int64
	BaseHash    string
	Events      []rpc.Event
	Resumes     int
}

// Recovered returns the state the session resumed from, or nil for a
// fresh session. It is set before Hooks.Opened runs.
func (s *Session) Recovered() *Recovered {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.recovered
}

// recover reads the tail the lanes need (Hooks.TailFrom, else the whole
// log) a page at a time, checks that it chains from the hash before it to
// choird's head, and resumes replication from that head.
func (s *Session) recover(ctx context.Context, rec *rpc.Recovery) error {
	began := time.Now()
	from := int64(0)
	if s.Hooks.TailFrom != nil && len(rec.Snapshot) > 0 {
		from = min(max(s.Hooks.TailFrom(rec.Snapshot, rec.SnapshotRev), 0), rec.Head.Rev)
	}
	out := &Recovered{Head: rec.Head, SnapshotRev: rec.SnapshotRev, Snapshot: rec.Snapshot, Base: from, Resumes: rec.Resumes}
	first := true
	for after := from; after < rec.Head.Rev; {
		page, err := s.cp.FetchEvents(ctx, rpc.FetchEventsReq{AfterRev: after})
		if err != nil {
			return fmt.Errorf("FETCH_EVENTS after revision %d: %w", after, err)
		}
		if len(page.Events) == 0 {
			return fmt.Errorf("FETCH_EVENTS after revision %d returned nothing; choird's head is %d", after, rec.Head.Rev)
		}
		if first {
			out.BaseHash, first = page.PrevHash, false
		}
		out.Events = append(out.Events, page.Events...)
		after = page.Events[len(page.Events)-1].Rev
	}
	if first && from > 0 {
		// Nothing after the snapshot: the base is the head itself.
		out.BaseHash = rec.Head.Hash
	}
	evs := make([]chain.Event, len(out.Events))
	for i, e := range out.Events {
		if e.Rev != from+int64(i)+1 {
			return fmt.Errorf("resume: stored event %d has revision %d; want %d", i, e.Rev, from+int64(i)+1)
		}
		evs[i] = chain.Event(e)
	}
	if err := chain.Verify(out.BaseHash, evs); err != nil {
		return fmt.Errorf("resume: the stored log does not verify: %w; start a fresh session with `choirctl agent start --fresh`", err)
	}
	last := out.BaseHash
	if n := len(out.Events); n > 0 {
		last = out.Events[n-1].Hash
	}
	if last != rec.Head.Hash {
		return fmt.Errorf("resume: the stored log ends with another hash than choird's head %d; start a fresh session with `choirctl agent start --fresh`", rec.Head.Rev)
	}
	s.mu.Lock()
	s.recovered = out
	s.repl.ackRev, s.repl.ackHash = rec.Head.Rev, rec.Head.Hash
	s.repl.snapRev = rec.SnapshotRev
	s.mu.Unlock()
	s.log.Info("session resumed", "head", rec.Head.Rev, "snapshot_rev", rec.SnapshotRev, "tail_from", from,
		"tail_events", len(out.Events), "resumes", rec.Resumes, "took_ms", time.Since(began).Milliseconds())
	return nil
}
