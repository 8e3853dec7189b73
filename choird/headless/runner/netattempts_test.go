package runner

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"choir/choird/headless"
	"choir/choird/headless/mood"
)

// noRouteSessions reports n network attempts counted in every run
// session's container (choird/lifecycle/netattempts.go).
type noRouteSessions struct {
	Sessions
	n int64
}

func (s noRouteSessions) Perform(ctx context.Context, t Task) (Outcome, error) {
	out, err := s.Sessions.Perform(ctx, t)
	out.NetworkAttempts = s.n
	return out, err
}

// A run whose tool tried the network (no route; the kernel counted it)
// gets an Anomaly receipt naming the attempts, and the guard sends the
// work item's next run to PARANOID.
func TestNetworkAttemptsAreAnAnomaly(t *testing.T) {
	e := newEnv(t, "40\n")
	e.runner.Sessions = noRouteSessions{Sessions: e.agent, n: 3}
	ctx := context.Background()
	it := e.workItem(t, headless.RiskLow)
	r := e.queue(t, it.ID)
	if err := e.runner.Perform(ctx, r); err != nil {
		t.Fatal(err)
	}
	rs, err := e.dir.Receipts(ctx, r, 0)
	if err != nil {
		t.Fatal(err)
	}
	var found *mood.Anomaly
	for _, x := range rs {
		var a mood.Anomaly
		if x.Kind == headless.KindAnomaly && json.Unmarshal(x.Body, &a) == nil && a.Kind == mood.UnexpectedNetwork {
			found = &a
		}
	}
	if found == nil || found.Count != 3 || !strings.Contains(found.Detail, "no route") {
		t.Fatalf("anomaly = %+v among %v; want unexpected_network with 3 attempts", found, e.kinds(t, r))
	}
	if next, err := e.runner.NextMood(ctx, it.ID, mood.Calm); err != nil || next != mood.Paranoid {
		t.Errorf("NextMood = %s, %v; want PARANOID", next, err)
	}
	if n := strings.Join(e.notices(), "\n"); !strings.Contains(n, "network") {
		t.Errorf("the DM was told %q; want the anomaly", n)
	}

	// Without attempts, no such anomaly.
	e2 := newEnv(t, "40\n")
	it2 := e2.workItem(t, headless.RiskLow)
	r2 := e2.queue(t, it2.ID)
	if err := e2.runner.Perform(ctx, r2); err != nil {
		t.Fatal(err)
	}
	rs2, _ := e2.dir.Receipts(ctx, r2, 0)
	for _, x := range rs2 {
		if x.Kind == headless.KindAnomaly && strings.Contains(string(x.Body), string(mood.UnexpectedNetwork)) {
			t.Errorf("a run without attempts has %s", x.Body)
		}
	}
}
