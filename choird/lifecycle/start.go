package lifecycle

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"choir/choird/lease"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/docker"
	"choir/internal/metrics"
	"choir/internal/rpc"
)

// DefaultReadyTimeout bounds how long a start waits for INIT_HELLO.
const DefaultReadyTimeout = 30 * time.Second

// Start starts an agent: resolve its bindings, lease every exclusive
// resource at once, record the session, admit its lease token, create and
// start the container, and wait for INIT_HELLO. On any failure everything
// taken so far is given back.
func (m *Manager) Start(ctx context.Context, agentID string, o lease.Overrides) (ctl.AgentStatus, error) {
	if ctx.Value(restartAttemptKey{}) == nil {
		m.cancelRestart(agentID, "agent start") // the operator's start supersedes a pending restart
	}
	lk := m.agentLock(agentID)
	lk.Lock()
	defer lk.Unlock()
	return m.start(ctx, agentID, o, "")
}

// Restart stops an agent and starts it again with the same image and the
// same resource bindings.
func (m *Manager) Restart(ctx context.Context, agentID string) (ctl.AgentStatus, error) {
	return m.restart(ctx, agentID, true)
}

// Update stops a running agent gracefully (its session saved) and starts
// it on the newest image `agent build` made, with the bindings it started
// with, resuming its session (§17.4). Like Restart, a model or voice set
// since the start does not survive it.
func (m *Manager) Update(ctx context.Context, agentID string) (ctl.AgentStatus, error) {
	return m.restart(ctx, agentID, false)
}

// restart stops a running agent and starts it again, on the same image or
// the newest.
func (m *Manager) restart(ctx context.Context, agentID string, sameImage bool) (ctl.AgentStatus, error) {
	lk := m.agentLock(agentID)
	lk.Lock()
	defer lk.Unlock()
	r := m.run(agentID)
	if r == nil {
		return ctl.AgentStatus{}, fmt.Errorf("%s: %w", agentID, ErrNotRunning)
	}
	// The bindings the session started with: a model or voice set since is
	// transient and does not survive a restart (§17.1).
	b := r.started
	o := lease.Overrides{Workspace: b.Workspace, LLM: b.LLM, VoiceProfile: b.VoiceProfile, GitIdentity: b.GitIdentity, Notion: b.Notion, Email: b.Email, DM: b.DM,
		CoreLLM: b.CoreLLM, SummaryLLM: b.SummaryLLM}
	m.stop(ctx, r)
	image := ""
	if sameImage {
		image = r.Image
	}
	return m.start(ctx, agentID, o, image)
}

