package lifecycle

import (
	"context"
	"strings"
	"testing"

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
