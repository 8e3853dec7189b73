package rpc

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Bounds of every field choird reads from a request and keeps, logs or
// echoes. Server refuses a request over any of them with 400 naming the
// field and the limit, before the handler sees it; the whole body is
// capped by Limits.MaxPayload (4 MiB by default) first. What choird keeps
// per session in memory is then: the last status of at most 1 +
// max_core_jobs lanes (at most MaxLanes), each at most MaxStatusBytes; a
// TERMINATE_SELF reason; the config version; and, in Server, the session's
// token hash, rate bucket, connection and stream counts and at most
// Limits.EventBacklog push events.
const (
	// MaxIDBytes bounds identifiers: agent_id, session_id, image_version,
	// the manifest hashes, tool_name, call_id, request_type, each secret
	// name, an event's type, lane and hash, hash_prev and hash_new.
	MaxIDBytes = 128
	// MaxSecretNames bounds GET_SECRETS' resources list.
	MaxSecretNames = 64
	// MaxPatches bounds the events of one HEARTBEAT (the agent sends at
	// most HeartbeatMaxEvents and loops); their bytes are bounded by the
	// body cap.
	MaxPatches = 1024
	// MaxSnapshotBytes bounds a HEARTBEAT's snapshot; it must be a
	// Snapshot: an object with exactly §13.4's members.
	MaxSnapshotBytes = 1 << 20
	// MaxSummaryBytes bounds a final HEARTBEAT's session summary (§11.8);
	// it must be a JSON object and come with final.
	MaxSummaryBytes = 64 << 10
	// MaxApprovalPayload bounds REQUEST_APPROVAL's payload: a person reads
	// it.
	MaxApprovalPayload = 64 << 10
	// MaxReasonBytes bounds TERMINATE_SELF's reason.
	MaxReasonBytes = 1024
	// MaxJobNameBytes bounds a core job's name (agent/lock's rule: 1 to 64
	// letters, digits, '-', '_' or '.').
	MaxJobNameBytes = 64
	// MaxStatusBytes bounds one REPORT_STATUS, as JSON.
	MaxStatusBytes = 4 << 10
	// MaxStatusBudgets bounds a status's budget_remaining entries.
	MaxStatusBudgets = 16
	// MaxLanes bounds the lanes one session reports, whatever
	// max_core_jobs says: the edge and 64 core jobs.
	MaxLanes = 1 + 64
)

// Lane names.
const (
	LaneEdge       = "edge"
	LaneCorePrefix = "core:"
)

