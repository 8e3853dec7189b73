package arbiter

import (
	"encoding/json"
	"time"

	"choir/agent/lock"
	"choir/internal/chain"
	"choir/internal/rpc"
)

// Event types of the commit log (design §7.4, §13.1). They are the Type of
// the rpc.Event values that heartbeats replicate.
const (
	UserMsg              = "UserMsg"
	ModelOutput          = "ModelOutput"
	ToolCallRequested    = "ToolCallRequested"
	ToolCallCommitted    = "ToolCallCommitted"
	ToolResultCommitted  = "ToolResultCommitted"
	MemoryWriteCommitted = "MemoryWriteCommitted"
	CoreStarted          = "CoreStarted"
	CoreStopped          = "CoreStopped"
	InjectedInstruction  = "InjectedInstruction"
	Cancelled            = "Cancelled"
	SkillTransition      = "SkillTransition"
)

// recordable are the types a lane may Record. The three tool types are
// appended only by the arbiter itself, from proposals.
var recordable = map[string]bool{
	UserMsg: true, ModelOutput: true, MemoryWriteCommitted: true,
	CoreStarted: true, CoreStopped: true, InjectedInstruction: true,
	Cancelled: true, SkillTransition: true,
	rpc.ModelCallEvent: true, // one model call attempt (the usage ledger)
}

// Lane values of committed events, as choird's store accepts them: the
// edge, a core job (its name goes in the payload as "job"), or none.
const (
	LaneEdge = "edge"
	LaneCore = "core"
)

// laneOf returns the event lane and the job name of an owner.
func laneOf(o lock.Owner) (lane, job string) {
	switch {
	case o == "":
		return "", ""
	case o.IsCore():
		return LaneCore, o.Job()
	default:
		return LaneEdge, ""
	}
}

// Payloads. Their fields are declared in the sorted order of their JSON
// names, so json.Marshal writes them in canonical form as long as the raw
// members are canonical already (TestPayloadsAreCanonical checks this).

// UserMsgPayload is the payload of UserMsg.
type UserMsgPayload struct {
	Text string `json:"text"`
}

// ModelOutputPayload is the payload of ModelOutput: one model reply.
type ModelOutputPayload struct {
	// Error is set when the model call failed; Text is then the message the
	// user was given instead of an answer.
	Error     string          `json:"error,omitempty"`
	Model     string          `json:"model,omitempty"`
	Text      string          `json:"text"`
	ToolCalls []ModelToolCall `json:"tool_calls,omitempty"`
}

// ModelToolCall is one tool call of a model reply, as the model sent it:
// Name is the wire name and Arguments the string it sent, valid JSON or not.
type ModelToolCall struct {
	Arguments string `json:"arguments"`
	ID        string `json:"id"`
	Name      string `json:"name"`
}

// CallRequested is the payload of ToolCallRequested: a proposal as received.
type CallRequested struct {
	ID    string          `json:"id"`
	Input json.RawMessage `json:"input,omitempty"`
	Job   string          `json:"job,omitempty"`
	// RawInput holds arguments that were not JSON, as sent.
	RawInput   string `json:"raw_input,omitempty"`
	Tool       string `json:"tool"`
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// CallCommitted is the payload of ToolCallCommitted: the call passed every
// check and its lockset is held; it runs next.
type CallCommitted struct {
	ID    string     `json:"id"`
	Job   string     `json:"job,omitempty"`
	Locks []LockHeld `json:"locks"`
	Tool  string     `json:"tool"`
}

// LockHeld is one lock of a committed call.
type LockHeld struct {
	Mode     string `json:"mode"`
	Resource string `json:"resource"`
}

// ResultCommitted is the payload of ToolResultCommitted. Output is the JSON
// the model receives as the tool message. DurationMS is how long the tool
// ran and LockWaitMS how long the call waited for its locks, both in whole
// milliseconds (0 for a call answered without running, §22.1).
type ResultCommitted struct {
	DurationMS int64           `json:"duration_ms"`
	ID         string          `json:"id"`
	Job        string          `json:"job,omitempty"`
	LockWaitMS int64           `json:"lock_wait_ms"`
	Output     json.RawMessage `json:"output"`
	Status     string          `json:"status"`
	Tool       string          `json:"tool"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

// SkillTransitionPayload is the payload of SkillTransition. ID names the
// invocation (a choir.skill.* call) that caused it, if any.
type SkillTransitionPayload struct {
	From   string `json:"from"`
	ID     string `json:"id,omitempty"`
	Job    string `json:"job,omitempty"`
	On     string `json:"on"`
	Reason string `json:"reason,omitempty"`
	Skill  string `json:"skill"`
	Status string `json:"status"`
	To     string `json:"to"`
}

// The chain's definitions live in internal/chain, which choird's store
// verifies with; these name them where the arbiter's callers look.

// TimeLayout is how an event's time enters the hash (chain.TimeLayout).
const TimeLayout = chain.TimeLayout

// Canonical returns the canonical JSON form of one JSON value (see
// chain.Canonical): what the hash chain covers.
func Canonical(data []byte) ([]byte, error) { return chain.Canonical(data) }

// Hash returns the chain hash of e given the hash of the event before it
// ("" before rev 1); see chain.Hash. e.Hash is ignored.
func Hash(prev string, e rpc.Event) (string, error) { return chain.Hash(prev, chain.Event(e)) }

// Verify checks that events are consecutive revisions chained from prev,
// the hash of the event before the first ("" when the first is rev 1); the
// error is a *chain.Break naming the first event that fails.
func Verify(prev string, events []rpc.Event) error {
	evs := make([]chain.Event, len(events))
	for i, e := range events {
		evs[i] = chain.Event(e)
	}
	return chain.Verify(prev, evs)
}

// appendString appends s as a canonical JSON string.
func appendString(buf []byte, s string) []byte { return chain.AppendString(buf, s) }

// now returns the time an event is committed with: UTC, to the microsecond.
func now(clock func() time.Time) time.Time {
	return clock().UTC().Truncate(time.Microsecond)
}
