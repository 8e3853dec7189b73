package headless

import (
	"encoding/json"
	"fmt"
	"slices"
)

// CommitCheck is the director's policy check of a commit request.
type CommitCheck struct {
	Ready      bool     `json:"ready"`
	Missing    []string `json:"missing,omitempty"`     // what keeps it from ready, in words
	NeedsHuman bool     `json:"needs_human,omitempty"` // a high-risk work item
	Passing    []string `json:"passing,omitempty"`     // verifiers whose latest attestation passed
	Evidence   []string `json:"evidence,omitempty"`    // those attestations' receipts
	Request    string   `json:"request,omitempty"`     // the latest CommitRequest receipt
	Patch      string   `json:"patch,omitempty"`       // the patch it asks to commit
}

// CheckCommit decides whether a run's work may be committed, from its work
// item and its receipts alone: there is a commit request, and every
// verifier the work item requires (at least one verifier when it names
// none) has its latest attestation passing, made after the latest
// PatchReceipt (a changed patch must be verified again) and not naming
// another patch than the request's.
func CheckCommit(item WorkItem, rs []Receipt) CommitCheck {
	var c CommitCheck
	// The patch asked for: attestations of another patch do not count.
	for _, rec := range rs {
		if rec.Kind == KindCommitRequest {
			var req CommitRequest
			if json.Unmarshal(rec.Body, &req) == nil {
				c.Request, c.Patch = rec.Ref(), req.Patch
			}
		}
	}
	latest := map[string]Receipt{} // verifier → its latest attestation
	passed := map[string]bool{}
	var order []string
	for _, rec := range rs {
		switch rec.Kind {
		case KindPatchReceipt:
			latest, passed, order = map[string]Receipt{}, map[string]bool{}, nil
		case KindVerifierResults:
			var a Attestation
			if json.Unmarshal(rec.Body, &a) != nil || a.Verifier == "" {
				continue
			}
			if a.Patch != "" && c.Patch != "" && a.Patch != c.Patch {
				continue
			}
			if _, seen := latest[a.Verifier]; !seen {
				order = append(order, a.Verifier)
			}
			latest[a.Verifier], passed[a.Verifier] = rec, a.Passed
		}
	}
	if c.Request == "" {
		c.Missing = append(c.Missing, "no commit request")
	}
	required := item.Verifiers
	if len(required) == 0 {
		required = nil
		for _, v := range order {
			if passed[v] {
				required = append(required, v)
			}
		}
		if len(required) == 0 {
			c.Missing = append(c.Missing, "no verifier has passed since the latest patch")
		}
	}
	for _, v := range required {
		rec, ok := latest[v]
		switch {
		case !ok:
			c.Missing = append(c.Missing, fmt.Sprintf("verifier %s has not attested since the latest patch", v))
		case !passed[v]:
			c.Missing = append(c.Missing, fmt.Sprintf("verifier %s failed (%s)", v, rec.Ref()))
		default:
			c.Passing = append(c.Passing, v)
			c.Evidence = append(c.Evidence, rec.Ref())
		}
	}
	for _, v := range order {
		if !passed[v] && !slices.Contains(required, v) {
			c.Missing = append(c.Missing, fmt.Sprintf("verifier %s failed (%s)", v, latest[v].Ref()))
		}
	}
	c.NeedsHuman = item.Risk == RiskHigh
	c.Ready = len(c.Missing) == 0
	return c
}

// State is the AHDB state vector (seed 002 §5) with the hyperthesis and
// the conjectures, as Project builds it from receipts. Each entry names
// the receipt that made it (Ref, <run id>#<seq>).
type State struct {
	Assert      []Assertion   `json:"assert"`
	Hypothesize []Hypothesis  `json:"hypothesize"`
	Drive       []Drive       `json:"drive"`
	Believe     []Belief      `json:"believe"`
	Hyperthesis []Hyperthesis `json:"hyperthesis"`
	Conjectures []Conjecture  `json:"conjectures"`
	Requests    []Request     `json:"requests"` // REQUEST_HELP and REQUEST_VERIFY of runs that have not ended
	Refuted     []Refutation  `json:"refuted"`  // hypotheses and observations a failing attestation refuted
	// Runs is each run's status as its receipts tell it.
	Runs map[string]RunStatus `json:"runs"`
	// Deltas counts the state changes each run made (a run with none is
	// an anomaly trigger).
	Deltas   map[string]int `json:"deltas"`
	Receipts int            `json:"receipts"` // how many it was built from
	Skipped  []Skipped      `json:"skipped"`  // receipts it could not read, and why
}

