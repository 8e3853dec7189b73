package lifecycle

import (
	"context"
	"errors"
	"testing"

	"choir/choird/lease"
	"choir/internal/docker"
)

// slowRemoval is an engine whose container removal waits until released.
type slowRemoval struct {
	*flakyEngine
	removing chan struct{}
	release  chan struct{}
}

func (d *slowRemoval) ContainerRemove(ctx context.Context, id string, o docker.ContainerRemoveOptions) error {
	d.removing <- struct{}{}
	<-d.release
	return d.flakyEngine.ContainerRemove(ctx, id, o)
}

// While a session is being ended (its container removed, its end
// recorded) the agent still holds its leases, so a start is refused as
// already running: agent status says stopping then, and stopped only once
// a start can succeed (found by choirctl's TestKillNineDuringCompaction,
// where `agent start` right after status said stopped was refused).
func TestAgentStatusSaysStoppingUntilTheLeasesAreFree(t *testing.T) {
	d := &slowRemoval{flakyEngine: newFlakyEngine(), removing: make(chan struct{}), release: make(chan struct{})}
	m, store, r := faultManager(t, d, &recordingOutbox{})
	ended := make(chan struct{})
	go func() { m.end(r, StatusCrashed, "container exited unexpectedly with code 137"); close(ended) }()
	<-d.removing
	st, err := m.Status("a1")
	if err != nil || st.State != StateStopping {
		t.Errorf("Status(a1) while its session ends = %q, %v; want %q", st.State, err, StateStopping)
	}
	if err := m.Leases.Acquire("a1", []lease.Resource{{Kind: lease.Workspace, Name: "ws1"}}); !errors.Is(err, lease.ErrAlreadyRunning) {
		t.Fatalf("a lease for a1 while its session ends: %v; want ErrAlreadyRunning (else this test shows nothing)", err)
	}
	close(d.release)
	<-ended
	if st, _ := m.Status("a1"); st.State != "stopped" {
		t.Errorf("Status(a1) after its session ended = %q; want stopped", st.State)
	}
	if got := store.status("s-a1"); got != StatusCrashed {
		t.Errorf("the session after end = %q; want crashed", got)
	}
	if err := m.Leases.Acquire("a1", []lease.Resource{{Kind: lease.Workspace, Name: "ws1"}}); err != nil {
		t.Errorf("a start's leases once status says stopped: %v", err)
	}
}
