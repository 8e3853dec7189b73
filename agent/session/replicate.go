package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"choir/internal/config"
	"choir/internal/rpc"
)

// Replication (§13.1, §13.3). Each heartbeat carries the oldest committed
// events choird has not acknowledged (at most rpc.HeartbeatMaxEvents of
// them, about rpc.HeartbeatMaxBytes), from the acknowledged revision on,
// with their chain hashes; choird answers with the revision it holds. The
// unacknowledged events stay in the arbiter's log, which keeps every event
// of the session, so whatever a failed or refused heartbeat carried is
// sent again: a heartbeat that fails leaves the acknowledged revision
// where it was; one refused with a head (409 replication_refused) or
// answered with an ack resumes from that head + 1. After a heartbeat that
// left events behind, the next follows at once, so a backlog drains in a
// burst of heartbeats rather than one per interval.

// DefaultBacklogLimit is how many committed events choird may lack before
// the user is told: those are lost if the agent dies now (§13.2).
const DefaultBacklogLimit = 10000

// maxBurst bounds the heartbeats of one tick: a backlog of a few thousand
// events drains in one tick, and a choird that keeps refusing is not
// hammered.
const maxBurst = 64

// replState is what the session knows of the replication, under mu.
type replState struct {
	ackRev  int64  // the newest revision choird acknowledged
	ackHash string // its hash, as choird gave it

	snap    *takenSnapshot // taken, not yet stored by choird
	snapRev int64          // the revision of the last snapshot taken
	snapAt  time.Time      // when it was taken (the session's start before)

	clock func() time.Time // nil is time.Now (tests set it)

	failing   string    // the last heartbeat's failure, "" after a success
	failSince time.Time // the first of the failures in a row
	behind    bool      // the user was told the backlog passed the limit
	diverged  bool      // the user was told choird's log differs

	summary json.RawMessage // the session summary, for the final heartbeat
}

type takenSnapshot struct {
	rev int64
	doc json.RawMessage
}

// replicate sends the heartbeats of one tick: one, and more at once while
// events remain and heartbeats succeed (or are refused with a head to
// resume from). It returns the newest config version choird announced.
func (s *Session) replicate(ctx context.Context) (int64, error) {
	var latest int64
	for range maxBurst {
		v, more, err := s.heartbeat(ctx, false)
		if err != nil {
			if !more {
				return latest, err
			}
			continue // refused with another head to resume from: resend now
		}
		latest = max(latest, v)
		if !more || ctx.Err() != nil {
			break
		}
	}
	return latest, nil
}

// flush sends final heartbeats until every committed event and the last
// snapshot are stored, a heartbeat fails, or ctx ends; the last one is
// marked Final and carries the session summary, when there is one (§11.8
// steps 3-4; resent with it if it must be resent).
func (s *Session) flush(ctx context.Context, summary json.RawMessage) {
	s.mu.Lock()
	s.repl.summary = summary
	s.mu.Unlock()
	for resends := 0; resends < 3 && ctx.Err() == nil; {
		_, more, err := s.heartbeat(ctx, true)
		switch {
		case err == nil && !more:
			return
		case err == nil:
			resends = 0
		case more:
			resends++
		default:
			s.log.Warn("final heartbeat failed", "error", err.Error())
			return
		}
	}
}

// heartbeat sends one heartbeat with the events after the acknowledged
// revision and, when one is due, a snapshot. It returns the config version
// choird announced and whether events (or a snapshot) remain to send; with
// an error, whether it is worth resending at once (choird refused and named
// another head to resume from).
func (s *Session) heartbeat(ctx context.Context, final bool) (int64, bool, error) {
	now := s.now()
	head := s.head()
	s.mu.Lock()
	base := s.repl.ackRev
	req := rpc.HeartbeatReq{BaseRev: base, NewRev: base, ConfigVersion: s.configVersion, Timestamp: now.UTC()}
	s.mu.Unlock()
	if s.Hooks.HashAt != nil {
		req.HashPrev = s.Hooks.HashAt(base)
	}
	req.HashNew = req.HashPrev
	if s.Hooks.Events != nil && head > base {
		if evs := fill(s.Hooks.Events(base, rpc.HeartbeatMaxEvents), rpc.HeartbeatMaxBytes); len(evs) > 0 {
			req.Patches = evs
			req.NewRev, req.HashNew = evs[len(evs)-1].Rev, evs[len(evs)-1].Hash
		}
	}
	snap := s.snapshotFor(now, head, req.NewRev, final)
	if snap != nil {
		req.Snapshot, req.SnapshotRev = snap.doc, snap.rev
	}
	req.Final = final && req.NewRev == head
	if req.Final {
		s.mu.Lock()
		req.Summary = s.repl.summary
		s.mu.Unlock()
	}
	resp, err := s.cp.Heartbeat(ctx, req)
	if err != nil {
		return 0, s.failed(err, req, head), err
	}
	s.acked(resp, req, head)
	s.reportStatus(ctx)
	return resp.ConfigVersionLatest, resp.AckRev < head, nil
}