// Assertion cites only promoted atoms, each with receipts: a note a
// passing attestation supported, or a work item a verified commit closed.
type Assertion struct {
	Ref   string   `json:"ref"`
	Text  string   `json:"text"`
	Cites []string `json:"cites"`
}

// Hypothesis has a discriminating test and a budget.
type Hypothesis struct {
	Ref    string   `json:"ref"`
	Text   string   `json:"text"`
	Test   string   `json:"test"`
	Budget Budgets  `json:"budget"`
	Cites  []string `json:"cites,omitempty"`
}

// Drive has an anti-drive.
type Drive struct {
	Ref       string `json:"ref"`
	Text      string `json:"text"`
	AntiDrive string `json:"anti_drive"`
}

// Belief has an update trigger and an effect.
type Belief struct {
	Ref     string `json:"ref"`
	Text    string `json:"text"`
	Trigger string `json:"trigger"`
	Effect  string `json:"effect"`
}

// Hyperthesis is a blind-spot boundary with its bound.
type Hyperthesis struct {
	Ref   string `json:"ref"`
	Text  string `json:"text"`
	Bound string `json:"bound"`
}

// Conjecture is (claim, test, edge, ΔO, scope).
type Conjecture struct {
	Ref    string `json:"ref"`
	Claim  string `json:"claim"`
	Test   string `json:"test"`
	Edge   string `json:"edge"`
	DeltaO string `json:"delta_o"`
	Scope  string `json:"scope"`
}

// Request is an open request for help or verification.
type Request struct {
	Ref       string   `json:"ref"`
	Type      NoteType `json:"type"`
	Text      string   `json:"text"`
	Verifiers []string `json:"verifiers,omitempty"`
}

// Refutation is an atom a failing attestation refuted.
type Refutation struct {
	Ref  string `json:"ref"`
	Text string `json:"text"`
	By   string `json:"by"`
}

// Skipped is a receipt the projection could not use.
type Skipped struct {
	Ref string `json:"ref"`
	Why string `json:"why"`
}

