package mood

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// AnomalyKind names an anomaly trigger of seed 002 §11.
type AnomalyKind string

// The anomaly triggers.
const (
	// RepeatedFailure: the newest runs failed with the same failure
	// signature, Thresholds.RepeatedFailures times in a row.
	RepeatedFailure AnomalyKind = "repeated_failure_signature"
	// NoStateChange: the newest runs left the AHDB projection as they found
	// it and produced no patch, Thresholds.NoProgressRuns times in a row.
	NoStateChange AnomalyKind = "no_state_change"
	// UnexpectedNetwork: the newest run tried to reach the network where
	// its profile does not allow it (its container or the egress policy
	// refused the attempt).
	UnexpectedNetwork AnomalyKind = "unexpected_network"
	// BudgetExhausted: the newest run used up a budget without progress.
	BudgetExhausted AnomalyKind = "budget_exhausted_without_progress"
	// Regression: a verifier that passed on the run's base commit fails
	// on its patch (Anomaly.Verifiers; Facts.Regressed). The director
	// finds it from the receipts (choird/headless/runner/regress.go), not
	// Detect: it is a trigger of seed 002 §2.5 and a guard of §4.
	Regression AnomalyKind = "verifier_regressed"
)

// Anomaly is one detected trigger: logged as an Anomaly receipt, reported
// to the agent's DM, and fed to Decide.
type Anomaly struct {
	Kind AnomalyKind `json:"kind"`
	// Run is the run that revealed it (the newest of the history).
	Run string `json:"run"`
	// Runs are the runs that are its evidence, oldest first.
	Runs []string `json:"runs"`
	// Signature is the repeated failure signature (RepeatedFailure).
	Signature string `json:"signature,omitempty"`
	// Count is how many runs in a row (RepeatedFailure, NoStateChange) or
	// attempts (UnexpectedNetwork); 1 for BudgetExhausted.
	Count  int    `json:"count"`
	Detail string `json:"detail"`
	// Verifiers are the verifiers that regressed (Regression).
	Verifiers []string `json:"verifiers,omitempty"`
}

// RunRecord is what the detectors need of one ended run; the director
// builds it from the run's receipts.
type RunRecord struct {
	ID   string
	Mood Mood
	// Failure is the run's failure signature (Signature), "" when its
	// verifiers passed or it never reached them.
	Failure string
	// StateBefore and StateAfter identify the AHDB projection at the run's
	// start and end (a hash of it); equal means no state change.
	StateBefore, StateAfter string
	// Patch is the hash of the run's diff, "" when it changed nothing.
	Patch     string
	Committed bool
	// NetworkAttempts are the destinations of egress attempts the run's
	// profile or the egress policy refused.
	NetworkAttempts []string
	// Exhausted names the budget the run used up ("tokens",
	// "tool_calls", "wall_time"), "" when none.
	Exhausted string
}

// Progressed reports whether the run changed anything: the state, a
// patch or a commit.
func (r RunRecord) Progressed() bool {
	return r.StateBefore != r.StateAfter || r.Patch != "" || r.Committed
}

// Thresholds tune the detectors and guards.
type Thresholds struct {
	RepeatedFailures int // identical failure signatures in a row
	NoProgressRuns   int // runs in a row without state change
	Hyperthesis      int // open hypertheses without a bound
}

// DefaultThresholds are used where the operator set none.
var DefaultThresholds = Thresholds{RepeatedFailures: 3, NoProgressRuns: 3, Hyperthesis: 3}

func (th Thresholds) orDefault() Thresholds {
	if th.RepeatedFailures < 1 {
		th.RepeatedFailures = DefaultThresholds.RepeatedFailures
	}
	if th.NoProgressRuns < 1 {
		th.NoProgressRuns = DefaultThresholds.NoProgressRuns
	}
	if th.Hyperthesis < 1 {
		th.Hyperthesis = DefaultThresholds.Hyperthesis
	}
	return th
}