// start is Start with the agent's lock held; image "" means the newest.
func (m *Manager) start(ctx context.Context, agentID string, o lease.Overrides, image string) (_ ctl.AgentStatus, err error) {
	defer metrics.AgentStartSeconds.Time(time.Now(), &err)
	l, version := m.Config()
	b, resources, err := lease.Resolve(l.Config, agentID, o)
	if err != nil {
		return ctl.AgentStatus{}, err
	}
	wsPath := l.Config.Workspaces[b.Workspace].Path
	// Again at every start, for the workspace it mounts: a path checked
	// when choird started may have been replaced by a symbolic link since
	// (the engine would mount what it points to).
	if ps := config.CheckWorkspaceHost(l.Config, m.Home, b.Workspace); len(ps) > 0 {
		return ctl.AgentStatus{}, fmt.Errorf("cannot start %s: workspace %s no longer passes choird's checks:\n%s", agentID, b.Workspace, ps.Error())
	}
	owner, err := workspaceOwner(b.Workspace, wsPath)
	if err != nil {
		return ctl.AgentStatus{}, err
	}
	imageVersion := ""
	if image == "" {
		image, imageVersion, err = m.latestImage(ctx, agentID)
		if err != nil {
			return ctl.AgentStatus{}, err
		}
	} else {
		imageVersion = image[strings.LastIndex(image, ":")+1:]
	}
	sessionID, resume := rpc.NewRequestID(), (*resumeInfo)(nil)
	if !o.Fresh {
		prev, ok, err := m.resumable(ctx, agentID)
		if err != nil {
			return ctl.AgentStatus{}, err
		}
		if ok {
			sessionID, resume = prev.SessionID, &resumeInfo{from: prev.Status, rev: prev.Head.Rev, resumes: prev.Resumes + 1}
		}
	}
	if err := m.Leases.Acquire(agentID, resources); err != nil {
		return ctl.AgentStatus{}, fmt.Errorf("cannot start %s: %w", agentID, err)
	}
	r := &Run{
		AgentID: agentID, SessionID: sessionID, Image: image, ImageVersion: imageVersion, resume: resume,
		Bindings: b, started: b, Resources: resources, StartedAt: m.now(), token: rpc.NewToken(),
		ready: make(chan struct{}), exited: make(chan struct{}), state: StateStarting,
		configVersion: version, lanes: map[string]rpc.StatusReq{},
		ModelProxy: l.Config.Agents[agentID].ModelProxy,
	}
	if l.Config.Agents[agentID].Network.Policy() {
		// No route out: choird carries the model calls and the agent's
		// own connections (its tunnel), choir.net.fetch the tools'.
		r.Offline, r.ModelProxy = true, true
	}
	rec := SessionRecord{SessionID: r.SessionID, AgentID: agentID, LeaseID: r.SessionID, Status: StatusActive, StartedAt: r.StartedAt,
		Bindings: b, Leases: resources, Image: image, Resume: resume != nil, Instance: m.Instance}
	if err := m.Store.CreateSession(ctx, rec); err != nil {
		m.Leases.Release(agentID)
		return ctl.AgentStatus{}, fmt.Errorf("record the session of %s: %w", agentID, err)
	}
	if resume != nil {
		m.logf(r, "resuming the session", "from", resume.from, "rev", resume.rev, "resumes", resume.resumes)
	}
	m.register(r)
	m.Sessions.Open(r.SessionID, r.AgentID, r.token)
	if err := m.launch(ctx, r, wsPath, owner); err != nil {
		m.end(r, StatusStopped, "start failed: "+err.Error())
		return ctl.AgentStatus{}, err
	}
	m.logf(r, "agent container started", "container", shortID(r.ContainerID), "image", image)
	timeout := m.ReadyTimeout
	if timeout == 0 {
		timeout = DefaultReadyTimeout
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-r.ready:
		return m.Status(agentID)
	case <-r.exited:
		if why := r.refusal(); why != "" {
			m.end(r, StatusStopped, "INIT_HELLO refused: "+why)
			return ctl.AgentStatus{}, fmt.Errorf("cannot start %s: %s", agentID, why)
		}
		tail := m.logTail(r.ContainerID)
		m.end(r, StatusCrashed, fmt.Sprintf("container exited with code %d before INIT_HELLO", r.exitCode))
		return ctl.AgentStatus{}, fmt.Errorf("%s exited with code %d before it said hello%s", agentID, r.exitCode, tail)
	case <-t.C:
		tail := m.logTail(r.ContainerID)
		m.end(r, StatusStopped, "no INIT_HELLO")
		return ctl.AgentStatus{}, fmt.Errorf("%s did not say hello within %s; it was stopped%s", agentID, timeout, tail)
	case <-ctx.Done():
		m.end(r, StatusStopped, "start cancelled")
		return ctl.AgentStatus{}, ctx.Err()
	}
}

func (m *Manager) register(r *Run) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.runs == nil {
		m.runs, m.sessions = map[string]*Run{}, map[string]*Run{}
	}
	m.runs[r.AgentID] = r
	m.sessions[r.SessionID] = r
}

