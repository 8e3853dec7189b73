package swarm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"choir/choird/lifecycle"
	"choir/internal/docker"
)

// Engine is what the Swarm runtime needs of a manager's engine (a
// *docker.Client).
type Engine interface {
	ServiceCreate(ctx context.Context, spec docker.ServiceSpec, auth *docker.RegistryAuth) (docker.ServiceCreateResponse, error)
	ServiceInspect(ctx context.Context, id string) (docker.Service, error)
	ServiceRemove(ctx context.Context, id string) error
	ServiceList(ctx context.Context, filters docker.Filters) ([]docker.Service, error)
	ServiceLogs(ctx context.Context, id string, opts docker.LogsOptions) (*docker.LogStream, error)
	TaskList(ctx context.Context, filters docker.Filters) ([]docker.Task, error)
	SecretCreate(ctx context.Context, spec docker.SecretSpec) (string, error)
	SecretList(ctx context.Context, filters docker.Filters) ([]docker.Secret, error)
	SecretRemove(ctx context.Context, id string) error
	ImageInspect(ctx context.Context, ref string) (docker.Image, error)
	ImageTag(ctx context.Context, source, target string) error
	ImagePush(ctx context.Context, ref string, auth docker.RegistryAuth, progress docker.ProgressFunc) (docker.PushResult, error)
	ImageSave(ctx context.Context, ref string) (io.ReadCloser, error)
}

var _ Engine = (*docker.Client)(nil)

// Labels the runtime adds to what it makes.
const (
	// LabelImageID on a service is the id of the image its digest names
	// (the config digest of the manifest pushed): what the image check
	// compares with the build record.
	LabelImageID = "choir.image_id"
	// LabelBox on a secret names the service it was made for.
	LabelBox = "choir.box"
)

// DefaultPollEvery is how often Wait and Stop ask the manager about a
// box's task (Swarm has no wait for tasks).
const DefaultPollEvery = 200 * time.Millisecond

// Runtime runs boxes as services on the Swarm that Engine manages.
type Runtime struct {
	Engine Engine
	// Registry is "host:port" of the registry every node pulls from.
	Registry string
	// Auth returns the registry's credentials (runtime.registry_secret),
	// read at each use; nil means none.
	Auth func() (docker.RegistryAuth, error)
	// ClientCert makes a session's client certificate and key (PEM) for
	// mutual TLS with choird's listener; required.
	ClientCert func(sessionID, agentID string) (cert, key []byte, err error)
	// PollEvery is DefaultPollEvery when zero.
	PollEvery time.Duration

	mu        sync.Mutex
	published map[string]Published // by local image id
	names     map[string]string    // service id → box name, for Remove after Stop
}

var _ lifecycle.Runtime = (*Runtime)(nil)

func (rt *Runtime) every() time.Duration {
	if rt.PollEvery > 0 {
		return rt.PollEvery
	}
	return DefaultPollEvery
}

func (rt *Runtime) auth() (docker.RegistryAuth, error) {
	if rt.Auth == nil {
		return docker.RegistryAuth{ServerAddress: rt.Registry}, nil
	}
	a, err := rt.Auth()
	if err != nil {
		return docker.RegistryAuth{}, fmt.Errorf("the registry's credentials (runtime.registry_secret): %w", err)
	}
	a.ServerAddress = rt.Registry
	return a, nil
}

