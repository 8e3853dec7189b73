package lifecycle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/choird/lease"
	"choir/internal/chain"
	"choir/internal/config"
	"choir/internal/docker"
	"choir/internal/logs"
	"choir/internal/rpc"
	"choir/testkit"
	"choir/testkit/dockertest"
	"choir/testkit/pgtest"
)

func TestMain(m *testing.M) {
	defer testkit.CleanupBuilds()
	defer pgtest.Stop()
	dockertest.Main(m)
}

// memStore is an in-memory Store for tests of the lifecycle's own logic.
type memStore struct {
	mu        sync.Mutex
	sessions  map[string]SessionRecord
	events    map[string][]rpc.Event
	snapshots map[string]*storedSnapshot
	reasons   map[string]string // why each ended session ended
	resumes   map[string]int
	calls     int                 // Replicate and RecordLiveness calls
	beats     map[string]Liveness // the liveness recorded, by session
}

var _ Store = (*memStore)(nil)

func newMemStore() *memStore {
	return &memStore{sessions: map[string]SessionRecord{}, events: map[string][]rpc.Event{}, snapshots: map[string]*storedSnapshot{}}
}

func (s *memStore) CreateSession(_ context.Context, r SessionRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Resume {
		if s.resumes == nil {
			s.resumes = map[string]int{}
		}
		s.resumes[r.SessionID]++
	}
	s.sessions[r.SessionID] = r
	return nil
}
func (s *memStore) EndSession(_ context.Context, id, status, reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.sessions[id]
	if !ok {
		return errors.New("no such session")
	}
	r.Status = status
	s.sessions[id] = r
	if s.reasons == nil {
		s.reasons = map[string]string{}
	}
	s.reasons[id] = reason
	return nil
}

// LastEnded keeps the store's rule: the agent's newest session, if ended.
func (s *memStore) LastEnded(_ context.Context, agentID string) (EndedSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var last *SessionRecord
	for _, r := range s.sessions {
		if r.AgentID == agentID && (last == nil || r.StartedAt.After(last.StartedAt)) {
			r := r
			last = &r
		}
	}
	if last == nil || last.Status == StatusActive {
		return EndedSession{}, ErrNoSession
	}
	e := EndedSession{SessionID: last.SessionID, Status: last.Status, EndReason: s.reasons[last.SessionID], Resumes: s.resumes[last.SessionID]}
	if log := s.events[last.SessionID]; len(log) > 0 {
		e.Head = rpc.ChainHead{Rev: log[len(log)-1].Rev, Hash: log[len(log)-1].Hash}
	}
	return e, nil
}

func (s *memStore) Recovery(_ context.Context, id string) (rpc.Recovery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out rpc.Recovery
	if log := s.events[id]; len(log) > 0 {
		out.Head = rpc.ChainHead{Rev: log[len(log)-1].Rev, Hash: log[len(log)-1].Hash}
	}
	if snap := s.snapshots[id]; snap != nil {
		out.SnapshotRev, out.Snapshot = snap.rev, snap.data
	}
	return out, nil
}

func (s *memStore) EventsPage(_ context.Context, id string, rev int64, max int) (rpc.FetchEventsResp, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	log := s.events[id]
	if rev < 0 || rev > int64(len(log)) {
		return rpc.FetchEventsResp{}, ErrNoSession
	}
	var out rpc.FetchEventsResp
	if rev > 0 {
		out.PrevHash = log[rev-1].Hash
	}
	out.Events = append([]rpc.Event(nil), log[rev:min(int64(len(log)), rev+int64(max))]...)
	return out, nil
}
func (s *memStore) ActiveSessions(context.Context) ([]SessionRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []SessionRecord
	for _, r := range s.sessions {
		if r.Status == StatusActive {
			out = append(out, r)
		}
	}
	return out, nil
}

// RecordLiveness keeps each active session's newest heartbeat.
func (s *memStore) RecordLiveness(_ context.Context, beats []Liveness) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	var missing []string
	for _, b := range beats {
		if s.sessions[b.SessionID].Status != StatusActive {
			missing = append(missing, b.SessionID)
			continue
		}
		if s.beats == nil {
			s.beats = map[string]Liveness{}
		}
		if b.At.After(s.beats[b.SessionID].At) {
			s.beats[b.SessionID] = b
		}
	}
	return missing, nil
}

