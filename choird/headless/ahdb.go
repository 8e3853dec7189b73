package headless

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
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
	Gates      []string `json:"gates,omitempty"`       // the doc gates the patch passes through (tiers_gate.go)
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
	docGates(rs, &c) // tiers_gate.go: SPECS need a merged spec change, DOCTRINE a human
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
	Requests    []Request     `json:"requests"`  // REQUEST_HELP and REQUEST_VERIFY of runs that have not ended
	Refuted     []Refutation  `json:"refuted"`   // hypotheses and observations a failing attestation refuted
	Retracted   []Retraction  `json:"retracted"` // entries a later note withdrew
	// Refused are promotions the ASSERT rule kept out of the vector, and
	// retractions of nothing, each with why.
	Refused []Skipped `json:"refused"`
	// PlanNext is the conjecture the director tests next (nil: none open),
	// chosen by PlanRule.
	PlanNext *Plan `json:"plan_next"`
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

// Hyperthesis is a blind-spot boundary with its bound. It is mitigated
// once a passing attestation supports it (the verifier its bound asked
// for now covers it); until then it counts as unbounded for the
// hyperthesis-magnitude guard.
type Hyperthesis struct {
	Ref       string `json:"ref"`
	Text      string `json:"text"`
	Bound     string `json:"bound"`
	Mitigated string `json:"mitigated,omitempty"` // the attestation that bounded it
}