// Create publishes the box's image (Publish), gives the box its secrets
// (the lease token, the CA, a client certificate made for its session)
// and creates its service, which Swarm starts at once.
func (rt *Runtime) Create(ctx context.Context, b lifecycle.Box) (string, error) {
	pub, err := rt.Publish(ctx, b.Config.Image)
	if err != nil {
		return "", err
	}
	var creds Credentials
	for _, m := range b.Host.Mounts {
		if m.Target == lifecycle.SocketTarget {
			if creds.CA, err = os.ReadFile(filepath.Join(m.Source, lifecycle.CAName)); err != nil {
				return "", fmt.Errorf("read the CA the agent trusts for choird: %w", err)
			}
		}
	}
	if rt.ClientCert != nil {
		if creds.ClientCert, creds.ClientKey, err = rt.ClientCert(envOf(b.Config.Env, lifecycle.EnvSessionID), envOf(b.Config.Env, lifecycle.EnvAgentID)); err != nil {
			return "", err
		}
	}
	spec, files, err := Translate(b, pub.Ref, creds)
	if err != nil {
		return "", err
	}
	spec.Labels = withLabel(spec.Labels, LabelImageID, pub.ImageID)
	made := []string{}
	undo := func() {
		for _, id := range made {
			rt.Engine.SecretRemove(context.WithoutCancel(ctx), id)
		}
	}
	cs := spec.TaskTemplate.ContainerSpec
	for i, f := range files {
		id, err := rt.Engine.SecretCreate(ctx, docker.SecretSpec{Name: f.Name, Labels: withLabel(b.Config.Labels, LabelBox, b.Name), Data: f.Data})
		if err != nil {
			undo()
			return "", fmt.Errorf("create the secret %s: %w", f.Name, err)
		}
		made = append(made, id)
		cs.Secrets[i].SecretID = id
	}
	auth, err := rt.auth()
	if err != nil {
		undo()
		return "", err
	}
	resp, err := rt.Engine.ServiceCreate(ctx, spec, &auth)
	if err != nil {
		undo()
		return "", fmt.Errorf("create the service %s: %w", b.Name, err)
	}
	rt.mu.Lock()
	if rt.names == nil {
		rt.names = map[string]string{}
	}
	rt.names[resp.ID] = b.Name
	rt.mu.Unlock()
	return resp.ID, nil
}

// Start does nothing: a service's task starts when the service is created.
func (rt *Runtime) Start(ctx context.Context, id string) error { return nil }

