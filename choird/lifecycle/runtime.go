package lifecycle

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"choir/internal/docker"
)

// Runtime runs agent boxes: one box is one session's container, made from
// the §15.3 profile (Profile, checked by Verify) whatever runs it. The
// lifecycle, the leases, recovery, run sessions and the arbiter speak only
// this; each runtime translates the profile into what it runs and refuses,
// with an error saying what and why, what it cannot carry. Local (the
// default) runs containers on choird's engine; choird/swarm runs services
// on the Swarm that engine manages.
//
// An error matching ErrGone (or docker.IsNotFound) says the box is gone;
// any other error says nothing about the box (its engine did not answer).
type Runtime interface {
	// Create makes the box; it may already run (a Swarm service does).
	Create(ctx context.Context, b Box) (id string, err error)
	Start(ctx context.Context, id string) error
	// Stop asks the box to end (SIGTERM), killing it after timeout.
	Stop(ctx context.Context, id string, timeout time.Duration) error
	// Remove removes the box and what it was given, running or not.
	Remove(ctx context.Context, id string) error
	Inspect(ctx context.Context, id string) (BoxState, error)
	// Wait returns the box's exit code once it is no longer running.
	Wait(ctx context.Context, id string) (exitCode int64, err error)
	// Logs streams the box's output (multiplexed unless a TTY).
	Logs(ctx context.Context, id string, opts docker.LogsOptions) (*docker.LogStream, error)
	// List returns the boxes carrying every one of labels, stopped ones too.
	List(ctx context.Context, labels map[string]string) ([]BoxSummary, error)
}

// Sweeper is a runtime that can leave things behind outside any box (a
// Swarm secret made for a service that was never created, when choird
// died between the two): RemoveOrphans has it remove those carrying the
// labels too, and is told how many.
type Sweeper interface {
	Sweep(ctx context.Context, labels map[string]string) (int, error)
}

// Box is what a runtime makes: the container the profile describes, under
// a name unique among the runtime's boxes.
type Box struct {
	Name   string
	Config *docker.ContainerConfig
	Host   *docker.HostConfig
	// Node, when set, is the choir.node label of the node that must run
	// the box: it holds the workspace's path (workspaces.<name>.node).
	// Only a runtime of many nodes reads it.
	Node string
}

// BoxState is a box as its runtime sees it.
type BoxState struct {
	Running   bool // running, starting or paused: not exited
	ExitCode  int64
	OOMKilled bool
	ImageID   string // the id ("sha256:…") of the image it runs
	// Pid is the box's first process as choird's host sees it; 0 when the
	// box runs elsewhere (another node, another PID namespace).
	Pid int
}

// BoxSummary is a box as List finds it.
type BoxSummary struct {
	ID     string
	Labels map[string]string
}

// ErrGone says the runtime no longer knows the box.
var ErrGone = errors.New("the agent box is gone")

// isGone reports whether err says the box is gone.
func isGone(err error) bool { return errors.Is(err, ErrGone) || docker.IsNotFound(err) }

// runtime is the Runtime in use: m.Runtime, or choird's engine (m.Docker).
func (m *Manager) runtime() Runtime {
	if m.Runtime != nil {
		return m.Runtime
	}
	return Local{Docker: m.Docker}
}

// Local runs boxes as containers on one engine: choird's, as choir always
// did.
type Local struct {
	Docker Docker
}

var _ Runtime = Local{}

func (l Local) Create(ctx context.Context, b Box) (string, error) {
	c, err := l.Docker.ContainerCreate(ctx, b.Name, b.Config, b.Host)
	return c.ID, err
}

func (l Local) Start(ctx context.Context, id string) error { return l.Docker.ContainerStart(ctx, id) }

func (l Local) Stop(ctx context.Context, id string, timeout time.Duration) error {
	return l.Docker.ContainerStop(ctx, id, timeout)
}

func (l Local) Remove(ctx context.Context, id string) error {
	return l.Docker.ContainerRemove(ctx, id, docker.ContainerRemoveOptions{Force: true})
}

func (l Local) Inspect(ctx context.Context, id string) (BoxState, error) {
	c, err := l.Docker.ContainerInspect(ctx, id)
	if err != nil {
		return BoxState{}, err
	}
	st := BoxState{ImageID: c.Image}
	if s := c.State; s != nil {
		st.Running = s.Running || s.Restarting || s.Paused
		st.ExitCode, st.OOMKilled, st.Pid = int64(s.ExitCode), s.OOMKilled, s.Pid
	}
	return st, nil
}

func (l Local) Wait(ctx context.Context, id string) (int64, error) {
	resp, err := l.Docker.ContainerWait(ctx, id, docker.WaitNotRunning)
	return resp.StatusCode, err
}

func (l Local) Logs(ctx context.Context, id string, opts docker.LogsOptions) (*docker.LogStream, error) {
	return l.Docker.ContainerLogs(ctx, id, opts)
}

func (l Local) List(ctx context.Context, labels map[string]string) ([]BoxSummary, error) {
	f := docker.Filters{}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		f["label"] = append(f["label"], k+"="+labels[k])
	}
	cs, err := l.Docker.ContainerList(ctx, docker.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, err
	}
	out := make([]BoxSummary, len(cs))
	for i, c := range cs {
		out[i] = BoxSummary{ID: c.ID, Labels: c.Labels}
	}
	return out, nil
}