// Conjecture is (claim, test, edge, ΔO, scope), the unit the director
// plans with. Outcome is "" until an attestation supporting it decides it
// "held" or "refuted" (By names that attestation); Cited counts the
// entries in effect that cite it.
type Conjecture struct {
	Ref     string `json:"ref"`
	Claim   string `json:"claim"`
	Test    string `json:"test"`
	Edge    string `json:"edge"`
	DeltaO  string `json:"delta_o"`
	Scope   string `json:"scope"`
	Cited   int    `json:"cited"`
	Outcome string `json:"outcome,omitempty"`
	By      string `json:"by,omitempty"`
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

// Retraction is an entry withdrawn (Ref) by a later note (By).
type Retraction struct {
	Ref string `json:"ref"`
	By  string `json:"by"`
}

// Skipped is a receipt the projection could not use, or an entry it kept
// out of the vector, and why.
type Skipped struct {
	Ref string `json:"ref"`
	Why string `json:"why"`
}

// Plan is plan_next's choice (seed 002 §2.1): the conjecture the next run
// should test, and the rule that chose it.
type Plan struct {
	Conjecture string `json:"conjecture"` // its ref
	Claim      string `json:"claim"`
	Test       string `json:"test"`
	Scope      string `json:"scope"`
	Rule       string `json:"rule"`
}

// PlanRule is how plan_next picks the conjecture to test: deterministic,
// from the state vector alone.
const PlanRule = "the untested conjecture cited by most entries in effect; among equals the oldest"

// Conjecture outcomes.
const (
	Held    = "held"
	Refuted = "refuted"
)

// HyperthesisMagnitude counts the hyperthesis entries in effect and,
// among them, the unbounded ones (no attestation has mitigated them yet):
// the facts of the hyperthesis-magnitude guard.
func (s State) HyperthesisMagnitude() (entries, unbounded int) {
	for _, h := range s.Hyperthesis {
		if h.Mitigated == "" {
			unbounded++
		}
	}
	return len(s.Hyperthesis), unbounded
}

// projection is Project's working memory: what it has seen so far, in
// append order, so a citation can be checked against the receipts before
// it.
type projection struct {
	State
	kinds    map[string]Kind     // receipts seen: ref → kind
	passed   map[string]bool     // attestations seen: ref → passed
	objects  map[string]bool     // objects named by receipts seen
	atoms    map[string]Note     // observations and hypotheses not yet decided
	promoted map[string]bool     // refs of entries in Assert
	listed   map[string]NoteType // notes with an entry in their type's list
	cites    map[string][]string // citations of the notes in effect, by note
	citedBy  map[string]int      // how many notes in effect cite a ref
}

// Project rebuilds the state vector from receipts alone, in the order
// given (the order they were appended). It is a pure function: the same
// receipts give the same state, so a restarted choird has the state it
// had. A receipt it cannot read is listed in Skipped, never fatal.
//
//   - OBSERVATION and HYPOTHESIS notes are atoms; a passing attestation
//     that supports one promotes it to ASSERT (citing the note, its
//     citations and the attestation), a failing one refutes it.
//   - The ASSERT rule: a promotion enters only when each of the atom's
//     citations is an earlier receipt that is not a note (evidence), a
//     promoted atom, or an object an earlier receipt names
//     ("sha256:<hex>"); otherwise it is listed in Refused with the
//     citation at fault, and the atom waits for another attestation.
//   - HYPOTHESIS notes wait in HYPOTHESIZE until decided.
//   - DRIVE, BELIEVE, HYPERTHESIS and CONJECTURE notes enter their
//     lists; a passing attestation that supports a hyperthesis mitigates
//     it, one that supports a conjecture decides it held (or refuted).
//   - A note with retracts withdraws the entry that receipt made
//     (Retracted), or is listed in Refused when there is none.
//   - A CommitReceipt asserts its work item done, citing itself, the
//     decision and the passing attestations (the same ASSERT rule).
//   - REQUEST_* notes are open until their run ends.
//   - PlanNext is the conjecture PlanRule picks.
func Project(rs []Receipt) State {
	p := projection{
		State: State{Assert: []Assertion{}, Hypothesize: []Hypothesis{}, Drive: []Drive{}, Believe: []Belief{},
			Hyperthesis: []Hyperthesis{}, Conjectures: []Conjecture{}, Requests: []Request{}, Refuted: []Refutation{},
			Retracted: []Retraction{}, Refused: []Skipped{},
			Runs: map[string]RunStatus{}, Deltas: map[string]int{}, Skipped: []Skipped{}, Receipts: len(rs)},
		kinds: make(map[string]Kind, len(rs)), passed: map[string]bool{}, objects: map[string]bool{},
		atoms: map[string]Note{}, promoted: map[string]bool{}, listed: map[string]NoteType{}, cites: map[string][]string{}, citedBy: map[string]int{},
	}
	for _, rec := range rs {
		p.apply(rec)
	}
	p.plan()
	return p.State
}

func (p *projection) apply(rec Receipt) {
	s := &p.State
	ref := rec.Ref()
	skip := func(why string) { s.Skipped = append(s.Skipped, Skipped{Ref: ref, Why: why}) }
	delta := func() { s.Deltas[rec.RunID]++ }
	if _, ok := s.Runs[rec.RunID]; !ok {
		s.Runs[rec.RunID] = RunQueued
		s.Deltas[rec.RunID] += 0
	}
	// Seen after it is applied: a receipt cannot cite itself.
	defer func() {
		p.kinds[ref] = rec.Kind
		for _, o := range rec.Objects {
			p.objects[o] = true
		}
	}()
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
			return
		}
		s.Runs[rec.RunID] = b.Status
		s.Requests = closeRequests(s.Requests, rec.RunID)
	case KindCommitReceipt:
		var b CommitReceiptBody
		if json.Unmarshal(rec.Body, &b) != nil || b.Commit == "" {
			skip("CommitReceipt body has no commit")
			return
		}
		s.Runs[rec.RunID] = RunCommitted
		s.Requests = closeRequests(s.Requests, rec.RunID)
		cites := append([]string{ref}, b.Evidence...)
		if b.Decision != "" {
			cites = append(cites, b.Decision)
		}
		if why := p.commitEvidence(b); why != "" {
			s.Refused = append(s.Refused, Skipped{Ref: ref, Why: "not asserted: " + why})
			return
		}
		s.Assert = append(s.Assert, Assertion{Ref: ref, Text: fmt.Sprintf("work item %s is done: commit %s", b.WorkItem, b.Commit), Cites: cites})
		p.promoted[ref] = true
		delta()
	case KindVerifierResults:
		var a Attestation
		if json.Unmarshal(rec.Body, &a) != nil {
			skip("VerifierResults body is not an attestation")
			return
		}
		p.passed[ref] = a.Passed
		for _, target := range a.Supports {
			if p.decide(target, ref, a.Passed) {
				delta()
			}
		}
	case KindNote:
		var n Note
		if json.Unmarshal(rec.Body, &n) != nil {
			skip("Note body is not a note")
			return
		}
		if err := n.Check(); err != nil {
			skip("note refused: " + err.Error())
			return
		}
		if n.Retracts != "" {
			if p.retract(n.Retracts) {
				s.Retracted = append(s.Retracted, Retraction{Ref: n.Retracts, By: ref})
			} else {
				s.Refused = append(s.Refused, Skipped{Ref: ref, Why: "retracts " + n.Retracts + ", which is no entry of the state vector"})
			}
		}
		switch n.Type {
		case NoteObservation:
			p.atoms[ref] = n
		case NoteHypothesis:
			p.atoms[ref] = n
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
			if s.Runs[rec.RunID].Ended() {
				break
			}
			if n.Type == NoteRequestVerify && s.Runs[rec.RunID] == RunRunning {
				s.Runs[rec.RunID] = RunVerifying // as AddNote moves it
			}
			s.Requests = append(s.Requests, Request{Ref: ref, Type: n.Type, Text: n.Text, Verifiers: n.Verifiers})
		}
		if n.Type != NoteObservation {
			p.listed[ref] = n.Type
		}
		if len(n.Cites) > 0 && n.Type != NoteRequestHelp && n.Type != NoteRequestVerify {
			p.cites[ref] = n.Cites
			for _, c := range n.Cites {
				p.citedBy[c]++
			}
		}
		if n.Type != NoteObservation && n.Type != NoteRequestHelp && n.Type != NoteRequestVerify || n.Retracts != "" {
			delta()
		}
	}
}

