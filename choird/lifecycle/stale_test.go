package lifecycle

import (
	"context"
	"strings"
	"testing"

	"choir/choird/lease"
	"choir/internal/rpc"
)

// choird that died under a running agent finds its session at the next
// start: it marks it crashed, tells the DM, and an on-crash agent is
// started again after its backoff, resuming the same session; an agent
// without the policy is only told about.
func TestSessionsInterruptedByChoirdAreToldAndRestarted(t *testing.T) {
	ctx := context.Background()
	for _, policy := range []string{"on-crash", "off"} {
		t.Run(policy, func(t *testing.T) {
			p := onCrash(5, 100, 1000)
			if policy == "off" {
				p.Policy = "off"
			}
			rig := newRestartRig(t, p)
			b := rpc.ResourceBindings{Workspace: "main", LLM: "m", GitIdentity: "dev", DM: "dm1"}
			rig.store.sessions["s-old"] = SessionRecord{SessionID: "s-old", AgentID: "a1", Status: StatusActive, StartedAt: rig.clock(), Bindings: b}
			rig.store.events["s-old"] = storedLog(t, 3)
			if n, err := rig.m.CrashStaleSessions(ctx); err != nil || n != 1 {
				t.Fatalf("CrashStaleSessions = %d, %v; want the one stale session", n, err)
			}
			rig.m.AfterStart(ctx)
			dm := rig.lastDM(t)
			if !strings.Contains(dm, "choird restarted while a1 was running") {
				t.Errorf("DM = %q; want the interruption told", dm)
			}
			if policy == "off" {
				if n := rig.timers.count(); n != 0 || !strings.Contains(dm, "/start a1") {
					t.Errorf("policy off: %d restarts scheduled, DM %q; want none and how to start it", n, dm)
				}
				return
			}
			if rig.timers.count() != 1 || !strings.Contains(dm, "starts it again in") {
				t.Fatalf("%d restarts scheduled, DM %q; want one, said", rig.timers.count(), dm)
			}
			rig.fire(t)
			r := rig.m.run("a1")
			if r == nil || r.SessionID != "s-old" || r.resume == nil || r.resume.rev != 3 {
				t.Fatalf("after the restart a1 runs %+v; want the interrupted session s-old resumed at 3", r)
			}
			if r.Bindings.DM != "dm1" || r.Bindings.Workspace != "main" {
				t.Errorf("restarted with bindings %+v; want the interrupted session's", r.Bindings)
			}
		})
	}
}

// Two replicas share the sessions table (issue 26): a replica that starts
// marks crashed only the sessions it ran (and those recorded before
// sessions named their instance), never the other replica's running
// agents; it tells and restarts only its own.
func TestStartSweepLeavesTheOtherReplicasSessions(t *testing.T) {
	ctx := context.Background()
	rig := newRestartRig(t, onCrash(5, 100, 1000))
	rig.m.Instance, rig.m.Replicated = "replica-a", true
	b := rpc.ResourceBindings{Workspace: "main", LLM: "m", GitIdentity: "dev", DM: "dm1"}
	rig.store.sessions["s-mine"] = SessionRecord{SessionID: "s-mine", AgentID: "a1", Status: StatusActive, StartedAt: rig.clock(), Bindings: b, Instance: "replica-a"}
	rig.store.sessions["s-old"] = SessionRecord{SessionID: "s-old", AgentID: "a2", Status: StatusActive, StartedAt: rig.clock(), Bindings: b}
	rig.store.sessions["s-theirs"] = SessionRecord{SessionID: "s-theirs", AgentID: "a3", Status: StatusActive, StartedAt: rig.clock(), Bindings: b, Instance: "replica-b"}
	rig.store.sessions["s-run"] = SessionRecord{SessionID: "s-run", AgentID: "a3", Status: StatusActive, StartedAt: rig.clock(), Kind: SessionRun, RunID: "r-1", Instance: "replica-b"}
	if n, err := rig.m.CrashStaleSessions(ctx); err != nil || n != 2 {
		t.Fatalf("CrashStaleSessions = %d, %v; want 2 (its own and the one without an instance)", n, err)
	}
	for id, want := range map[string]string{"s-mine": StatusCrashed, "s-old": StatusCrashed, "s-theirs": StatusActive, "s-run": StatusActive} {
		if got := rig.store.sessions[id].Status; got != want {
			t.Errorf("session %s after replica-a's start = %s; want %s", id, got, want)
		}
	}
	rig.m.AfterStart(ctx)
	rig.out.mu.Lock()
	defer rig.out.mu.Unlock()
	for _, m := range rig.out.sent {
		if strings.Contains(m.Text, "a3") {
			t.Errorf("the DM was told %q: a3 runs on the other replica, untouched", m.Text)
		}
	}
	if len(rig.out.sent) != 2 {
		t.Errorf("%d interruption notices; want 2 (a1 and a2)", len(rig.out.sent))
	}
}

// A session records the instance that runs it, so that the other
// replica's start leaves it alone.
func TestSessionsRecordTheirInstance(t *testing.T) {
	ctx := context.Background()
	rig := newRestartRig(t, onCrash(5, 100, 1000))
	rig.m.Instance = "replica-a"
	if _, err := rig.m.Start(ctx, "a1", lease.Overrides{}); err != nil {
		t.Fatal(err)
	}
	r := rig.m.run("a1")
	if got := rig.store.sessions[r.SessionID].Instance; got != "replica-a" {
		t.Errorf("session of a1 recorded with instance %q; want replica-a", got)
	}
}

// A single choird (no replica) sweeps every active session, whatever
// instance recorded it: its home may have moved since, which changes its
// instance, and no other choird runs them.
func TestSingleChoirdSweepsEverySession(t *testing.T) {
	ctx := context.Background()
	rig := newRestartRig(t, onCrash(5, 100, 1000))
	rig.m.Instance = "moved-home"
	b := rpc.ResourceBindings{Workspace: "main", LLM: "m", GitIdentity: "dev", DM: "dm1"}
	rig.store.sessions["s-before-the-move"] = SessionRecord{SessionID: "s-before-the-move", AgentID: "a1", Status: StatusActive, StartedAt: rig.clock(), Bindings: b, Instance: "old-home"}
	if n, err := rig.m.CrashStaleSessions(ctx); err != nil || n != 1 || rig.store.sessions["s-before-the-move"].Status != StatusCrashed {
		t.Errorf("CrashStaleSessions = %d, %v, the session %s; want it crashed", n, err, rig.store.sessions["s-before-the-move"].Status)
	}
}
