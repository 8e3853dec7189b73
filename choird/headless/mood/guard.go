package mood

import (
	"fmt"
	"slices"
)

// Guard names a transition guard of seed 002 §4.
type Guard string

// The guards, in the order Decide tries them.
const (
	GuardCrashRecovery     Guard = "crash_recovery"
	GuardUnexpectedNetwork Guard = "unexpected_network"
	GuardSensitive         Guard = "privilege_proximity_sensitive"
	GuardPrivilegeHighRisk Guard = "privilege_proximity_high_risk"
	GuardPrivilege         Guard = "privilege_proximity"
	GuardRegression        Guard = "verifier_regressed"
	GuardRepeatedFailure   Guard = "repeated_failure_signature"
	GuardBudget            Guard = "budget_exhausted_without_progress"
	GuardNoStateChange     Guard = "no_state_change"
	GuardHyperthesis       Guard = "hyperthesis_magnitude"
	GuardHyperthesisMany   Guard = "hyperthesis_many"
	GuardCleared           Guard = "cleared"
)

// Privileged actions a run can be about to take (Facts.Privilege).
const (
	Commit  = "commit"
	Publish = "publish"
	Export  = "export"
)

// Facts are what the guards look at, gathered by the director after a
// run ends or before it takes a privileged action.
type Facts struct {
	// Current is the mood the agent's work is in now.
	Current Mood
	// Anomalies are Detect's findings on the newest run.
	Anomalies []Anomaly
	// Regressed names the verifiers that passed on the run's base commit
	// and fail on its result.
	Regressed []string
	// Hyperthesis is the hyperthesis magnitude: the hyperthesis entries of
	// the AHDB state whose bound is not in place yet (no attestation has
	// mitigated them, seed 002 §5.2; State.HyperthesisMagnitude).
	Hyperthesis int
	// HyperthesisEntries counts every hyperthesis entry in effect, bounded
	// or not: many blind spots, even bounded, call for verification.
	HyperthesisEntries int
	// Sensitive is what the work comes near (Sensitive(patch files, work
	// item text)): credentials, CI config, deploy scripts, choir's config.
	Sensitive []string
	// Hardened: a PARANOID run of this work item has already happened, so
	// its privilege proximity was looked at.
	Hardened bool
	// Privilege is what the run is about to do: Commit, Publish, Export,
	// or "" for nothing privileged.
	Privilege string
	// Touches are the privileged things the action reaches (evidence of
	// the privilege guards), such as the DOCTRINE or CI files a commit
	// changes.
	Touches []string
	// Risk is the work item's risk tier ("low", "medium", "high").
	Risk string
	// CrashRecovery: choird restarted with a run of this work half done,
	// or the projection must be rebuilt from receipts.
	CrashRecovery bool
	// Passed: the newest run, in Current, ended with its verifiers passing
	// (or, in DEFERENTIAL, with its question answered) and no anomaly.
	Passed bool
}

// Transition is a change of mood and why: the body of a MoodTransition
// receipt.
type Transition struct {
	From     Mood     `json:"from"`
	To       Mood     `json:"to"`
	Guard    Guard    `json:"guard"`
	Evidence []string `json:"evidence"`
	Reason   string   `json:"reason"`
}

// rule is one row of the guard table: when fire reports true (with its
// evidence), the mood becomes to(f).
type rule struct {
	guard  Guard
	fire   func(f Facts, th Thresholds) ([]string, bool)
	to     func(f Facts) Mood
	reason string
}

func always(m Mood) func(Facts) Mood { return func(Facts) Mood { return m } }

func anomaly(kind AnomalyKind) func(f Facts, th Thresholds) ([]string, bool) {
	return func(f Facts, _ Thresholds) ([]string, bool) {
		for _, a := range f.Anomalies {
			if a.Kind == kind {
				ev := []string{"anomaly " + string(kind) + ": " + a.Detail}
				if a.Signature != "" {
					ev = append(ev, "signature "+a.Signature)
				}
				for _, r := range a.Runs {
					ev = append(ev, "run "+r)
				}
				return ev, true
			}
		}
		return nil, false
	}
}

func touches(f Facts) []string {
	ev := make([]string, 0, len(f.Touches))
	for _, t := range f.Touches {
		ev = append(ev, "touches "+t)
	}
	return ev
}