// decide applies an attestation (ref, passed) to the entry it supports;
// it reports whether the state changed.
func (p *projection) decide(target, by string, passed bool) bool {
	s := &p.State
	if n, ok := p.atoms[target]; ok {
		if !passed {
			delete(p.atoms, target)
			delete(p.listed, target)
			s.Hypothesize = slices.DeleteFunc(s.Hypothesize, func(h Hypothesis) bool { return h.Ref == target })
			s.Refused = slices.DeleteFunc(s.Refused, func(r Skipped) bool { return r.Ref == target })
			s.Refuted = append(s.Refuted, Refutation{Ref: target, Text: n.Text, By: by})
			return true
		}
		if why := p.unpromoted(n.Cites); why != "" {
			// The ASSERT rule: the atom stays as it was, the refusal is
			// visible, a later attestation may promote it.
			s.Refused = slices.DeleteFunc(s.Refused, func(r Skipped) bool { return r.Ref == target })
			s.Refused = append(s.Refused, Skipped{Ref: target, Why: "not asserted (attestation " + by + "): " + why})
			return false
		}
		delete(p.atoms, target)
		delete(p.listed, target)
		s.Hypothesize = slices.DeleteFunc(s.Hypothesize, func(h Hypothesis) bool { return h.Ref == target })
		s.Refused = slices.DeleteFunc(s.Refused, func(r Skipped) bool { return r.Ref == target })
		cites := append(append([]string{target}, n.Cites...), by)
		s.Assert = append(s.Assert, Assertion{Ref: target, Text: n.Text, Cites: cites})
		p.promoted[target] = true
		return true
	}
	if i := slices.IndexFunc(s.Hyperthesis, func(h Hyperthesis) bool { return h.Ref == target }); i >= 0 {
		if !passed || s.Hyperthesis[i].Mitigated != "" {
			return false
		}
		s.Hyperthesis[i].Mitigated = by
		return true
	}
	if i := slices.IndexFunc(s.Conjectures, func(c Conjecture) bool { return c.Ref == target }); i >= 0 {
		if s.Conjectures[i].Outcome != "" {
			return false
		}
		s.Conjectures[i].Outcome, s.Conjectures[i].By = Refuted, by
		if passed {
			s.Conjectures[i].Outcome = Held
		}
		return true
	}
	return false
}