// ValidLane says whether name is a lane: "edge" or "core:<job>" with a job
// name of 1 to MaxJobNameBytes letters, digits, '-', '_' or '.' (the rule
// of agent/lock, which owns lane names).
func ValidLane(name string) bool {
	if name == LaneEdge {
		return true
	}
	job, ok := strings.CutPrefix(name, LaneCorePrefix)
	if !ok || job == "" || len(job) > MaxJobNameBytes {
		return false
	}
	for i := 0; i < len(job); i++ {
		if c := job[i]; !alnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// checker is a request with bounds of its own; bind calls it after decoding.
type checker interface{ check() error }

// tooBig is the 400 for a field over its bound.
func tooBig(field string, got, limit int, unit string) *Error {
	return Errorf(http.StatusBadRequest, CodeBadRequest, "%s is %d %s; the limit is %d %s", field, got, unit, limit, unit)
}

// ids checks identifier fields against MaxIDBytes.
func ids(fields ...string) error {
	for i := 0; i+1 < len(fields); i += 2 {
		if n := len(fields[i+1]); n > MaxIDBytes {
			return tooBig(fields[i], n, MaxIDBytes, "bytes")
		}
	}
	return nil
}

func (r InitHelloReq) check() error {
	return ids("agent_id", r.AgentID, "session_id", r.SessionID, "image_version", r.ImageVersion,
		"global_repo_commit", r.GlobalRepoCommit, "agent_repo_commit", r.AgentRepoCommit,
		"tool_manifest_hash", r.ToolManifestHash, "skill_manifest_hash", r.SkillManifestHash)
}

func (r FetchEventsReq) check() error {
	switch {
	case r.AfterRev < 0:
		return Errorf(http.StatusBadRequest, CodeBadRequest, "after_rev is %d: want a revision, 0 or more", r.AfterRev)
	case r.Max < 0 || r.Max > HeartbeatMaxEvents:
		return Errorf(http.StatusBadRequest, CodeBadRequest, "max is %d: want 0 (the default, %d) to %d events", r.Max, HeartbeatMaxEvents, HeartbeatMaxEvents)
	}
	return nil
}

func (r SecretReq) check() error {
	if len(r.Resources) > MaxSecretNames {
		return tooBig("resources", len(r.Resources), MaxSecretNames, "names")
	}
	for i, n := range r.Resources {
		if err := ids(fmt.Sprintf("resources[%d]", i), n); err != nil {
			return err
		}
	}
	return nil
}

func (r HeartbeatReq) check() error {
	if len(r.Patches) > MaxPatches {
		return tooBig("patches", len(r.Patches), MaxPatches, "events")
	}
	for i, e := range r.Patches {
		p := fmt.Sprintf("patches[%d]", i)
		if err := ids(p+".type", e.Type, p+".lane", e.Lane, p+".hash", e.Hash); err != nil {
			return err
		}
	}
	if err := ids("hash_prev", r.HashPrev, "hash_new", r.HashNew); err != nil {
		return err
	}
	if len(r.Snapshot) > 0 {
		if n := len(r.Snapshot); n > MaxSnapshotBytes {
			return tooBig("snapshot", n, MaxSnapshotBytes, "bytes")
		}
		if _, err := ParseSnapshot(r.Snapshot); err != nil {
			return Errorf(http.StatusBadRequest, CodeBadRequest, "%v", err)
		}
	}
	return CheckSummary(r.Summary, r.Final)
}

// CheckSummary checks a heartbeat's session summary (§11.8): none (null
// counts as none), or a JSON object of at most MaxSummaryBytes on a final
// heartbeat. The 400 names the field.
func CheckSummary(summary json.RawMessage, final bool) error {
	if len(summary) == 0 || string(summary) == "null" {
		return nil
	}
	if n := len(summary); n > MaxSummaryBytes {
		return tooBig("summary", n, MaxSummaryBytes, "bytes")
	}
	if !final {
		return Errorf(http.StatusBadRequest, CodeBadRequest, "summary: only the final heartbeat of a graceful stop carries the session summary; send it with final: true")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(summary, &obj); err != nil || obj == nil {
		return Errorf(http.StatusBadRequest, CodeBadRequest, "summary is not a JSON object: want the session summary as one object, e.g. {\"title\":...,\"summary\":...}")
	}
	return nil
}

// snapshotMembers are the members of a Snapshot, in §13.4's order.
var snapshotMembers = []string{"reference_summary_edge", "reference_summary_core", "event_window_boundary", "skill_state", "lane_state", "open_jobs"}

// ParseSnapshot reads a working-memory snapshot: a JSON object with
// exactly the members of §13.4 (Snapshot), each present and not null. The
// error names the member that is missing or not one of them.
func ParseSnapshot(raw json.RawMessage) (Snapshot, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return Snapshot{}, fmt.Errorf("snapshot is not a JSON object: want one with the members %s (§13.4)", strings.Join(snapshotMembers, ", "))
	}
	for name := range m {
		if !slices.Contains(snapshotMembers, name) {
			return Snapshot{}, fmt.Errorf("snapshot has the member %q, which §13.4 does not define: want exactly %s", clip(name), strings.Join(snapshotMembers, ", "))
		}
	}
	for _, name := range snapshotMembers {
		if v, ok := m[name]; !ok || string(v) == "null" {
			return Snapshot{}, fmt.Errorf("snapshot lacks the member %q (§13.4): want exactly %s", name, strings.Join(snapshotMembers, ", "))
		}
	}
	return Snapshot{
		ReferenceSummaryEdge: m["reference_summary_edge"], ReferenceSummaryCore: m["reference_summary_core"],
		EventWindowBoundary: m["event_window_boundary"], SkillState: m["skill_state"],
		LaneState: m["lane_state"], OpenJobs: m["open_jobs"],
	}, nil
}

func (r ApprovalReq) check() error {
	if err := ids("request_type", r.RequestType); err != nil {
		return err
	}
	if len(r.Payload) > MaxApprovalPayload {
		return tooBig("payload", len(r.Payload), MaxApprovalPayload, "bytes")
	}
	return nil
}

func (r StatusReq) check() error {
	if !ValidLane(r.Lane) {
		return Errorf(http.StatusBadRequest, CodeBadRequest, "lane %q is not a lane: want %q or %q<job> (job: 1 to %d letters, digits, '-', '_' or '.')", clip(r.Lane), LaneEdge, LaneCorePrefix, MaxJobNameBytes)
	}
	if len(r.BudgetRemaining) > MaxStatusBudgets {
		return tooBig("budget_remaining", len(r.BudgetRemaining), MaxStatusBudgets, "entries")
	}
	if r.TokensUsed < 0 || r.ToolCalls < 0 {
		return Errorf(http.StatusBadRequest, CodeBadRequest, "status of lane %s counts %d tokens and %d tool calls: want counts of 0 or more", r.Lane, r.TokensUsed, r.ToolCalls)
	}
	if n := r.size(); n > MaxStatusBytes {
		return Errorf(http.StatusBadRequest, CodeBadRequest, "status of lane %s is %d bytes; the limit is %d bytes", r.Lane, n, MaxStatusBytes)
	}
	return nil
}

// size is the status's length as JSON.
func (r StatusReq) size() int {
	b, _ := json.Marshal(r)
	return len(b)
}

func (r TerminateReq) check() error {
	if n := len(r.Reason); n > MaxReasonBytes {
		return tooBig("reason", n, MaxReasonBytes, "bytes")
	}
	return nil
}

func (r HostToolReq) check() error {
	return ids("tool_name", r.ToolName, "call_id", r.CallID)
}

// clip shortens what a refusal echoes back.
func clip(s string) string { return clipTo(s, 80) }

func clipTo(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