// guards is the guard table, most severe first.
var guards = []rule{
	{GuardCrashRecovery,
		func(f Facts, _ Thresholds) ([]string, bool) { return []string{"crash recovery"}, f.CrashRecovery },
		always(Contrite), "a run was left half done: rebuild the state from receipts before anything else"},
	{GuardUnexpectedNetwork, anomaly(UnexpectedNetwork),
		always(Paranoid), "a run tried to reach the network its profile does not allow: harden before going on"},
	{GuardSensitive,
		func(f Facts, _ Thresholds) ([]string, bool) {
			ev := make([]string, 0, len(f.Sensitive))
			for _, s := range f.Sensitive {
				ev = append(ev, "near "+s)
			}
			return ev, len(f.Sensitive) > 0 && !f.Hardened
		},
		always(Paranoid), "the work comes near credentials, CI, deployment or choir's own config: harden before going on"},
	{GuardPrivilegeHighRisk,
		func(f Facts, _ Thresholds) ([]string, bool) {
			return append([]string{"about to " + f.Privilege, "risk " + f.Risk}, touches(f)...), f.Privilege != "" && f.Risk == "high"
		},
		always(Deferential), "a high-risk work item is about to take a privileged action: a human decides"},
	{GuardPrivilege,
		func(f Facts, _ Thresholds) ([]string, bool) {
			return append([]string{"about to " + f.Privilege}, touches(f)...), f.Privilege != ""
		},
		always(Skeptical), "a privileged action is near: verify before it"},
	{GuardRegression,
		func(f Facts, _ Thresholds) ([]string, bool) {
			var ev []string
			for _, v := range f.Regressed {
				ev = append(ev, "verifier "+v+" regressed")
			}
			return ev, len(f.Regressed) > 0
		},
		always(Skeptical), "a verifier that passed now fails: adjudicate, no new work"},
	{GuardRepeatedFailure, anomaly(RepeatedFailure),
		always(Curious), "the same failure keeps coming back: stop retrying, look for what is not understood"},
	{GuardBudget, anomaly(BudgetExhausted),
		always(Deferential), "a budget ran out without progress: the work item needs splitting or more budget, which a human decides"},
	{GuardNoStateChange, anomaly(NoStateChange),
		func(f Facts) Mood {
			if f.Current == Curious {
				return Deferential // research did not help either: ask
			}
			return Curious
		}, "runs change nothing: look elsewhere, or ask when looking did not help"},
	{GuardHyperthesis,
		func(f Facts, th Thresholds) ([]string, bool) {
			return []string{fmt.Sprintf("%d unbounded hypertheses, threshold %d", f.Hyperthesis, th.Hyperthesis)}, f.Hyperthesis >= th.Hyperthesis
		},
		always(Paranoid), "too much the verifiers cannot rule out: tighten scope and add verifiers"},
	{GuardHyperthesisMany,
		func(f Facts, th Thresholds) ([]string, bool) {
			return []string{fmt.Sprintf("%d hyperthesis entries, threshold %d", f.HyperthesisEntries, 2*th.Hyperthesis)}, f.HyperthesisEntries >= 2*th.Hyperthesis
		},
		always(Skeptical), "many blind spots, even bounded: verify and adjudicate before new work"},
	{GuardCleared,
		func(f Facts, _ Thresholds) ([]string, bool) {
			return []string{"the last " + string(f.Current) + " run passed"}, f.Current != Calm && f.Passed
		},
		always(Calm), "the condition that changed the mood is resolved: back to bounded steps"},
}

// Guards returns the guard names in the order Decide tries them.
func Guards() []Guard {
	out := make([]Guard, len(guards))
	for i, g := range guards {
		out[i] = g.guard
	}
	return out
}

// Decide applies the guard table to f: the first guard that fires decides
// the next mood. It returns the transition and true when that mood differs
// from f.Current; false when no guard fires, or when the first that fires
// names the current mood (the most severe condition holds the mood, and
// milder guards below it are not consulted). The same facts always give
// the same answer. Zero thresholds take DefaultThresholds.
func Decide(f Facts, th Thresholds) (Transition, bool) {
	th = th.orDefault()
	if f.Current == "" {
		f.Current = Calm
	}
	for _, g := range guards {
		ev, ok := g.fire(f, th)
		if !ok {
			continue
		}
		to := g.to(f)
		if to == f.Current {
			return Transition{}, false
		}
		return Transition{From: f.Current, To: to, Guard: g.guard, Evidence: slices.Clip(ev), Reason: g.reason}, true
	}
	return Transition{}, false
}
