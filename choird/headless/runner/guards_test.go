package runner

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"choir/choird/headless"
	"choir/choird/headless/mood"
)

// doctrineSessions has the agent change DOCTRINE.md besides its answer.
type doctrineSessions struct{ Sessions }

func (s doctrineSessions) Perform(ctx context.Context, t Task) (Outcome, error) {
	out, err := s.Sessions.Perform(ctx, t)
	if err == nil && t.Worktree != "" {
		err = os.WriteFile(filepath.Join(t.Worktree, "DOCTRINE.md"), []byte("the rules, changed\n"), 0o644)
	}
	return out, err
}

// A run that asked to commit a patch changing DOCTRINE is near a
// privilege (seed 002 §4): when the human rejects it, the work item's
// next run is SKEPTICAL, or DEFERENTIAL for a high-risk item, with the
// file named in the transition's evidence.
func TestPrivilegeProximityAtRunEnd(t *testing.T) {
	for _, c := range []struct {
		risk  headless.Risk
		to    mood.Mood
		guard mood.Guard
	}{
		{headless.RiskMedium, mood.Skeptical, mood.GuardPrivilege},
		{headless.RiskHigh, mood.Deferential, mood.GuardPrivilegeHighRisk},
	} {
		t.Run(string(c.risk), func(t *testing.T) {
			e := newEnv(t, "42\n")
			if err := os.MkdirAll(filepath.Join(e.repo, ".choir"), 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, e.repo, ".choir/docs.json", `{"doctrine": ["DOCTRINE.md"]}`)
			write(t, e.repo, "DOCTRINE.md", "the rules\n")
			git(t, e.repo, "add", ".")
			git(t, e.repo, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "doctrine")
			e.runner.Sessions = doctrineSessions{e.agent}
			ctx := context.Background()
			it := e.workItem(t, c.risk)
			r := e.queue(t, it.ID)
			if err := e.runner.Perform(ctx, r); err != nil {
				t.Fatal(err)
			}
			if got := e.status(t, r); got != headless.RunAwaitingApproval {
				t.Fatalf("run changing DOCTRINE is %s; want awaiting_approval", got)
			}
			if _, _, err := e.dir.DecideCommit(ctx, r, false, "human:ann", "leave the rules", "human"); err != nil {
				t.Fatal(err)
			}
			e.loopUntil(t, r, headless.RunFailed)
			tr, ok := e.lastTransition(t, r)
			if !ok || tr.To != c.to || tr.Guard != c.guard {
				t.Fatalf("transition = %+v, %t; want %s by %s", tr, ok, c.to, c.guard)
			}
			if !slices.Contains(tr.Evidence, "touches DOCTRINE: DOCTRINE.md") {
				t.Errorf("evidence = %q; want the DOCTRINE file named", tr.Evidence)
			}
			if next, _ := e.runner.NextMood(ctx, it.ID, mood.Calm); next != c.to {
				t.Errorf("NextMood = %s; want %s", next, c.to)
			}
		})
	}
}

// A run whose patch changes only code is near no privilege: its failed
// commit moves no mood.
func TestNoPrivilegeForCode(t *testing.T) {
	e := newEnv(t, "42\n")
	ctx := context.Background()
	it := e.workItem(t, headless.RiskHigh)
	r := e.queue(t, it.ID)
	if err := e.runner.Perform(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.dir.DecideCommit(ctx, r, false, "human:ann", "no", "human"); err != nil {
		t.Fatal(err)
	}
	e.loopUntil(t, r, headless.RunFailed)
	if tr, ok := e.lastTransition(t, r); ok {
		t.Errorf("a rejected commit of code moved the mood: %+v", tr)
	}
	if n := e.notices(); strings.Contains(n[len(n)-1], "Its next run will be") {
		t.Errorf("report = %q; want no mood change", n[len(n)-1])
	}
}
