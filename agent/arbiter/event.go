package arbiter

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"choir/agent/lock"
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
// the model receives as the tool message.
type ResultCommitted struct {
	ID         string          `json:"id"`
	Job        string          `json:"job,omitempty"`
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

// TimeLayout is how an event's time enters the hash: UTC, microseconds (the
// precision of a Postgres timestamptz), always six digits.
const TimeLayout = "2006-01-02T15:04:05.000000Z"

// Hash returns the chain hash of e given the hash of the event before it
// ("" before the first event, rev 1):
//
//	hash = hex(SHA-256(prev ‖ canonical(e)))
//
// where prev is the previous hash as its 64 hex characters and canonical(e)
// is the event without its hash, as the JSON object
//
//	{"lane":L,"payload":P,"rev":N,"time":T,"type":Y}
//
// with members in that (sorted) order, P the Canonical form of the payload
// (null when empty), T the time in TimeLayout and L "" for an event of no
// lane. e.Hash is ignored.
func Hash(prev string, e rpc.Event) (string, error) {
	p := []byte("null")
	if len(e.Payload) > 0 {
		var err error
		if p, err = Canonical(e.Payload); err != nil {
			return "", fmt.Errorf("event %d: payload: %w", e.Rev, err)
		}
	}
	h, _ := chainHash(nil, prev, e, p)
	return h, nil
}

// chainHash is Hash with a payload known to be canonical. buf is scratch
// space; it returns buf, grown as needed, for the next call.
func chainHash(buf []byte, prev string, e rpc.Event, payload []byte) (string, []byte) {
	buf = append(buf[:0], prev...)
	buf = append(buf, `{"lane":`...)
	buf = appendString(buf, e.Lane)
	buf = append(buf, `,"payload":`...)
	if len(payload) == 0 {
		buf = append(buf, "null"...)
	} else {
		buf = append(buf, payload...)
	}
	buf = append(buf, `,"rev":`...)
	buf = strconv.AppendInt(buf, e.Rev, 10)
	buf = append(buf, `,"time":"`...)
	buf = e.Time.UTC().AppendFormat(buf, TimeLayout)
	buf = append(buf, `","type":`...)
	buf = appendString(buf, e.Type)
	buf = append(buf, '}')
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:]), buf
}

// appendString appends s as a JSON string, as encoding/json writes it.
func appendString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s)
			return append(buf, b...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

// Verify checks that events are consecutive revisions chained from prev,
// the hash of the event before the first ("" when the first is rev 1):
// each Hash must equal Hash(previous hash, event). It names the first
// event that fails.
func Verify(prev string, events []rpc.Event) error {
	for i, e := range events {
		if i > 0 && e.Rev != events[i-1].Rev+1 {
			return fmt.Errorf("event %d follows event %d: revisions must be consecutive", e.Rev, events[i-1].Rev)
		}
		h, err := Hash(prev, e)
		if err != nil {
			return err
		}
		if h != e.Hash {
			return fmt.Errorf("event %d (%s): hash %s, want %s", e.Rev, e.Type, e.Hash, h)
		}
		prev = h
	}
	return nil
}

// now returns the time an event is committed with: UTC, to the microsecond.
func now(clock func() time.Time) time.Time {
	return clock().UTC().Truncate(time.Microsecond)
}
