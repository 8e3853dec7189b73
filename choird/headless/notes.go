package headless

import (
	"strings"
)

// NoteType is a note's type (seed 002 §9, with DRIVE and BELIEVE so every
// part of the AHDB state vector has a typed source). Notes are events,
// never repo files.
type NoteType string

const (
	NoteObservation   NoteType = "OBSERVATION"
	NoteHypothesis    NoteType = "HYPOTHESIS"  // needs test and budget
	NoteHyperthesis   NoteType = "HYPERTHESIS" // needs bound
	NoteConjecture    NoteType = "CONJECTURE"  // needs claim, test, edge, delta_o, scope
	NoteRequestHelp   NoteType = "REQUEST_HELP"
	NoteRequestVerify NoteType = "REQUEST_VERIFY"
	NoteDrive         NoteType = "DRIVE"   // needs anti_drive
	NoteBelieve       NoteType = "BELIEVE" // needs trigger and effect
)

// NoteTypes lists the note types a run may append.
var NoteTypes = []NoteType{NoteObservation, NoteHypothesis, NoteHyperthesis, NoteConjecture,
	NoteRequestHelp, NoteRequestVerify, NoteDrive, NoteBelieve}

// Note is the body of a Note receipt. Which fields a type needs, and which
// it may not carry, is checked by Check.
type Note struct {
	Type      NoteType `json:"type"`
	Text      string   `json:"text,omitempty"`
	Test      string   `json:"test,omitempty"`   // HYPOTHESIS, CONJECTURE: the discriminating test
	Budget    *Budgets `json:"budget,omitempty"` // HYPOTHESIS: what the test may spend
	Bound     string   `json:"bound,omitempty"`  // HYPERTHESIS: the bound or mitigation (tighten scope, add a verifier, quarantine)
	Claim     string   `json:"claim,omitempty"`  // CONJECTURE = (claim, test, edge, ΔO, scope)
	Edge      string   `json:"edge,omitempty"`
	DeltaO    string   `json:"delta_o,omitempty"`
	Scope     string   `json:"scope,omitempty"`
	AntiDrive string   `json:"anti_drive,omitempty"` // DRIVE
	Trigger   string   `json:"trigger,omitempty"`    // BELIEVE: what would update it
	Effect    string   `json:"effect,omitempty"`     // BELIEVE: what it changes
	Verifiers []string `json:"verifiers,omitempty"`  // REQUEST_VERIFY: which verifiers to run
	Cites     []string `json:"cites,omitempty"`      // receipts (<run id>#<seq>) and objects (sha256:<hex>) it rests on
	Retracts  string   `json:"retracts,omitempty"`   // an earlier note of the state vector it withdraws
}

// noteFields says, per type, which optional fields are required (true) or
// allowed (false); a field absent from a type's map is refused.
var noteFields = map[NoteType]map[string]bool{
	NoteObservation:   {"text": true},
	NoteHypothesis:    {"text": true, "test": true, "budget": true},
	NoteHyperthesis:   {"text": true, "bound": true},
	NoteConjecture:    {"text": false, "claim": true, "test": true, "edge": true, "delta_o": true, "scope": true},
	NoteRequestHelp:   {"text": true},
	NoteRequestVerify: {"text": true, "verifiers": false},
	NoteDrive:         {"text": true, "anti_drive": true},
	NoteBelieve:       {"text": true, "trigger": true, "effect": true},
}

// needs words what a type requires, for the error that refuses a note
// without it.
var needs = map[string]string{
	"test":       "give the discriminating test that would tell it true or false",
	"budget":     "give the budget the test may spend (tokens, wall_seconds or tool_calls)",
	"bound":      "give the bound or mitigation: tighten the scope, add a verifier, or quarantine",
	"claim":      "state the claim",
	"edge":       "say where the claim stops holding (edge)",
	"delta_o":    "say what would change if it held (delta_o)",
	"scope":      "say what it covers (scope)",
	"anti_drive": "give the anti-drive: what this drive must not push into",
	"trigger":    "say what would update the belief (trigger)",
	"effect":     "say what the belief changes (effect)",
	"text":       "say it in a few words",
}

