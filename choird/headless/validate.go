package headless

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ValidationError is a refused input: what was wrong, where (the field, as
// a JSON path of the request) and what to do. It wraps ErrInvalidInput.
type ValidationError struct {
	Where   string // JSON path of the field, "acceptance[2]"
	Problem string
	Fix     string
}

func (e *ValidationError) Error() string {
	msg := e.Where + ": " + e.Problem
	if e.Fix != "" {
		msg += "; " + e.Fix
	}
	return msg
}

func (e *ValidationError) Unwrap() error { return ErrInvalidInput }

func invalid(where, fix, format string, args ...any) *ValidationError {
	return &ValidationError{Where: where, Problem: fmt.Sprintf(format, args...), Fix: fix}
}

// Limits on what a work item, a note or an attestation may hold.
const (
	MaxDescription = 4000 // characters
	MaxText        = 4000 // a note's or an acceptance criterion's text
	MaxSummary     = 2000 // an attestation's or commit request's summary: structured, never a raw log
	MaxListItems   = 32   // acceptance criteria, verifiers, dependencies, citations, objects
	MaxChildren    = 32   // children of one split
	MaxReason      = 1000 // why a run ended, why a commit was decided
	maxName        = 64   // verifier, mood, trigger names
	maxKey         = 128  // idempotency keys
	maxTrigger     = 256
)

var (
	workIDRE   = regexp.MustCompile(`^w-[0-9a-f]{12}$`)
	runIDRE    = regexp.MustCompile(`^r-[0-9a-f]{12}$`)
	refRE      = regexp.MustCompile(`^r-[0-9a-f]{12}#[1-9][0-9]{0,17}$`)
	nameRE     = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	agentRE    = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)
	moodRE     = regexp.MustCompile(`^[A-Z][A-Z_]{0,31}$`)
	keyRE      = regexp.MustCompile(`^[A-Za-z0-9._:/-]{1,128}$`)
	sha256RE   = regexp.MustCompile(`^[0-9a-f]{64}$`)
	commitRE   = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)
	triggerBad = regexp.MustCompile(`[\x00-\x1f\x7f]`)
)

// ValidWorkItemID reports whether id has the form w-<12 hex>.
func ValidWorkItemID(id string) bool { return workIDRE.MatchString(id) }

// ValidRunID reports whether id has the form r-<12 hex>.
func ValidRunID(id string) bool { return runIDRE.MatchString(id) }

// text checks a required or optional piece of prose.
func text(where, s string, required bool, max int) error {
	if !utf8.ValidString(s) {
		return invalid(where, "send valid UTF-8", "not valid UTF-8")
	}
	if strings.TrimSpace(s) == "" {
		if required {
			return invalid(where, "say it in a few words", "is empty")
		}
		return nil
	}
	if n := utf8.RuneCountInString(s); n > max {
		return invalid(where, "shorten it, or split the work", "is %d characters long, over the limit of %d", n, max)
	}
	if strings.ContainsRune(s, 0) {
		return invalid(where, "remove the NUL characters", "holds a NUL character")
	}
	return nil
}

// list checks a list's length and each item with check; it refuses
// duplicates.
func list(where string, items []string, max int, check func(where, s string) error) error {
	if len(items) > max {
		return invalid(where, "keep the list shorter", "has %d items, over the limit of %d", len(items), max)
	}
	seen := make(map[string]int, len(items))
	for i, s := range items {
		w := where + "[" + strconv.Itoa(i) + "]"
		if err := check(w, s); err != nil {
			return err
		}
		if j, dup := seen[s]; dup {
			return invalid(w, "remove the duplicate", "%q repeats %s[%d]", s, where, j)
		}
		seen[s] = i
	}
	return nil
}

func checkName(what string) func(where, s string) error {
	return func(where, s string) error {
		if !nameRE.MatchString(s) {
			return invalid(where, "use lowercase letters, digits, '.', '_' or '-', up to 64, starting with a letter or digit", "%s %q is not a valid name", what, s)
		}
		return nil
	}
}

func checkWorkRef(where, s string) error {
	if !workIDRE.MatchString(s) {
		return invalid(where, "give a work item id as `choirctl work list` shows it (w- and 12 hex digits)", "%q is not a work item id", s)
	}
	return nil
}

func checkReceiptRef(where, s string) error {
	if !refRE.MatchString(s) {
		return invalid(where, "cite a receipt as <run id>#<seq>, e.g. r-0123456789ab#3", "%q is not a receipt reference", s)
	}
	return nil
}

func checkSHA256(where, s string) error {
	if !sha256RE.MatchString(s) {
		return invalid(where, "give the object's SHA-256 as 64 lowercase hex digits", "%q is not a SHA-256", s)
	}
	return nil
}

func checkAcceptance(where, s string) error { return text(where, s, true, MaxText) }

