package skill

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

// TestSetRetryBudget: per_step_skill_retries decides how many invalid
// proposals in a row a run survives: n rejections are answered with
// retries_left counting down, the next fails the skill naming the budget,
// and the budget survives a snapshot.
func TestSetRetryBudget(t *testing.T) {
	for _, n := range []int{0, 1, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			r := startBuildFeature(t)
			r.SetRetryBudget(n)
			for i := range n {
				var v *Violation
				if err := r.CheckTool("choir.exec"); !errors.As(err, &v) || v.SkillFailed || v.RetriesLeft != n-i-1 {
					t.Fatalf("rejection %d = %v; want retries_left %d, the skill running", i+1, err, n-i-1)
				}
			}
			snap := r.Snapshot()
			raw, _ := json.Marshal(snap)
			var back Snapshot
			json.Unmarshal(raw, &back)
			restored, err := Restore(r.Spec(), back)
			if err != nil {
				t.Fatalf("Restore(%s) = %v", raw, err)
			}
			var v *Violation
			if err := restored.CheckTool("choir.exec"); !errors.As(err, &v) || !v.SkillFailed {
				t.Fatalf("rejection %d after a snapshot = %v; want the one that fails the skill", n+1, err)
			}
			if want := fmt.Sprintf("retry budget of %d exhausted", n); restored.Status() != StatusFailed || restored.Reason()[:len(want)] != want {
				t.Errorf("Status, Reason = %q, %q; want failed, %q…", restored.Status(), restored.Reason(), want)
			}
		})
	}
	t.Run("bounds", func(t *testing.T) {
		r := startBuildFeature(t)
		r.SetRetryBudget(-1) // ignored
		r.SetRetryBudget(MaxRetryBudget + 50)
		snap := r.Snapshot()
		if snap.RetryBudget == nil || *snap.RetryBudget != MaxRetryBudget {
			t.Errorf("Snapshot().RetryBudget = %v; want %d", snap.RetryBudget, MaxRetryBudget)
		}
		over := MaxRetryBudget + 1
		snap.RetryBudget = &over
		if _, err := Restore(r.Spec(), snap); err == nil {
			t.Errorf("Restore with retry_budget %d = nil error; want a refusal", over)
		}
		one := 1
		snap.RetryBudget, snap.Retries = &one, 3
		if _, err := Restore(r.Spec(), snap); err == nil {
			t.Error("Restore with retries 3 over a budget of 1 = nil error; want a refusal")
		}
	})
}