// launch creates and starts the container and begins watching it.
func (m *Manager) launch(ctx context.Context, r *Run, wsPath string, owner fileOwner) error {
	l, _ := m.Config()
	if err := prepareChoirtmp(wsPath, owner); err != nil {
		return err
	}
	sockDir := filepath.Join(m.Home.AgentSocketDir(), r.AgentID)
	spec := Spec{
		AgentID: r.AgentID, SessionID: r.SessionID, LeaseToken: r.token, Instance: m.Instance, Image: r.Image,
		WorkspacePath: wsPath, SocketDir: sockDir, HeartbeatMS: l.Config.HeartbeatIntervalMS,
		Limits: l.Config.Container, Node: l.Config.Workspaces[r.Bindings.Workspace].Node,
	}
	// A resumed session runs in a new container each time, named after
	// the resume.
	name := "choir-" + r.AgentID + "-" + r.SessionID[:min(8, len(r.SessionID))]
	if r.resume != nil {
		name += fmt.Sprintf("-r%d", r.resume.resumes)
	}
	return m.container(ctx, r, name, spec, nil)
}

// container makes a session's container (an agent's, a run's) and starts
// it: its way to choird (its own socket in spec.SocketDir, or choird's
// HTTPS endpoint with the CA there when choird serves HTTP and the
// container is on the bridge: an offline one has no route to it and
// always gets the socket), the §15.3 profile (Profile, Offline for an
// offline session), which adjust may change before Verify checks it;
// then it is created, started and watched, and an offline session's
// network counters are found (netattempts.go).
func (m *Manager) container(ctx context.Context, r *Run, name string, spec Spec, adjust func(*docker.ContainerConfig, *docker.HostConfig)) error {
	if m.HTTP != nil && !r.Offline {
		// The agent reaches choird's shared HTTPS endpoint; its directory
		// holds only the CA it trusts for it.
		if err := writeCA(spec.SocketDir, m.HTTP.CA); err != nil {
			return err
		}
		spec.Endpoint = m.HTTP.URL
	} else {
		sock, err := m.Sockets.ListenAgent(filepath.Join(spec.SocketDir, SocketName), r.AgentID)
		if err != nil {
			return fmt.Errorf("open the session's control socket: %w", err)
		}
		r.socket = sock
	}
	cfg, hc := Profile(spec)
	if r.Offline {
		Offline(hc)
	}
	if adjust != nil {
		adjust(cfg, hc)
	}
	if err := Verify(cfg, hc, spec); err != nil {
		return err
	}
	rt := m.runtime()
	id, err := rt.Create(ctx, Box{Name: name, Config: cfg, Host: hc, Node: spec.Node})
	if err != nil {
		return fmt.Errorf("create the container: %w", err)
	}
	r.mu.Lock() // agent status reads it while the start goes on
	r.ContainerID = id
	r.mu.Unlock()
	if err := rt.Start(ctx, id); err != nil {
		return fmt.Errorf("start the container: %w", err)
	}
	if r.Offline {
		m.findNetns(ctx, r) // netattempts.go
	}
	go m.watch(r)
	go m.pumpLogs(r)
	return nil
}

// latestImage is the image the last `agent build` marked current:
// choir-agent-<id>:latest, whose choir.image_version label names its
// version tag.
func (m *Manager) latestImage(ctx context.Context, agentID string) (ref, version string, err error) {
	latest := "choir-agent-" + agentID + ":latest"
	img, err := m.Docker.ImageInspect(ctx, latest)
	if docker.IsNotFound(err) {
		return "", "", fmt.Errorf("no image for agent %s: run `choirctl agent build %s` first", agentID, agentID)
	}
	if err != nil {
		return "", "", fmt.Errorf("inspect %s: %w", latest, err)
	}
	var labels map[string]string
	if img.Config != nil {
		labels = img.Config.Labels
	}
	version = labels[LabelImageVersion]
	if labels[LabelManaged] != "true" || labels[LabelAgent] != agentID || version == "" {
		return "", "", fmt.Errorf("%s is not an image choir built for %s (labels %v): run `choirctl agent build %s`", latest, agentID, labels, agentID)
	}
	return "choir-agent-" + agentID + ":" + version, version, nil
}
