package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"choir/choird/build"
	"choir/choird/control"
	"choir/choird/lifecycle"
	"choir/choird/store"
	"choir/internal/ctl"
	"choir/internal/rpc"
)

// sessionStore presents the Postgres store as the lifecycle's Store.
type sessionStore struct{ s *store.Store }

var _ lifecycle.Store = sessionStore{}

func (a sessionStore) CreateSession(ctx context.Context, r lifecycle.SessionRecord) error {
	bindings, err := json.Marshal(r.Bindings)
	if err != nil {
		return err
	}
	leases := make([]store.Lease, len(r.Leases))
	for i, l := range r.Leases {
		leases[i] = store.Lease{Kind: string(l.Kind), Name: l.Name}
	}
	_, err = a.s.CreateSession(ctx, store.NewSession{
		SessionID: r.SessionID, AgentID: r.AgentID, LeaseID: r.LeaseID, StartedAt: r.StartedAt,
		Bindings: bindings, Leases: leases, ImageVersion: r.Image, Resume: r.Resume, Kind: r.Kind, RunID: r.RunID, Instance: r.Instance,
	})
	return err
}

func (a sessionStore) EndSession(ctx context.Context, sessionID, status, reason string) error {
	return a.s.EndSessionWhy(ctx, sessionID, store.SessionStatus(status), time.Now(), reason)
}

func (a sessionStore) LastEnded(ctx context.Context, agentID string) (lifecycle.EndedSession, error) {
	e, err := a.s.LastEnded(ctx, agentID)
	if errors.Is(err, store.ErrNotFound) {
		return lifecycle.EndedSession{}, fmt.Errorf("%w: %v", lifecycle.ErrNoSession, err)
	}
	if err != nil {
		return lifecycle.EndedSession{}, err
	}
	return lifecycle.EndedSession{SessionID: e.SessionID, Status: string(e.Status), EndReason: e.EndReason,
		Resumes: e.Resumes, Head: rpc.ChainHead(e.Head)}, nil
}

func (a sessionStore) Recovery(ctx context.Context, sessionID string) (rpc.Recovery, error) {
	head, err := a.s.LogHead(ctx, sessionID)
	if err != nil {
		return rpc.Recovery{}, err
	}
	out := rpc.Recovery{Head: rpc.ChainHead(head)}
	snap, err := a.s.LatestSnapshot(ctx, sessionID)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return rpc.Recovery{}, err
	default:
		out.SnapshotRev, out.Snapshot = snap.Rev, snap.Data
	}
	return out, nil
}

func (a sessionStore) EventsPage(ctx context.Context, sessionID string, rev int64, max int) (rpc.FetchEventsResp, error) {
	prev, evs, err := a.s.EventsPage(ctx, sessionID, rev, max)
	if errors.Is(err, store.ErrNotFound) {
		return rpc.FetchEventsResp{}, fmt.Errorf("%w: %v", lifecycle.ErrNoSession, err)
	}
	if err != nil {
		return rpc.FetchEventsResp{}, err
	}
	out := rpc.FetchEventsResp{PrevHash: prev, Events: make([]rpc.Event, len(evs))}
	for i, e := range evs {
		out.Events[i] = rpc.Event{Rev: e.Rev, Type: e.Type, Lane: e.Lane, Hash: e.Hash, Payload: e.Payload, Time: e.Time}
	}
	return out, nil
}

func (a sessionStore) ActiveSessions(ctx context.Context) ([]lifecycle.SessionRecord, error) {
	ss, err := a.s.ActiveSessions(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]lifecycle.SessionRecord, len(ss))
	for i, s := range ss {
		var b rpc.ResourceBindings
		json.Unmarshal(s.Bindings, &b)
		out[i] = lifecycle.SessionRecord{SessionID: s.SessionID, AgentID: s.AgentID, LeaseID: s.LeaseID, Status: string(s.Status), StartedAt: s.StartedAt, Bindings: b, Image: s.ImageVersion,
			Kind: s.Kind, RunID: s.RunID, Instance: s.Instance}
	}
	return out, nil
}

// RecordLiveness records many sessions' last heartbeats in one statement.
func (a sessionStore) RecordLiveness(ctx context.Context, beats []lifecycle.Liveness) ([]string, error) {
	out := make([]store.Liveness, len(beats))
	for i, b := range beats {
		out[i] = store.Liveness(b)
	}
	return a.s.RecordLiveness(ctx, out)
}