// Replicate keeps the store's rules (choird/store.Replicate): resent
// events must match, new ones must continue the chain, else nothing is kept.
func (s *memStore) Replicate(_ context.Context, id string, b Replication) (Replicated, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	log := s.events[id]
	head := rpc.ChainHead{Rev: int64(len(log))}
	if len(log) > 0 {
		head.Hash = log[len(log)-1].Hash
	}
	refuse := func(why string) (Replicated, error) {
		return Replicated{}, &ReplicationRefused{Head: head, Reason: why}
	}
	var fresh []rpc.Event
	for _, e := range b.Events {
		switch {
		case e.Rev <= head.Rev && log[e.Rev-1].Hash != e.Hash:
			return refuse(fmt.Sprintf("revision %d is stored with another hash", e.Rev))
		case e.Rev > head.Rev:
			fresh = append(fresh, e)
		}
	}
	if len(fresh) > 0 && fresh[0].Rev != head.Rev+1 {
		return refuse(fmt.Sprintf("the batch starts at revision %d", fresh[0].Rev))
	}
	evs := make([]chain.Event, len(fresh))
	for i, e := range fresh {
		evs[i] = chain.Event(e)
	}
	if err := chain.Verify(head.Hash, evs); err != nil {
		return refuse(err.Error())
	}
	s.events[id] = append(log, fresh...)
	if len(fresh) > 0 {
		head = rpc.ChainHead{Rev: fresh[len(fresh)-1].Rev, Hash: fresh[len(fresh)-1].Hash}
	}
	snap := s.snapshots[id]
	if len(b.Snapshot) > 0 && b.SnapshotRev <= head.Rev && (snap == nil || b.SnapshotRev > snap.rev) {
		snap = &storedSnapshot{rev: b.SnapshotRev, data: b.Snapshot}
		s.snapshots[id] = snap
	}
	got := Replicated{Head: head, SnapshotRev: -1}
	if snap != nil {
		got.SnapshotRev = snap.rev
	}
	return got, nil
}

type storedSnapshot struct {
	rev  int64
	data json.RawMessage
}

func (s *memStore) status(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id].Status
}

const (
	secretValue = "sk-lifecycle-Secret-8Qx"
	gitSecret   = "ghp-lifecycle-Token-3Jw"
)