func (s *Session) now() time.Time {
	if s.repl.clock != nil {
		return s.repl.clock()
	}
	return time.Now()
}

func (s *Session) head() int64 {
	if s.Hooks.Head == nil {
		return 0
	}
	return s.Hooks.Head()
}

// fill keeps the first events whose JSON fits in maxBytes (at least one).
func fill(evs []rpc.Event, maxBytes int) []rpc.Event {
	size := 0
	for i, e := range evs {
		// The event as JSON: its fields plus about 100 bytes of names,
		// quotes and the time.
		size += len(e.Payload) + len(e.Type) + len(e.Lane) + len(e.Hash) + 100
		if i > 0 && size > maxBytes {
			return evs[:i]
		}
	}
	return evs
}

// snapshotFor takes a snapshot when one is due (snapshotDue) and returns
// the one to send with a heartbeat reaching newRev: the pending snapshot,
// if choird will hold its revision once this heartbeat is stored.
func (s *Session) snapshotFor(now time.Time, head, newRev int64, final bool) *takenSnapshot {
	if s.Hooks.Snapshot == nil {
		return nil
	}
	if s.snapshotDue(now, head, final) {
		if rev, doc, ok := s.Hooks.Snapshot(); ok {
			s.mu.Lock()
			if rev > s.repl.snapRev {
				s.repl.snap = &takenSnapshot{rev: rev, doc: doc}
				s.repl.snapRev, s.repl.snapAt = rev, now
				if len(doc) > rpc.MaxSnapshotBytes { // choird would refuse it: wait for the next
					s.repl.snap = nil
					s.log.Warn("snapshot too large to send; skipped", "rev", rev, "bytes", len(doc), "limit", rpc.MaxSnapshotBytes)
				} else {
					s.log.Info("snapshot taken", "rev", rev, "bytes", len(doc), "final", final)
				}
			}
			s.mu.Unlock()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.repl.snap; p != nil && p.rev <= newRev {
		return p
	}
	return nil
}

// snapshotDue says whether to take a snapshot: something was committed
// since the last one, and it is the final heartbeat, or revs revisions
// have passed, or the interval has.
func (s *Session) snapshotDue(now time.Time, head int64, final bool) bool {
	d := config.DefaultTunables()
	revs, every := int64(d.SnapshotEveryRevs), time.Duration(d.SnapshotIntervalMS)*time.Millisecond
	if s.Hooks.SnapshotCadence != nil {
		if r, e := s.Hooks.SnapshotCadence(); r > 0 && e > 0 {
			revs, every = r, e
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	last := s.repl.snapRev
	return head > last && (final || head-last >= revs || now.Sub(s.repl.snapAt) >= every)
}

// acked takes choird's answer to req: it holds resp.AckRev, whose hash
// must be the agent's own; the next heartbeat sends from there. A snapshot
// req carried is done with, stored or not (choird keeps only one newer
// than it holds, for a revision it holds: sending it again changes
// nothing).
func (s *Session) acked(resp rpc.HeartbeatResp, req rpc.HeartbeatReq, head int64) {
	if len(req.Patches) > 0 || len(req.Snapshot) > 0 {
		s.log.Debug("heartbeat acknowledged", "from_rev", req.BaseRev+1, "to_rev", req.NewRev, "events", len(req.Patches),
			"acked_rev", resp.AckRev, "snapshot_rev", resp.SnapshotRev, "head", head)
	}
	var notices []string
	if s.resume(resp.AckRev, resp.AckHash, head) {
		s.mu.Lock()
		if p := s.repl.snap; p != nil && (resp.SnapshotRev >= p.rev || (len(req.Snapshot) > 0 && req.SnapshotRev == p.rev)) {
			if resp.SnapshotRev < p.rev {
				s.log.Warn("choird did not keep the snapshot", "rev", p.rev, "its_newest", resp.SnapshotRev)
			}
			s.repl.snap = nil
		}
		s.repl.failing, s.repl.failSince = "", time.Time{}
		if s.repl.behind && head-s.repl.ackRev < s.limit()/2 {
			s.repl.behind = false
			notices = append(notices, fmt.Sprintf("Replication caught up: choird holds this session's events up to revision %d again.", s.repl.ackRev))
		}
		s.mu.Unlock()
	}
	s.notify(notices)
}

// resume moves the acknowledged revision to rev, choird's head, if the
// agent's log has rev with that hash; otherwise choird's copy of the log is
// not the agent's, which resending cannot mend: the user is told once.
func (s *Session) resume(rev int64, hash string, head int64) bool {
	own := ""
	if s.Hooks.HashAt != nil && rev <= head {
		own = s.Hooks.HashAt(rev)
	}
	if rev < 0 || rev > head || (hash != "" && own != hash) {
		s.log.Error("choird's log of this session differs from the agent's", "choird_rev", rev, "choird_hash", hash, "agent_rev", head, "agent_hash", own)
		s.mu.Lock()
		told := s.repl.diverged
		s.repl.diverged = true
		s.mu.Unlock()
		if !told {
			s.notify([]string{fmt.Sprintf("choird's copy of this session's log differs from mine at revision %d, so it cannot take my events: "+
				"work done from now on is not saved. Stop this session and start a fresh one (choirctl agent stop, then agent start).", rev)})
		}
		return false
	}
	s.mu.Lock()
	s.repl.ackRev, s.repl.ackHash = rev, hash
	s.mu.Unlock()
	return true
}

// failed records a heartbeat req that failed and says whether to resend
// at once: a refusal naming another head than req's base moves the
// acknowledged revision there. A snapshot choird refused as malformed is
// dropped, so it cannot hold the events back. Passing the backlog limit is
// told to the user once, until the backlog drains.
func (s *Session) failed(err error, req rpc.HeartbeatReq, head int64) (resend bool) {
	var rerr *rpc.Error
	if errors.As(err, &rerr) && rerr.Code == rpc.CodeReplicationRefused && rerr.Head != nil {
		s.log.Warn("heartbeat refused; resending from choird's head", "head", rerr.Head.Rev, "reason", rerr.Message)
		resend = rerr.Head.Rev != req.BaseRev && s.resume(rerr.Head.Rev, rerr.Head.Hash, head)
	}
	if errors.As(err, &rerr) && rerr.Status == http.StatusBadRequest && len(req.Snapshot) > 0 {
		s.log.Warn("snapshot refused; dropped", "rev", req.SnapshotRev, "error", rerr.Message)
		s.mu.Lock()
		s.repl.snap = nil
		s.mu.Unlock()
		resend = true
	} else if errors.As(err, &rerr) && rerr.Status == http.StatusBadRequest && len(req.Summary) > 0 {
		// It cannot hold the events back either: the final heartbeat goes
		// again without it.
		s.log.Warn("session summary refused; dropped", "error", rerr.Message)
		s.mu.Lock()
		s.repl.summary = nil
		s.mu.Unlock()
		resend = true
	}
	why := err.Error()
	if errors.As(err, &rerr) && rerr.Status == http.StatusServiceUnavailable {
		why = "choird could not store them: " + rerr.Message
	}
	var notices []string
	s.mu.Lock()
	if s.repl.failing == "" {
		s.repl.failSince = s.now()
	}
	s.repl.failing = why
	if backlog := head - s.repl.ackRev; backlog > s.limit() && !s.repl.behind {
		s.repl.behind = true
		notices = append(notices, fmt.Sprintf("choird has not stored my last %d events (since %s: %s). I keep them and resend them; "+
			"if I stop before it takes them, that work is lost.", backlog, s.repl.failSince.Format(time.Kitchen), clip(why, 200)))
	}
	s.mu.Unlock()
	s.notify(notices)
	return resend
}

func (s *Session) limit() int64 {
	if s.BacklogLimit > 0 {
		return s.BacklogLimit
	}
	return DefaultBacklogLimit
}

func (s *Session) notify(texts []string) {
	for _, t := range texts {
		s.log.Warn("replication notice", "text", t)
		if s.Hooks.Notify != nil {
			s.Hooks.Notify(t)
		}
	}
}

// Acked is the newest revision choird has acknowledged.
func (s *Session) Acked() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.repl.ackRev
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