// Stop removes the service, which stops its task (SIGTERM, SIGKILL after
// StopGrace), and waits, at most timeout and a little more, until the task
// has ended.
func (rt *Runtime) Stop(ctx context.Context, id string, timeout time.Duration) error {
	if err := rt.Engine.ServiceRemove(ctx, id); err != nil {
		return gone(err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+5*time.Second)
	defer cancel()
	t := time.NewTicker(rt.every())
	defer t.Stop()
	for {
		tasks, err := rt.Engine.TaskList(ctx, docker.Filters{"service": {id}})
		if err != nil || !slices.ContainsFunc(tasks, func(t docker.Task) bool { return !t.Status.Ended() }) {
			return nil // no task left running (a removed service's list may fail)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stop service %s: its task still runs after %s", id, timeout)
		case <-t.C:
		}
	}
}

// Remove removes the service (if still there: Stop removed it) and its
// secrets.
func (rt *Runtime) Remove(ctx context.Context, id string) error {
	rt.mu.Lock()
	name := rt.names[id]
	rt.mu.Unlock()
	if s, err := rt.Engine.ServiceInspect(ctx, id); err == nil {
		name = s.Spec.Name
		if err := rt.Engine.ServiceRemove(ctx, id); err != nil && !docker.IsNotFound(err) {
			return err
		}
	} else if !docker.IsNotFound(err) {
		return err
	}
	if name == "" {
		return nil
	}
	if err := rt.removeSecrets(ctx, name); err != nil {
		return err
	}
	rt.mu.Lock()
	delete(rt.names, id)
	rt.mu.Unlock()
	return nil
}

// removeSecrets removes the secrets made for the box name. A secret is in
// use until its service is gone from the manager: it is asked again for a
// few seconds.
func (rt *Runtime) removeSecrets(ctx context.Context, name string) error {
	secrets, err := rt.Engine.SecretList(ctx, docker.Filters{"label": {LabelBox + "=" + name}})
	if err != nil {
		return fmt.Errorf("list the secrets of %s: %w", name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, s := range secrets {
		for {
			err := rt.Engine.SecretRemove(ctx, s.ID)
			if err == nil || docker.IsNotFound(err) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("remove the secret %s of %s: %w", s.Spec.Name, name, err)
			case <-time.After(rt.every()):
			}
		}
	}
	return nil
}

// task is the box's task: the newest of its service's (it has one, as it
// never restarts), or ok false when none is scheduled yet.
func (rt *Runtime) task(ctx context.Context, id string) (docker.Task, bool, error) {
	tasks, err := rt.Engine.TaskList(ctx, docker.Filters{"service": {id}})
	if err != nil {
		return docker.Task{}, false, err
	}
	if len(tasks) == 0 {
		if _, err := rt.Engine.ServiceInspect(ctx, id); err != nil {
			return docker.Task{}, false, gone(err)
		}
		return docker.Task{}, false, nil
	}
	sort.Slice(tasks, func(i, j int) bool { return tasks[i].CreatedAt.After(tasks[j].CreatedAt) })
	return tasks[0], true, nil
}

// Inspect tells where the box's task stands; the image id is the one its
// digest names.
func (rt *Runtime) Inspect(ctx context.Context, id string) (lifecycle.BoxState, error) {
	s, err := rt.Engine.ServiceInspect(ctx, id)
	if err != nil {
		return lifecycle.BoxState{}, gone(err)
	}
	st := lifecycle.BoxState{Running: true, ImageID: s.Spec.Labels[LabelImageID]}
	t, ok, err := rt.task(ctx, id)
	if err != nil {
		return lifecycle.BoxState{}, err
	}
	if ok && t.Status.Ended() {
		st.Running, st.ExitCode = false, exitCode(t)
		st.OOMKilled = strings.Contains(strings.ToLower(t.Status.Err), "oom")
	}
	return st, nil
}

// Wait polls the box's task until it has ended and returns its exit code
// (-1 when it never ran: rejected, say, because no node fits).
func (rt *Runtime) Wait(ctx context.Context, id string) (int64, error) {
	t := time.NewTicker(rt.every())
	defer t.Stop()
	for {
		task, ok, err := rt.task(ctx, id)
		if err != nil {
			return -1, err
		}
		if ok && task.Status.Ended() {
			return exitCode(task), nil
		}
		select {
		case <-ctx.Done():
			return -1, ctx.Err()
		case <-t.C:
		}
	}
}

func exitCode(t docker.Task) int64 {
	if c := t.Status.ContainerStatus; c != nil && c.ContainerID != "" {
		return int64(c.ExitCode)
	}
	return -1
}

// Logs streams the service's logs, which the manager gathers from the node.
func (rt *Runtime) Logs(ctx context.Context, id string, opts docker.LogsOptions) (*docker.LogStream, error) {
	s, err := rt.Engine.ServiceLogs(ctx, id, opts)
	return s, gone(err)
}

// List returns the services carrying labels.
func (rt *Runtime) List(ctx context.Context, labels map[string]string) ([]lifecycle.BoxSummary, error) {
	ss, err := rt.Engine.ServiceList(ctx, labelFilter(labels))
	if err != nil {
		return nil, err
	}
	out := make([]lifecycle.BoxSummary, len(ss))
	for i, s := range ss {
		out[i] = lifecycle.BoxSummary{ID: s.ID, Labels: s.Spec.Labels}
	}
	return out, nil
}

// Sweep removes the secrets carrying labels whose box has no service:
// what a Create cut short between its secrets and its service (choird
// died) left behind. It is lifecycle.Sweeper's, run by RemoveOrphans at
// choird's start, before any box is created.
func (rt *Runtime) Sweep(ctx context.Context, labels map[string]string) (int, error) {
	ss, err := rt.Engine.ServiceList(ctx, labelFilter(labels))
	if err != nil {
		return 0, fmt.Errorf("list services: %w", err)
	}
	boxes := map[string]bool{}
	for _, s := range ss {
		boxes[s.Spec.Name] = true
	}
	secrets, err := rt.Engine.SecretList(ctx, labelFilter(labels))
	if err != nil {
		return 0, fmt.Errorf("list secrets: %w", err)
	}
	n := 0
	for _, sec := range secrets {
		box := sec.Spec.Labels[LabelBox]
		if box == "" || boxes[box] {
			continue
		}
		if err := rt.Engine.SecretRemove(ctx, sec.ID); err != nil && !docker.IsNotFound(err) {
			return n, fmt.Errorf("remove the secret %s left by %s: %w", sec.Spec.Name, box, err)
		}
		n++
	}
	return n, nil
}

var _ lifecycle.Sweeper = (*Runtime)(nil)

// labelFilter filters by every one of labels.
func labelFilter(labels map[string]string) docker.Filters {
	f := docker.Filters{}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f["label"] = append(f["label"], k+"="+labels[k])
	}
	return f
}

// gone wraps a not-found answer as lifecycle.ErrGone.
func gone(err error) error {
	if err != nil && docker.IsNotFound(err) && !errors.Is(err, lifecycle.ErrGone) {
		return fmt.Errorf("%w: %w", lifecycle.ErrGone, err)
	}
	return err
}

// envOf is the value of name in env ("NAME=value" entries).
func envOf(env []string, name string) string {
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, name+"="); ok {
			return v
		}
	}
	return ""
}

func withLabel(labels map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(labels)+1)
	for a, b := range labels {
		out[a] = b
	}
	out[k] = v
	return out
}