// Check validates a note: its type, the fields its type needs, and no
// field its type does not take.
func (n *Note) Check() error {
	fields, ok := noteFields[n.Type]
	if !ok {
		if n.Type == "ASSERT" {
			return invalid("type", "file an OBSERVATION or HYPOTHESIS; it becomes an ASSERT when a passing attestation supports it", "ASSERT cannot be noted directly: it cites only promoted atoms with receipts")
		}
		return invalid("type", "use one of "+joinTypes(), "note type %q is unknown", n.Type)
	}
	present := map[string]bool{
		"text": n.Text != "", "test": n.Test != "", "budget": n.Budget != nil, "bound": n.Bound != "",
		"claim": n.Claim != "", "edge": n.Edge != "", "delta_o": n.DeltaO != "", "scope": n.Scope != "",
		"anti_drive": n.AntiDrive != "", "trigger": n.Trigger != "", "effect": n.Effect != "",
		"verifiers": len(n.Verifiers) > 0,
	}
	values := map[string]string{"text": n.Text, "test": n.Test, "bound": n.Bound, "claim": n.Claim, "edge": n.Edge,
		"delta_o": n.DeltaO, "scope": n.Scope, "anti_drive": n.AntiDrive, "trigger": n.Trigger, "effect": n.Effect}
	for _, f := range []string{"text", "test", "budget", "bound", "claim", "edge", "delta_o", "scope", "anti_drive", "trigger", "effect", "verifiers"} {
		required, allowed := fields[f]
		switch {
		case required && !present[f]:
			return invalid(f, needs[f], "a %s note needs %s", n.Type, f)
		case !allowed && present[f]:
			return invalid(f, "remove it, or use the note type it belongs to", "a %s note does not take %s", n.Type, f)
		}
		if v, ok := values[f]; ok && present[f] {
			if err := text(f, v, required, MaxText); err != nil {
				return err
			}
		}
	}
	if n.Budget != nil {
		b := *n.Budget
		if b.Tokens < 0 || b.WallSeconds < 0 || b.ToolCalls < 0 || b == (Budgets{}) {
			return invalid("budget", needs["budget"], "the budget is empty or negative")
		}
	}
	if err := list("verifiers", n.Verifiers, MaxListItems, checkName("verifier")); err != nil {
		return err
	}
	if err := list("cites", n.Cites, MaxListItems, checkCite); err != nil {
		return err
	}
	if n.Retracts != "" {
		return checkReceiptRef("retracts", n.Retracts)
	}
	return nil
}

func joinTypes() string {
	s := make([]string, len(NoteTypes))
	for i, t := range NoteTypes {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}

// Attestation is a verifier's structured report on a run (the body of a
// VerifierResults receipt): never its raw output, which lives in the
// object store and is named by Artifacts.
type Attestation struct {
	Verifier  string   `json:"verifier"`
	Passed    bool     `json:"passed"`
	Summary   string   `json:"summary,omitempty"`
	Signature string   `json:"signature,omitempty"` // a failure's signature, for repeated-failure detection
	Patch     string   `json:"patch,omitempty"`     // SHA-256 of the diff it verified (worktree.Patch.Hash), when known
	Artifacts []string `json:"artifacts,omitempty"` // SHA-256 of raw logs in the object store
	Supports  []string `json:"supports,omitempty"`  // notes it confirms (passed) or refutes (failed)
}

// Check validates an attestation.
func (a *Attestation) Check() error {
	if err := checkName("verifier")("verifier", a.Verifier); err != nil {
		return err
	}
	if err := text("summary", a.Summary, false, MaxSummary); err != nil {
		return err
	}
	if err := text("signature", a.Signature, false, 200); err != nil {
		return err
	}
	if a.Patch != "" {
		if err := checkSHA256("patch", a.Patch); err != nil {
			return err
		}
	}
	if err := list("artifacts", a.Artifacts, MaxListItems, checkSHA256); err != nil {
		return err
	}
	return list("supports", a.Supports, MaxListItems, checkReceiptRef)
}

// CommitRequest asks the director to approve a run's patch (the body of a
// CommitRequest receipt). Its summary is the run's report; Cites are the
// receipts and objects the report rests on: those given, then each object
// pointer ("sha256:<hex>") the summary names (RequestCommit adds them), so
// the receipt keeps every citation checked.
type CommitRequest struct {
	Summary string   `json:"summary"`
	Patch   string   `json:"patch"` // SHA-256 of the diff, an object in the object store
	Cites   []string `json:"cites,omitempty"`
}

// Check validates a commit request: its citations' form here, the cited
// objects' presence and content by the Director's CheckCites.
func (c *CommitRequest) Check() error {
	if err := text("summary", c.Summary, true, MaxSummary); err != nil {
		return err
	}
	if err := checkSHA256("patch", c.Patch); err != nil {
		return err
	}
	if err := list("cites", c.Cites, MaxListItems, checkCite); err != nil {
		return err
	}
	for _, p := range textPointers(c.Summary) {
		if err := checkCite("summary", p); err != nil {
			return err
		}
	}
	return nil
}

// Bodies of the lifecycle receipts.
type (
	// RunStartedBody: the executor has the worktree.
	RunStartedBody struct {
		Base     string `json:"base"`
		Worktree string `json:"worktree"`
	}
	// CommitDecisionBody: the director's (or a human's) decision.
	CommitDecisionBody struct {
		Approved bool     `json:"approved"`
		Patch    string   `json:"patch,omitempty"` // the patch of the request decided
		By       string   `json:"by"`
		Reason   string   `json:"reason,omitempty"`
		Missing  []string `json:"missing,omitempty"` // what the policy found missing
	}
	// CommitReceiptBody: what reached the branch.
	CommitReceiptBody struct {
		Commit    string   `json:"commit"`
		WorkItem  string   `json:"work_item"`
		Verifiers []string `json:"verifiers"` // the verifiers that passed
		Evidence  []string `json:"evidence"`  // their VerifierResults receipts
		Decision  string   `json:"decision"`  // the CommitDecision receipt it rests on
	}
	// RunEndedBody: a run's end other than a commit.
	RunEndedBody struct {
		Status RunStatus `json:"status"`
		Reason string    `json:"reason"`
	}
)
