package lifecycle

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/internal/docker"
)

// fakeRuntime is a Runtime in memory: Wait returns once exit is sent a
// code; it records the boxes removed and the labels listed.
type fakeRuntime struct {
	exit chan int64

	mu      sync.Mutex
	removed []string
	listed  map[string]string
	swept   map[string]string // the labels Sweep was given
}

func (f *fakeRuntime) Sweep(_ context.Context, labels map[string]string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.swept = labels
	return 2, nil
}

var _ Sweeper = (*fakeRuntime)(nil)

var _ Runtime = (*fakeRuntime)(nil)

func (f *fakeRuntime) Create(context.Context, Box) (string, error)       { return "box-1", nil }
func (f *fakeRuntime) Start(context.Context, string) error               { return nil }
func (f *fakeRuntime) Stop(context.Context, string, time.Duration) error { return nil }
func (f *fakeRuntime) Inspect(context.Context, string) (BoxState, error) {
	return BoxState{Running: true}, nil
}
func (f *fakeRuntime) Wait(ctx context.Context, id string) (int64, error) { return <-f.exit, nil }
func (f *fakeRuntime) Logs(context.Context, string, docker.LogsOptions) (*docker.LogStream, error) {
	return nil, ErrGone
}
func (f *fakeRuntime) Remove(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removed = append(f.removed, id)
	return nil
}
func (f *fakeRuntime) List(_ context.Context, labels map[string]string) ([]BoxSummary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listed = labels
	return []BoxSummary{{ID: "orphan-1", Labels: labels}}, nil
}

// With a Runtime set, the lifecycle reaches boxes only through it: a crash
// its Wait reports ends the session as crashed, releases the leases and
// removes the box, and orphans are found and removed through it; choird's
// engine (whose container calls would fail this test) is not asked.
func TestTheLifecycleSpeaksOnlyToItsRuntime(t *testing.T) {
	rt := &fakeRuntime{exit: make(chan int64)}
	m, store, r := faultManager(t, noContainers{t}, nil)
	m.Runtime, m.Instance = rt, "inst"
	go m.watch(r)
	rt.exit <- 137
	waitUntil2(t, "the session to end and its leases to be free", func() bool {
		return m.run("a1") == nil && len(m.Leases.Held("a1")) == 0 && !m.ending1("a1")
	})
	store.mu.Lock()
	s, why := store.sessions["s-a1"], store.reasons["s-a1"]
	store.mu.Unlock()
	if s.Status != StatusCrashed || !strings.Contains(why, "code 137") {
		t.Errorf("session = %s (%q); want crashed with exit code 137", s.Status, why)
	}
	if n, err := m.RemoveOrphans(context.Background()); err != nil || n != 1 {
		t.Errorf("RemoveOrphans = %d, %v; want the runtime's one orphan removed", n, err)
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if !slices.Equal(rt.removed, []string{"c-a1", "orphan-1"}) {
		t.Errorf("removed through the runtime: %v; want the crashed box and the orphan", rt.removed)
	}
	if rt.listed[LabelManaged] != "true" || rt.listed[LabelInstance] != "inst" {
		t.Errorf("orphans listed by %v; want managed and this instance", rt.listed)
	}
	if !maps.Equal(rt.swept, rt.listed) {
		t.Errorf("swept by %v; want the leftovers of this instance's boxes swept too", rt.swept)
	}
}

// ending1 reports whether agent's session end is still finishing.
func (m *Manager) ending1(agent string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ending[agent] > 0
}

// noContainers fails the test on any container call: with a Runtime set,
// choird's engine serves images only.
type noContainers struct{ t *testing.T }

func (d noContainers) fail(what string) {
	d.t.Errorf("the lifecycle called %s on choird's engine although a Runtime is set", what)
}
func (d noContainers) ContainerCreate(context.Context, string, *docker.ContainerConfig, *docker.HostConfig) (docker.CreateResponse, error) {
	d.fail("ContainerCreate")
	return docker.CreateResponse{}, nil
}
func (d noContainers) ContainerStart(context.Context, string) error {
	d.fail("ContainerStart")
	return nil
}
func (d noContainers) ContainerStop(context.Context, string, time.Duration) error {
	d.fail("ContainerStop")
	return nil
}
func (d noContainers) ContainerRemove(context.Context, string, docker.ContainerRemoveOptions) error {
	d.fail("ContainerRemove")
	return nil
}
func (d noContainers) ContainerWait(context.Context, string, docker.WaitCondition) (docker.WaitResponse, error) {
	d.fail("ContainerWait")
	return docker.WaitResponse{}, nil
}
func (d noContainers) ContainerInspect(context.Context, string) (docker.Container, error) {
	d.fail("ContainerInspect")
	return docker.Container{}, nil
}
func (d noContainers) ContainerList(context.Context, docker.ContainerListOptions) ([]docker.ContainerSummary, error) {
	d.fail("ContainerList")
	return nil, nil
}
func (d noContainers) ContainerLogs(context.Context, string, docker.LogsOptions) (*docker.LogStream, error) {
	d.fail("ContainerLogs")
	return nil, ErrGone
}
func (d noContainers) ImageInspect(context.Context, string) (docker.Image, error) {
	return docker.Image{}, nil
}

// gatedRuntime blocks every Remove until open is closed, counting how many
// wait at once.
type gatedRuntime struct {
	fakeRuntime
	open           chan struct{}
	arrived        chan struct{}
	inFlight, most int
	mu2            sync.Mutex
}

func (g *gatedRuntime) Remove(ctx context.Context, id string) error {
	g.mu2.Lock()
	g.inFlight++
	g.most = max(g.most, g.inFlight)
	g.mu2.Unlock()
	g.arrived <- struct{}{}
	<-g.open
	g.mu2.Lock()
	g.inFlight--
	g.mu2.Unlock()
	return g.fakeRuntime.Remove(ctx, id)
}

// Sessions ending together (choird's stop ends them all at once) reach
// the engine at most MaxBoxEnds at a time, and every box is removed.
func TestBoxesEndAFewAtATime(t *testing.T) {
	m, _, _ := faultManager(t, noContainers{t}, nil)
	g := &gatedRuntime{open: make(chan struct{}), arrived: make(chan struct{}, 100)}
	m.Runtime = g
	const n = 3 * MaxBoxEnds
	var wg sync.WaitGroup
	for i := range n {
		exited := make(chan struct{})
		close(exited) // the agent is gone already: only the removal is left
		r := &Run{AgentID: fmt.Sprintf("a%d", i), SessionID: fmt.Sprintf("s%d", i), ContainerID: fmt.Sprintf("box-%d", i), exited: exited}
		wg.Add(1)
		go func() { defer wg.Done(); m.endBox(r, StatusStopped) }()
	}
	for range MaxBoxEnds {
		<-g.arrived // the first MaxBoxEnds reach the engine...
	}
	select {
	case <-g.arrived:
		t.Fatalf("a removal beyond the first %d reached the engine while they all still ran", MaxBoxEnds)
	default: // ...and no more while they run
	}
	close(g.open)
	wg.Wait()
	g.mu.Lock()
	removed := len(g.removed)
	g.mu.Unlock()
	if removed != n || g.most != MaxBoxEnds {
		t.Errorf("%d boxes removed, at most %d at once; want %d, %d", removed, g.most, n, MaxBoxEnds)
	}
}