// unpromoted says why citations may not stand in an ASSERT ("" when they
// may): each must be an earlier receipt other than a note, a promoted
// atom, or an object an earlier receipt names.
func (p *projection) unpromoted(cites []string) string {
	for _, c := range cites {
		if obj, ok := strings.CutPrefix(c, "sha256:"); ok {
			if !p.objects[obj] {
				return "it cites " + c + ", an object no earlier receipt names"
			}
			continue
		}
		kind, ok := p.kinds[c]
		switch {
		case !ok:
			return "it cites " + c + ", which is no earlier receipt"
		case kind == KindNote && !p.promoted[c]:
			return "it cites " + c + ", a note that is not a promoted atom"
		}
	}
	return ""
}

// commitEvidence says why a CommitReceipt may not assert its work item
// ("" when it may): its evidence must be earlier passing attestations and
// its decision an earlier CommitDecision.
func (p *projection) commitEvidence(b CommitReceiptBody) string {
	for _, e := range b.Evidence {
		if passed, ok := p.passed[e]; !ok || !passed {
			return "its evidence " + e + " is no earlier passing attestation"
		}
	}
	if len(b.Evidence) == 0 {
		return "it cites no passing attestation"
	}
	if b.Decision != "" && p.kinds[b.Decision] != KindCommitDecision {
		return "its decision " + b.Decision + " is no earlier CommitDecision"
	}
	return ""
}

// retract removes the entry a receipt made from the list it is in; it
// reports whether there was one.
func (p *projection) retract(ref string) bool {
	s := &p.State
	_, found := p.atoms[ref]
	delete(p.atoms, ref)
	if p.promoted[ref] {
		s.Assert = slices.DeleteFunc(s.Assert, func(e Assertion) bool { return e.Ref == ref })
		delete(p.promoted, ref)
		found = true
	}
	t, listed := p.listed[ref]
	delete(p.listed, ref)
	switch t {
	case NoteHypothesis:
		s.Hypothesize = slices.DeleteFunc(s.Hypothesize, func(e Hypothesis) bool { return e.Ref == ref })
	case NoteDrive:
		s.Drive = slices.DeleteFunc(s.Drive, func(e Drive) bool { return e.Ref == ref })
	case NoteBelieve:
		s.Believe = slices.DeleteFunc(s.Believe, func(e Belief) bool { return e.Ref == ref })
	case NoteHyperthesis:
		s.Hyperthesis = slices.DeleteFunc(s.Hyperthesis, func(e Hyperthesis) bool { return e.Ref == ref })
	case NoteConjecture:
		s.Conjectures = slices.DeleteFunc(s.Conjectures, func(e Conjecture) bool { return e.Ref == ref })
	case NoteRequestHelp, NoteRequestVerify:
		n := len(s.Requests)
		s.Requests = slices.DeleteFunc(s.Requests, func(e Request) bool { return e.Ref == ref })
		listed = n != len(s.Requests) // closed when its run ended
	}
	if !found && !listed {
		return false
	}
	for _, c := range p.cites[ref] {
		p.citedBy[c]--
	}
	delete(p.cites, ref)
	s.Refused = slices.DeleteFunc(s.Refused, func(e Skipped) bool { return e.Ref == ref })
	return true
}

// plan counts the citations of each conjecture and applies PlanRule.
func (p *projection) plan() {
	s := &p.State
	best := -1
	for i := range s.Conjectures {
		c := &s.Conjectures[i]
		c.Cited = p.citedBy[c.Ref]
		if c.Outcome == "" && (best < 0 || c.Cited > s.Conjectures[best].Cited) {
			best = i
		}
	}
	if best >= 0 {
		c := s.Conjectures[best]
		s.PlanNext = &Plan{Conjecture: c.Ref, Claim: c.Claim, Test: c.Test, Scope: c.Scope, Rule: PlanRule}
	}
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