// CheckKey checks an idempotency key ("" means none).
func CheckKey(where, key string) error {
	if key != "" && !keyRE.MatchString(key) {
		return invalid(where, "use up to 128 of [A-Za-z0-9._:/-]", "idempotency key %q is not valid", key)
	}
	return nil
}

// NewWorkItem is what a caller gives to create a work item; the Director
// fills in the id, status and times.
type NewWorkItem struct {
	Agent       string   `json:"agent"`
	Description string   `json:"description"`
	Acceptance  []string `json:"acceptance"`
	Verifiers   []string `json:"verifiers"`
	Risk        Risk     `json:"risk"`
	DependsOn   []string `json:"depends_on"`
}

// Check validates a new work item's own fields (that its dependencies exist
// and form no cycle is the Director's check). prefix is the JSON path of
// the item in its request ("" or "children[1].").
func (n *NewWorkItem) Check(prefix string) error {
	if !agentRE.MatchString(n.Agent) {
		return invalid(prefix+"agent", "name an agent id from config.json", "%q is not an agent id", n.Agent)
	}
	if err := text(prefix+"description", n.Description, true, MaxDescription); err != nil {
		return err
	}
	if len(n.Acceptance) == 0 {
		return invalid(prefix+"acceptance", "give at least one criterion a verifier or a human can check (--accept)", "no acceptance criterion")
	}
	if err := list(prefix+"acceptance", n.Acceptance, MaxListItems, checkAcceptance); err != nil {
		return err
	}
	if err := list(prefix+"verifiers", n.Verifiers, MaxListItems, checkName("verifier")); err != nil {
		return err
	}
	switch n.Risk {
	case "":
		n.Risk = RiskLow
	case RiskLow, RiskMedium, RiskHigh:
	default:
		return invalid(prefix+"risk", "use low, medium or high", "risk tier %q is unknown", n.Risk)
	}
	return list(prefix+"depends_on", n.DependsOn, MaxListItems, checkWorkRef)
}

// WorkItemUpdate changes an open work item; a nil field is left as it is.
type WorkItemUpdate struct {
	Description *string   `json:"description,omitempty"`
	Acceptance  *[]string `json:"acceptance,omitempty"`
	Verifiers   *[]string `json:"verifiers,omitempty"`
	Risk        *Risk     `json:"risk,omitempty"`
	DependsOn   *[]string `json:"depends_on,omitempty"`
}

// apply returns item with the update applied, checked.
func (u WorkItemUpdate) apply(item WorkItem) (WorkItem, error) {
	n := NewWorkItem{Agent: item.Agent, Description: item.Description, Acceptance: item.Acceptance,
		Verifiers: item.Verifiers, Risk: item.Risk, DependsOn: item.DependsOn}
	if u.Description != nil {
		n.Description = *u.Description
	}
	if u.Acceptance != nil {
		n.Acceptance = *u.Acceptance
	}
	if u.Verifiers != nil {
		n.Verifiers = *u.Verifiers
	}
	if u.Risk != nil {
		if *u.Risk == "" {
			return item, invalid("risk", "use low, medium or high", "risk tier is empty")
		}
		n.Risk = *u.Risk
	}
	if u.DependsOn != nil {
		n.DependsOn = *u.DependsOn
	}
	if err := n.Check(""); err != nil {
		return item, err
	}
	item.Description, item.Acceptance, item.Verifiers, item.Risk, item.DependsOn =
		n.Description, n.Acceptance, n.Verifiers, n.Risk, n.DependsOn
	return item, nil
}

// NewRun is what a caller gives to create a run from a work item.
type NewRun struct {
	WorkItem string  `json:"work_item"`
	Mood     string  `json:"mood"`    // "": the mood the guards chose (Director.NextMood), else CALM
	Trigger  string  `json:"trigger"` // what asked for it: "manual", "cron:<name>", "ready:<work item>"
	Budgets  Budgets `json:"budgets"`
}

// Check validates a new run's fields.
func (n *NewRun) Check() error {
	if err := checkWorkRef("work_item", n.WorkItem); err != nil {
		return err
	}
	if n.Mood != "" && !moodRE.MatchString(n.Mood) {
		return invalid("mood", "use a mood name in capitals, such as CALM or SKEPTICAL", "mood %q is not a mood name", n.Mood)
	}
	if n.Trigger == "" {
		n.Trigger = "manual"
	}
	if len(n.Trigger) > maxTrigger || !utf8.ValidString(n.Trigger) || triggerBad.MatchString(n.Trigger) {
		return invalid("trigger", "use up to 256 printable characters", "trigger %q is not valid", n.Trigger)
	}
	for name, v := range map[string]int64{"budgets.tokens": n.Budgets.Tokens, "budgets.wall_seconds": n.Budgets.WallSeconds, "budgets.tool_calls": n.Budgets.ToolCalls} {
		if v < 0 {
			return invalid(name, "give a positive number, or 0 for the mood's default", "is negative (%d)", v)
		}
	}
	return nil
}