// Detect returns the anomalies the newest run of history (oldest first)
// reveals, in the fixed order of the AnomalyKind constants. It looks only
// at streaks ending with the newest run, so calling it once per ended run
// reports each anomaly when it appears and again on each further run that
// prolongs it. Zero thresholds take DefaultThresholds.
func Detect(history []RunRecord, th Thresholds) []Anomaly {
	if len(history) == 0 {
		return nil
	}
	th = th.orDefault()
	last := history[len(history)-1]
	var out []Anomaly
	if sig := last.Failure; sig != "" {
		runs := streak(history, func(r RunRecord) bool { return r.Failure == sig })
		if len(runs) >= th.RepeatedFailures {
			out = append(out, Anomaly{Kind: RepeatedFailure, Run: last.ID, Runs: runs, Signature: sig, Count: len(runs),
				Detail: fmt.Sprintf("%d runs in a row failed with signature %s", len(runs), sig)})
		}
	}
	if !last.Progressed() {
		runs := streak(history, func(r RunRecord) bool { return !r.Progressed() })
		if len(runs) >= th.NoProgressRuns {
			out = append(out, Anomaly{Kind: NoStateChange, Run: last.ID, Runs: runs, Count: len(runs),
				Detail: fmt.Sprintf("%d runs in a row changed neither the state nor the code", len(runs))})
		}
	}
	if n := len(last.NetworkAttempts); n > 0 {
		dests := slices.Clone(last.NetworkAttempts)
		slices.Sort(dests)
		dests = slices.Compact(dests)
		out = append(out, Anomaly{Kind: UnexpectedNetwork, Run: last.ID, Runs: []string{last.ID}, Count: n,
			Detail: fmt.Sprintf("%d refused network attempts in mood %s, to %s", n, last.Mood, strings.Join(dests, ", "))})
	}
	if last.Exhausted != "" && !last.Progressed() {
		out = append(out, Anomaly{Kind: BudgetExhausted, Run: last.ID, Runs: []string{last.ID}, Count: 1,
			Detail: fmt.Sprintf("used up its %s budget without changing the state or the code", last.Exhausted)})
	}
	return out
}

// streak returns the ids of the runs at the end of history for which ok
// holds, oldest first.
func streak(history []RunRecord, ok func(RunRecord) bool) []string {
	i := len(history)
	for i > 0 && ok(history[i-1]) {
		i--
	}
	var ids []string
	for _, r := range history[i:] {
		ids = append(ids, r.ID)
	}
	return ids
}

// What Normalize removes from a failing line: what changes between two runs
// of the same failure.
var (
	ansiRE     = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)
	stampRE    = regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?`)
	clockRE    = regexp.MustCompile(`\b\d{2}:\d{2}:\d{2}(\.\d+)?\b`)
	durationRE = regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|us|ms|s|m|h)\b`)
	hexRE      = regexp.MustCompile(`\b0x[0-9a-fA-F]+\b`)
	tmpRE      = regexp.MustCompile(`/tmp/[^\s/:'"]+`)
	goroutRE   = regexp.MustCompile(`goroutine \d+`)
	spaceRE    = regexp.MustCompile(`\s+`)
)

// Normalize reduces a failing line to what identifies the failure:
// colours, timestamps, durations, addresses, temporary directory names and
// goroutine numbers are replaced by placeholders, white space collapsed.
// File names and line numbers stay: the same test failing at another line
// is another failure.
func Normalize(line string) string {
	line = ansiRE.ReplaceAllString(line, "")
	line = stampRE.ReplaceAllString(line, "<time>")
	line = clockRE.ReplaceAllString(line, "<time>")
	line = durationRE.ReplaceAllString(line, "<dur>")
	line = hexRE.ReplaceAllString(line, "<addr>")
	line = tmpRE.ReplaceAllString(line, "/tmp/<tmp>")
	line = goroutRE.ReplaceAllString(line, "goroutine <n>")
	return strings.TrimSpace(spaceRE.ReplaceAllString(line, " "))
}

// Signature is the failure signature of a verifier's failing lines (the
// lines its report marks as failing, not the raw log): "sig-" and 32 hex
// digits of the SHA-256 of the verifier name and the set of normalized
// non-empty lines, sorted and without duplicates, so the order in which
// parallel tests print does not change it.
func Signature(verifier string, failing []string) string {
	var lines []string
	for _, l := range failing {
		if n := Normalize(l); n != "" {
			lines = append(lines, n)
		}
	}
	slices.Sort(lines)
	lines = slices.Compact(lines)
	h := sha256.New()
	h.Write([]byte(verifier))
	h.Write([]byte{0})
	h.Write([]byte(strings.Join(lines, "\n")))
	return "sig-" + hex.EncodeToString(h.Sum(nil)[:16])
}