// Replicate stores a heartbeat's batch; the store's refusal becomes the
// lifecycle's, naming the stored head.
func (a sessionStore) Replicate(ctx context.Context, sessionID string, r lifecycle.Replication) (lifecycle.Replicated, error) {
	evs := make([]store.Event, len(r.Events))
	for i, e := range r.Events {
		evs[i] = store.Event{Rev: e.Rev, Type: e.Type, Lane: e.Lane, Hash: e.Hash, Payload: e.Payload, Time: e.Time}
	}
	got, err := a.s.Replicate(ctx, sessionID, store.Batch{Events: evs, Snapshot: r.Snapshot, SnapshotRev: r.SnapshotRev, Summary: r.Summary, Beat: (*store.Liveness)(r.Beat)})
	var refused *store.RefusedError
	if errors.As(err, &refused) {
		return lifecycle.Replicated{}, &lifecycle.ReplicationRefused{Head: rpc.ChainHead(refused.Head), Reason: refused.Error()}
	}
	if err != nil {
		return lifecycle.Replicated{}, err
	}
	return lifecycle.Replicated{Head: rpc.ChainHead(got.Head), SnapshotRev: got.SnapshotRev}, nil
}

// sessionLog presents the store's sessions and events to the control plane.
type sessionLog struct{ s *store.Store }

var _ control.SessionLog = sessionLog{}

func (a sessionLog) Sessions(ctx context.Context, agentID string) ([]ctl.SessionInfo, error) {
	ss, err := a.s.Sessions(ctx, agentID, 50)
	if err != nil {
		return nil, err
	}
	out := make([]ctl.SessionInfo, len(ss))
	for i, s := range ss {
		out[i] = ctl.SessionInfo{SessionID: s.SessionID, AgentID: s.AgentID, Status: string(s.Status), StartedAt: s.StartedAt,
			EndedAt: s.EndedAt, LastHeartbeat: s.LastHeartbeatAt, Image: s.ImageVersion, Bindings: s.Bindings, Kind: sessionKind(s.Kind), RunID: s.RunID}
	}
	return out, nil
}

// sessionKind names a stored session's kind ("" is an interactive one,
// as stored before sessions had kinds).
func sessionKind(k string) string {
	if k == "" {
		return store.SessionInteractive
	}
	return k
}

func (a sessionLog) Session(ctx context.Context, sessionID string) (*ctl.SessionDetail, error) {
	s, err := a.s.GetSession(ctx, sessionID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	o, err := a.s.SessionOutcome(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	return &ctl.SessionDetail{SessionInfo: ctl.SessionInfo{SessionID: s.SessionID, AgentID: s.AgentID, Status: string(s.Status), StartedAt: s.StartedAt,
		EndedAt: s.EndedAt, LastHeartbeat: s.LastHeartbeatAt, Image: s.ImageVersion, Bindings: s.Bindings, Kind: sessionKind(s.Kind), RunID: s.RunID},
		EndReason: o.EndReason, Summary: o.Summary}, nil
}

func (a sessionLog) Events(ctx context.Context, sessionID string, after int64) ([]ctl.SessionEvent, error) {
	evs, err := a.s.EventsAfter(ctx, sessionID, after)
	if err != nil {
		return nil, err
	}
	out := make([]ctl.SessionEvent, len(evs))
	for i, e := range evs {
		out[i] = ctl.SessionEvent{Rev: e.Rev, Type: e.Type, Lane: e.Lane, Hash: e.Hash, Payload: e.Payload, Time: e.Time}
	}
	return out, nil
}

// imageStore presents the store's image records to the build (which writes
// them) and to the lifecycle (which checks INIT_HELLO against them).
type imageStore struct{ s *store.Store }

var (
	_ build.Records          = imageStore{}
	_ lifecycle.ImageRecords = imageStore{}
)

func (a imageStore) RecordImage(ctx context.Context, r build.Record) error {
	return a.s.RecordImage(ctx, store.ImageRecord{ImageID: r.ImageID, Tag: r.Tag, AgentID: r.AgentID, Version: r.Version.JSON(), Config: r.Config})
}

func (a imageStore) RecordedImageID(ctx context.Context, tag string) (string, error) {
	r, err := a.s.ImageByTag(ctx, tag)
	if errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("%w: %v", build.ErrNoRecord, err)
	}
	return r.ImageID, err
}

func (a imageStore) AgentHasImages(ctx context.Context, agentID string) (bool, error) {
	return a.s.AgentHasImages(ctx, agentID)
}

func (a imageStore) ImageRecord(ctx context.Context, tag string) (lifecycle.ImageRecord, error) {
	r, err := a.s.ImageByTag(ctx, tag)
	if errors.Is(err, store.ErrNotFound) {
		return lifecycle.ImageRecord{}, fmt.Errorf("%w: %v", lifecycle.ErrNoImageRecord, err)
	}
	if err != nil {
		return lifecycle.ImageRecord{}, err
	}
	var v rpc.ImageInfo
	if err := json.Unmarshal(r.Version, &v); err != nil {
		return lifecycle.ImageRecord{}, fmt.Errorf("the build record of %s: %w", tag, err)
	}
	return lifecycle.ImageRecord{ImageID: r.ImageID, Version: v}, nil
}