// harness is a choird in miniature: config, log manager, the agent protocol
// server on the real socket directory, and a Manager over a real engine.
type harness struct {
	m     *Manager
	store *memStore
	home  config.Home
	ws    map[string]string
	srv   *rpc.Server
	dc    *docker.Client
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	dc := dockertest.Engine(t)
	home := config.Home{Dir: filepath.Join(t.TempDir(), "h")}
	ws := map[string]string{"main": filepath.Join(t.TempDir(), "main"), "other": filepath.Join(t.TempDir(), "other")}
	for _, p := range ws {
		if err := testkit.MakeWorkspace(p); err != nil {
			t.Fatal(err)
		}
	}
	c := config.Default()
	c.HeartbeatIntervalMS, c.CrashDetectionThresholdMS = 200, 2000
	c.SessionSummaryTimeoutMS = 1000
	c.Workspaces = map[string]config.Workspace{"main": {Path: ws["main"]}, "other": {Path: ws["other"]}}
	c.Models = map[string]config.Model{"m": {Provider: "p", Model: "x", Endpoint: "http://127.0.0.1:1/v1", Secret: "llm-key", ContextWindow: 8192}}
	c.GitIdentities = map[string]config.GitIdentity{"dev": {Name: "Dev", Email: "d@x", Secret: "git-token"}, "ops": {Name: "Ops", Email: "o@x", Secret: "git-token"}}
	c.Gateways = map[string]config.Gateway{"bot": {Type: "telegram", Secret: "tg"}}
	c.DMs = map[string]config.DM{"dm1": {Gateway: "bot", UserID: "1"}, "dm2": {Gateway: "bot", UserID: "2"}}
	c.Agents = map[string]config.Agent{
		"lc-agent-1": {Defaults: config.AgentDefaults{Workspace: "main", LLM: "m", GitIdentity: "dev", DM: "dm1"}},
		"lc-agent-2": {Defaults: config.AgentDefaults{Workspace: "main", LLM: "m", GitIdentity: "ops", DM: "dm2"}},
	}
	c.Container = config.ContainerLimits{CPUs: 1, MemoryMB: 256, Pids: 128}
	loaded := &config.Loaded{Config: &c, Secrets: config.Secrets{"llm-key": secretValue, "git-token": gitSecret, "tg": "tg-token-never-sent"}, Version: "test"}
	red := logs.NewRedactor(secretValue, gitSecret, "tg-token-never-sent")
	lm, err := logs.NewManager(home.LogsDir(), 1000, slog.LevelDebug, red)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lm.Close() })
	store := newMemStore()
	m := &Manager{
		Docker: dc, Store: store, Leases: lease.NewTable(), Logs: lm, Home: home, Log: lm.Choird(),
		Config: func() (*config.Loaded, int64) { return loaded, 1 }, ReadyTimeout: 60 * time.Second,
		Instance: "test-" + rpc.NewToken()[:12],
	}
	srv := rpc.NewServer(m, rpc.DefaultLimits(), lm.Choird())
	m.Sessions, m.Sockets = srv, srv
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	dockertest.AgentImage(t, dc, "lc-agent-1", "test1")
	dockertest.AgentImage(t, dc, "lc-agent-2", "test1")
	return &harness{m: m, store: store, home: home, ws: ws, srv: srv, dc: dc}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestAgentLifecycleOnARealEngine(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()

	st, err := h.m.Start(ctx, "lc-agent-1", lease.Overrides{})
	if err != nil {
		t.Fatalf("Start(lc-agent-1) = %v", err)
	}
	if st.State != StateRunning || st.Bindings.Workspace != "main" || st.Image != "choir-agent-lc-agent-1:test1" {
		t.Errorf("status after start = %+v", st)
	}
	run := h.m.run("lc-agent-1")

	// The container has exactly the §15.3 profile.
	c, err := h.dc.ContainerInspect(ctx, run.ContainerID)
	if err != nil {
		t.Fatal(err)
	}
	hc := c.HostConfig
	if hc.Privileged || !hc.ReadonlyRootfs || len(hc.CapDrop) != 1 || hc.CapDrop[0] != "ALL" || !slices.Equal(hc.CapAdd, AgentCaps) || c.Config.User != "0:0" {
		t.Errorf("privileges: privileged=%v readonly=%v capdrop=%v capadd=%v user=%q", hc.Privileged, hc.ReadonlyRootfs, hc.CapDrop, hc.CapAdd, c.Config.User)
	}
	if !strings.Contains(strings.Join(hc.SecurityOpt, ","), "no-new-privileges") {
		t.Errorf("SecurityOpt = %v; want no-new-privileges", hc.SecurityOpt)
	}
	if hc.PidMode == "host" || hc.NetworkMode == "host" || hc.IpcMode == "host" || len(hc.Devices) != 0 {
		t.Errorf("namespaces/devices: pid=%q net=%q ipc=%q devices=%v", hc.PidMode, hc.NetworkMode, hc.IpcMode, hc.Devices)
	}
	if hc.Memory != 256<<20 || hc.NanoCPUs != 1e9 || hc.PidsLimit == nil || *hc.PidsLimit != 128 {
		t.Errorf("limits: memory=%d cpus=%d pids=%v", hc.Memory, hc.NanoCPUs, hc.PidsLimit)
	}
	if _, ok := hc.Tmpfs["/tmp"]; !ok || hc.Tmpfs["/run"] == "" {
		t.Errorf("Tmpfs = %v; want /tmp and /run", hc.Tmpfs)
	}
	if hc.Init == nil || !*hc.Init {
		t.Error("Init is not set: stops would wait for the timeout")
	}
	if len(c.Mounts) != 2 { // the tmpfs mounts are in HostConfig.Tmpfs
		var got []string
		for _, mp := range c.Mounts {
			got = append(got, string(mp.Type)+":"+mp.Source+"->"+mp.Destination)
		}
		t.Errorf("mounts = %v; want the workspace and the socket directory only", got)
	}
	for _, mp := range c.Mounts {
		ws := mp.Source == h.ws["main"] && mp.Destination == "/workspace" && mp.RW
		sock := mp.Source == filepath.Join(h.home.AgentSocketDir(), "lc-agent-1") && mp.Destination == "/run/choir" && !mp.RW
		if mp.Type != "bind" || !ws && !sock {
			t.Errorf("unexpected mount %s %s -> %s (rw=%v); want the workspace read-write and the agent's own socket directory read-only", mp.Type, mp.Source, mp.Destination, mp.RW)
		}
	}
	if c.Config.Labels[LabelManaged] != "true" || c.Config.Labels[LabelAgent] != "lc-agent-1" || c.Config.Labels[LabelSession] != run.SessionID {
		t.Errorf("labels = %v", c.Config.Labels)
	}
	// No secret in what the engine knows of the container.
	dump, _ := json.Marshal(c)
	for _, s := range []string{secretValue, gitSecret, "tg-token-never-sent"} {
		if bytes.Contains(dump, []byte(s)) {
			t.Errorf("container inspect holds secret %q", s)
		}
	}

	// The agent heartbeats.
	waitUntil(t, "a heartbeat after hello", func() bool {
		st, _ := h.m.Status("lc-agent-1")
		return st.LastHeartbeat.After(st.StartedAt)
	})

	// One run per agent; a second agent cannot take the same workspace.
	if _, err := h.m.Start(ctx, "lc-agent-1", lease.Overrides{}); !errors.Is(err, lease.ErrAlreadyRunning) {
		t.Errorf("second Start(lc-agent-1) = %v; want already running", err)
	}
	_, err = h.m.Start(ctx, "lc-agent-2", lease.Overrides{})
	if err == nil || !strings.Contains(err.Error(), `workspace "main" is leased to agent "lc-agent-1"`) {
		t.Errorf("Start(lc-agent-2) on the same workspace = %v; want refusal naming lc-agent-1", err)
	}

	// Graceful stop: TERMINATE_SELF, container gone, leases free, session stopped.
	sessionID, containerID := run.SessionID, run.ContainerID
	if err := h.m.Stop(ctx, "lc-agent-1"); err != nil {
		t.Fatal(err)
	}
	run.mu.Lock()
	terminated := run.terminating
	run.mu.Unlock()
	if !strings.Contains(terminated, "shutdown requested") {
		t.Errorf("TERMINATE_SELF reason = %q; want the agent to have said goodbye", terminated)
	}
	if _, err := h.dc.ContainerInspect(ctx, containerID); !docker.IsNotFound(err) {
		t.Errorf("container after stop: %v; want gone", err)
	}
	if got := h.store.status(sessionID); got != StatusStopped {
		t.Errorf("session status after stop = %q; want stopped", got)
	}
	if holder, ok := h.m.Leases.Holder(lease.Resource{Kind: lease.Workspace, Name: "main"}); ok {
		t.Errorf("workspace still leased to %s after stop", holder)
	}
	// The agent's socket went with the session.
	sock1 := filepath.Join(h.home.AgentSocketDir(), "lc-agent-1", SocketName)
	if _, err := os.Lstat(sock1); !os.IsNotExist(err) {
		t.Errorf("lc-agent-1's socket after stop: %v; want it removed", err)
	}

	// A killed container is a crash: leases released, and the next start works.
	if _, err := h.m.Start(ctx, "lc-agent-2", lease.Overrides{Workspace: "other"}); err != nil {
		t.Fatalf("Start(lc-agent-2) = %v", err)
	}
	run2 := h.m.run("lc-agent-2")
	// The lease token died with the session: presented on another agent's
	// socket it is refused like any wrong token.
	sock2 := filepath.Join(h.home.AgentSocketDir(), "lc-agent-2", SocketName)
	cp, _ := rpc.Dial(rpc.Options{Transport: rpc.TransportUDS, Socket: sock2, SessionID: sessionID, LeaseToken: run.token})
	if _, err := cp.Heartbeat(ctx, rpc.HeartbeatReq{}); err == nil || !strings.Contains(err.Error(), "unauthorized") {
		t.Errorf("heartbeat with the ended session's token = %v; want 401", err)
	}
	cp.Close()
	if err := h.dc.ContainerKill(ctx, run2.ContainerID, "SIGKILL"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the crash to be noticed", func() bool { return h.store.status(run2.SessionID) == StatusCrashed })
	// The leases go once the end is recorded.
	waitUntil(t, "the workspace to be free after the crash", func() bool {
		_, ok := h.m.Leases.Holder(lease.Resource{Kind: lease.Workspace, Name: "other"})
		return !ok
	})
	if _, err := h.m.Start(ctx, "lc-agent-2", lease.Overrides{}); err != nil {
		t.Fatalf("Start(lc-agent-2) after its crash = %v", err)
	}
	defer h.m.Stop(ctx, "lc-agent-2")

	// No secret in the workspace or the logs.
	h.m.Stop(ctx, "lc-agent-2")
	for _, dir := range []string{h.ws["main"], h.ws["other"], h.home.LogsDir()} {
		filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() {
				return nil
			}
			data, _ := os.ReadFile(p)
			for _, s := range []string{secretValue, gitSecret, "tg-token-never-sent"} {
				if bytes.Contains(data, []byte(s)) {
					t.Errorf("%s holds secret %q", p, s)
				}
			}
			return nil
		})
	}
	// The agent's own log lines reached its log (then archived at session end).
	archives, _ := filepath.Glob(filepath.Join(h.home.LogsDir(), "archive", "lc-agent-1", "*.log.gz"))
	if len(archives) == 0 {
		t.Error("lc-agent-1's log was not archived at session end")
	}
}

