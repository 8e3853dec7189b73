package approval

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"choir/internal/rpc"
)

// Status is pending until decided: approved or rejected.
type Status string

const (
	Pending  Status = "pending"
	Approved Status = "approved"
	Rejected Status = "rejected"
)

// ByTimeout is the ResolvedBy of an approval nobody answered in time.
const ByTimeout = "choird (timeout)"

// Approval is one request for a human decision, pending or decided.
type Approval struct {
	ID          string // at most 36 bytes (a UUID, or the asker's: RequestOnce), so "ap:<id>:y" fits callback data
	SessionID   string // "" when no session asked
	AgentID     string
	RequestType string // repo_change, tool_proposal, skill_proposal, config_change…
	Summary     string // one line for the operator
	Payload     json.RawMessage
	Status      Status
	CreatedAt   time.Time
	ResolvedAt  time.Time // zero while pending
	ResolvedBy  string    // who decided: "telegram:<user id> (<dm>)", "choirctl", ByTimeout
}

// TimedOut reports an approval rejected because nobody answered in time.
func (a Approval) TimedOut() bool { return a.Status == Rejected && a.ResolvedBy == ByTimeout }

// Decision is the data of the rpc.EventApproval push that tells the agent.
func (a Approval) Decision() rpc.ApprovalDecision {
	return rpc.ApprovalDecision{ApprovalID: a.ID, Status: string(a.Status), By: a.ResolvedBy}
}

// maxShownSummary bounds the summary in a DM message, well under
// Telegram's 4096 characters; the full text stays in the store.
const maxShownSummary = 3000

// ShownSummary is the summary as a message shows it: cut to a length that
// fits, and never empty.
func (a Approval) ShownSummary() string {
	s := strings.TrimSpace(a.Summary)
	if s == "" {
		s = a.RequestType
	}
	if utf8.RuneCountInString(s) > maxShownSummary {
		r := []rune(s)
		s = string(r[:maxShownSummary]) + "… (cut; see `choirctl approval show " + a.ID + "`)"
	}
	return s
}

// OutcomeText is what the DM is told once a is decided (§19.6):
// "Approved: <summary>. Executing.", "Rejected: <summary>." or "Approval
// timed out: <summary>. Rejected automatically.", with who decided. A
// pending approval gives "".
func OutcomeText(a Approval) string {
	s := strings.TrimRight(a.ShownSummary(), ". ")
	switch {
	case a.TimedOut():
		return fmt.Sprintf("Approval timed out: %s. Rejected automatically.", s)
	case a.Status == Approved:
		return fmt.Sprintf("Approved: %s. Executing.\n(by %s)", s, a.ResolvedBy)
	case a.Status == Rejected:
		return fmt.Sprintf("Rejected: %s.\n(by %s)", s, a.ResolvedBy)
	}
	return ""
}

// RequestText is the message that asks the DM to decide a.
func RequestText(a Approval) string {
	return fmt.Sprintf("Approval requested by %s (%s):\n%s\n\nid: %s", a.AgentID, a.RequestType, a.ShownSummary(), a.ID)
}

// Decider says who decides and for which agents they may.
// The zero Decider may decide nothing.
type Decider struct {
	// By is recorded as the decision's author: "telegram:<user id> (<dm>)"
	// or "choirctl".
	By string
	// Any lets the decider decide every agent's approvals (an admin DM,
	// choirctl).
	Any bool
	// Agent is otherwise the one agent whose approvals it may decide (a
	// regular DM's bound agent); "" means none.
	Agent string
}

// Operator is a decider for every agent: an admin DM, or choirctl.
func Operator(by string) Decider { return Decider{By: by, Any: true} }

// BoundTo is a decider for one agent's approvals only: a regular DM bound
// to agent ("" when the DM is bound to none: it may decide nothing).
func BoundTo(by, agent string) Decider { return Decider{By: by, Agent: agent} }

// May reports whether d may decide an approval of agentID.
func (d Decider) May(agentID string) bool {
	return d.Any || (d.Agent != "" && d.Agent == agentID)
}

// Errors of the pipeline, for errors.Is.
var (
	// ErrNotFound: no approval has that id.
	ErrNotFound = errors.New("no such approval")
	// ErrAlreadyDecided: the approval was decided before (by a person, or
	// by its timeout); nothing changed. The stored decision is returned
	// with it.
	ErrAlreadyDecided = errors.New("approval already decided")
	// ErrNotAllowed: the decider may not decide this agent's approvals.
	ErrNotAllowed = errors.New("not allowed to decide this approval")
	// ErrExists: an approval already has the id a request chose
	// (Service.RequestOnce); the stored one is returned with it.
	ErrExists = errors.New("an approval with that id exists")
)

// Summarize is a one-line summary of a request whose agent gave none: for
// the proposals of choir.propose.* what is proposed and why (a repo change
// names the branch to review), else the payload's "summary",
// "description", "title" or "name" string, else the request type and the
// payload's start.
func Summarize(requestType string, payload json.RawMessage) string {
	var pr struct {
		Spec     struct{ Name string } `json:"spec"`
		Manifest struct {
			LLM struct{ Name string } `json:"llm"`
		} `json:"manifest"`
		Change      string `json:"change"`
		Branch      string `json:"branch"`
		Description string `json:"description"`
		Rationale   string `json:"rationale"`
	}
	if p := &pr; json.Unmarshal(payload, p) == nil {
		var s string
		switch {
		case requestType == "skill" && p.Spec.Name != "":
			s = "new or changed skill " + p.Spec.Name + ": " + p.Rationale
		case requestType == "tool" && p.Manifest.LLM.Name != "":
			s = "new or changed tool " + p.Manifest.LLM.Name + " (manifest only; a person writes its code): " + p.Rationale
		case requestType == "config_change" && p.Change != "":
			s = "configuration change: " + p.Change + " (" + p.Rationale + ")"
		case requestType == "repo_change" && p.Branch != "":
			s = "merge branch " + p.Branch + " into the agent's repo (review it first: git log -p " + p.Branch + "): " + p.Description
		}
		if s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(s, ": "), " ()")); s != "" {
			if r := []rune(s); len(r) > 400 {
				s = string(r[:400]) + "…"
			}
			return s
		}
	}
	var fields map[string]any
	if json.Unmarshal(payload, &fields) == nil {
		for _, k := range []string{"summary", "description", "title", "name"} {
			if s, ok := fields[k].(string); ok && strings.TrimSpace(s) != "" {
				return strings.TrimSpace(s)
			}
		}
	}
	p := strings.TrimSpace(string(payload))
	if p == "" || p == "{}" || p == "null" {
		return requestType
	}
	if r := []rune(p); len(r) > 200 {
		p = string(r[:200]) + "…"
	}
	return requestType + " " + p
}