// Project rebuilds the state vector from receipts alone, in the order
// given (the order they were appended). It is a pure function: the same
// receipts give the same state, so a restarted choird has the state it
// had. A receipt it cannot read is listed in Skipped, never fatal.
//
//   - OBSERVATION and HYPOTHESIS notes are atoms; a passing attestation
//     that supports one promotes it to ASSERT (citing the note, its
//     citations and the attestation), a failing one refutes it.
//   - HYPOTHESIS notes wait in HYPOTHESIZE until then.
//   - DRIVE, BELIEVE, HYPERTHESIS and CONJECTURE notes enter their lists.
//   - A note with retracts withdraws the entry that receipt made.
//   - A CommitReceipt asserts its work item done, citing itself, the
//     decision and the attestations.
//   - REQUEST_* notes are open until their run ends.
func Project(rs []Receipt) State {
	s := State{Assert: []Assertion{}, Hypothesize: []Hypothesis{}, Drive: []Drive{}, Believe: []Belief{},
		Hyperthesis: []Hyperthesis{}, Conjectures: []Conjecture{}, Requests: []Request{}, Refuted: []Refutation{},
		Runs: map[string]RunStatus{}, Deltas: map[string]int{}, Skipped: []Skipped{}, Receipts: len(rs)}
	atoms := map[string]Note{} // observations and hypotheses not yet decided
	for _, rec := range rs {
		ref := rec.Ref()
		skip := func(why string) { s.Skipped = append(s.Skipped, Skipped{Ref: ref, Why: why}) }
		delta := func() { s.Deltas[rec.RunID]++ }
		if _, ok := s.Runs[rec.RunID]; !ok {
			s.Runs[rec.RunID] = RunQueued
			s.Deltas[rec.RunID] += 0
		}
		switch rec.Kind {
		case KindRunStarted:
			s.Runs[rec.RunID] = RunRunning
		case KindCommitRequest:
			s.Runs[rec.RunID] = RunAwaitingApproval
		case KindCommitDecision:
			var b CommitDecisionBody
			if json.Unmarshal(rec.Body, &b) != nil {
				skip("CommitDecision body is not readable")
			} else if !b.Approved {
				s.Runs[rec.RunID] = RunRunning
			}
		case KindRunEnded:
			var b RunEndedBody
			if json.Unmarshal(rec.Body, &b) != nil || !b.Status.Ended() {
				skip("RunEnded body has no end status")
				continue
			}
			s.Runs[rec.RunID] = b.Status
			s.Requests = closeRequests(s.Requests, rec.RunID)
		case KindCommitReceipt:
			var b CommitReceiptBody
			if json.Unmarshal(rec.Body, &b) != nil || b.Commit == "" {
				skip("CommitReceipt body has no commit")
				continue
			}
			s.Runs[rec.RunID] = RunCommitted
			s.Requests = closeRequests(s.Requests, rec.RunID)
			cites := append([]string{ref}, b.Evidence...)
			if b.Decision != "" {
				cites = append(cites, b.Decision)
			}
			s.Assert = append(s.Assert, Assertion{Ref: ref, Text: fmt.Sprintf("work item %s is done: commit %s", b.WorkItem, b.Commit), Cites: cites})
			delta()
		case KindVerifierResults:
			var a Attestation
			if json.Unmarshal(rec.Body, &a) != nil {
				skip("VerifierResults body is not an attestation")
				continue
			}
			for _, target := range a.Supports {
				n, ok := atoms[target]
				if !ok {
					continue
				}
				delete(atoms, target)
				s.Hypothesize = slices.DeleteFunc(s.Hypothesize, func(h Hypothesis) bool { return h.Ref == target })
				if a.Passed {
					cites := append([]string{target}, n.Cites...)
					s.Assert = append(s.Assert, Assertion{Ref: target, Text: n.Text, Cites: append(cites, ref)})
				} else {
					s.Refuted = append(s.Refuted, Refutation{Ref: target, Text: n.Text, By: ref})
				}
				delta()
			}
		case KindNote:
			var n Note
			if json.Unmarshal(rec.Body, &n) != nil {
				skip("Note body is not a note")
				continue
			}
			if err := n.Check(); err != nil {
				skip("note refused: " + err.Error())
				continue
			}
			if n.Retracts != "" {
				s.retract(n.Retracts)
				delete(atoms, n.Retracts)
			}
			switch n.Type {
			case NoteObservation:
				atoms[ref] = n
			case NoteHypothesis:
				atoms[ref] = n
				s.Hypothesize = append(s.Hypothesize, Hypothesis{Ref: ref, Text: n.Text, Test: n.Test, Budget: *n.Budget, Cites: n.Cites})
			case NoteDrive:
				s.Drive = append(s.Drive, Drive{Ref: ref, Text: n.Text, AntiDrive: n.AntiDrive})
			case NoteBelieve:
				s.Believe = append(s.Believe, Belief{Ref: ref, Text: n.Text, Trigger: n.Trigger, Effect: n.Effect})
			case NoteHyperthesis:
				s.Hyperthesis = append(s.Hyperthesis, Hyperthesis{Ref: ref, Text: n.Text, Bound: n.Bound})
			case NoteConjecture:
				s.Conjectures = append(s.Conjectures, Conjecture{Ref: ref, Claim: n.Claim, Test: n.Test, Edge: n.Edge, DeltaO: n.DeltaO, Scope: n.Scope})
			case NoteRequestHelp, NoteRequestVerify:
				if !s.Runs[rec.RunID].Ended() {
					s.Requests = append(s.Requests, Request{Ref: ref, Type: n.Type, Text: n.Text, Verifiers: n.Verifiers})
				}
			}
			if n.Type != NoteObservation && n.Type != NoteRequestHelp && n.Type != NoteRequestVerify || n.Retracts != "" {
				delta()
			}
		}
	}
	return s
}

// retract removes the entry a receipt made from every list.
func (s *State) retract(ref string) {
	s.Assert = slices.DeleteFunc(s.Assert, func(e Assertion) bool { return e.Ref == ref })
	s.Hypothesize = slices.DeleteFunc(s.Hypothesize, func(e Hypothesis) bool { return e.Ref == ref })
	s.Drive = slices.DeleteFunc(s.Drive, func(e Drive) bool { return e.Ref == ref })
	s.Believe = slices.DeleteFunc(s.Believe, func(e Belief) bool { return e.Ref == ref })
	s.Hyperthesis = slices.DeleteFunc(s.Hyperthesis, func(e Hyperthesis) bool { return e.Ref == ref })
	s.Conjectures = slices.DeleteFunc(s.Conjectures, func(e Conjecture) bool { return e.Ref == ref })
	s.Requests = slices.DeleteFunc(s.Requests, func(e Request) bool { return e.Ref == ref })
}

func closeRequests(rs []Request, runID string) []Request {
	return slices.DeleteFunc(rs, func(r Request) bool {
		run, _, _ := cut(r.Ref)
		return run == runID
	})
}

func cut(ref string) (string, string, bool) {
	for i := len(ref) - 1; i >= 0; i-- {
		if ref[i] == '#' {
			return ref[:i], ref[i+1:], true
		}
	}
	return ref, "", false
}