func TestStartRefusals(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if _, err := h.m.Start(ctx, "ghost", lease.Overrides{}); err == nil || !strings.Contains(err.Error(), `no agent named "ghost"`) {
		t.Errorf("Start(ghost) = %v", err)
	}
	if _, err := h.m.Start(ctx, "lc-agent-1", lease.Overrides{Workspace: "nope"}); err == nil || !strings.Contains(err.Error(), "--workspace=nope") {
		t.Errorf("Start with an unknown workspace = %v", err)
	}
	os.RemoveAll(h.ws["other"])
	if _, err := h.m.Start(ctx, "lc-agent-1", lease.Overrides{Workspace: "other"}); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("Start with a missing workspace directory = %v", err)
	}
	if _, ok := h.m.Leases.Holder(lease.Resource{Kind: lease.DM, Name: "dm1"}); ok {
		t.Error("a refused start left a lease behind")
	}
	if err := h.m.Stop(ctx, "lc-agent-1"); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Stop of a stopped agent = %v; want ErrNotRunning", err)
	}
}

func TestRestartAndWorkspaceReset(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if _, err := h.m.Start(ctx, "lc-agent-2", lease.Overrides{Workspace: "other"}); err != nil {
		t.Fatal(err)
	}
	first := h.m.run("lc-agent-2").SessionID
	st, err := h.m.Restart(ctx, "lc-agent-2")
	if err != nil {
		t.Fatalf("Restart = %v", err)
	}
	if st.SessionID == first || st.Bindings.Workspace != "other" || st.State != StateRunning {
		t.Errorf("after restart: %+v; want a new running session on the same workspace", st)
	}
	if got := h.store.status(first); got != StatusStopped {
		t.Errorf("first session = %q; want stopped", got)
	}
	var holder string
	for _, w := range h.m.Workspaces() {
		if w.Name == "other" {
			holder = w.Holder
		}
	}
	if holder != "lc-agent-2" {
		t.Errorf("workspace list holder of other = %q; want lc-agent-2", holder)
	}
	os.WriteFile(filepath.Join(h.ws["other"], "notes.txt"), []byte("x"), 0o644)
	os.Symlink("/etc", filepath.Join(h.ws["other"], "etc-link"))
	res, err := h.m.ResetWorkspace(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	if res.StoppedAgent != "lc-agent-2" {
		t.Errorf("reset stopped %q; want lc-agent-2", res.StoppedAgent)
	}
	if entries, _ := os.ReadDir(h.ws["other"]); len(entries) != 0 {
		t.Errorf("workspace after reset holds %d entries; want none", len(entries))
	}
	if _, err := os.Stat("/etc/passwd"); err != nil {
		t.Error("reset followed a symlink out of the workspace")
	}
	if st, _ := h.m.Status("lc-agent-2"); st.State != "stopped" {
		t.Errorf("lc-agent-2 after reset = %s; want stopped", st.State)
	}
	if _, err := h.m.ResetWorkspace(ctx, "nope"); err == nil || !strings.Contains(err.Error(), `no workspace named "nope"`) {
		t.Errorf("reset of an unknown workspace = %v", err)
	}
}
