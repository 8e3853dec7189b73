package lane

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"choir/agent/lock"
	"choir/agent/tool"
	"choir/internal/jsonschema"
)

// CoreJobStart is the task briefing edge writes for a core job (design
// §12.7). Core never sees the user's messages, only this. JobID is
// assigned by the lane.
type CoreJobStart struct {
	JobID           string          `json:"job_id"`
	JobName         string          `json:"job_name"`
	TaskSpec        string          `json:"task_spec"`
	ContextBundle   ContextBundle   `json:"context_bundle"`
	ToolConstraints ToolConstraints `json:"tool_constraints"`
	// OutputSchema is the JSON Schema the final result must satisfy (an
	// object, or a string holding one); absent or "" accepts any result.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Verbosity    string          `json:"verbosity"`
}

// ContextBundle is the context edge passes to core: only what it needs.
type ContextBundle struct {
	Facts       []string `json:"facts"`
	Excerpts    []string `json:"excerpts"`
	Constraints []string `json:"constraints"`
}

// ToolConstraints narrow what a core job may do: AllowedTools (empty: every
// tool offered to core lanes) and TimeBudgetMS (0: per_job_wall_time_ms;
// otherwise the smaller of the two).
type ToolConstraints struct {
	AllowedTools []string `json:"allowed_tools"`
	TimeBudgetMS int64    `json:"time_budget_ms"`
}

// Verbosity levels: what edge relays to the user besides the final report.
const (
	VerbosityQuiet   = "quiet"   // the final report only
	VerbosityNormal  = "normal"  // and need_info
	VerbosityVerbose = "verbose" // and progress, plan, partial_result
)

// spawnParams is choir.core.spawn's input: a CoreJobStart without job_id.
const spawnParams = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["job_name", "task_spec"],
  "properties": {
    "job_name": {"type": "string", "minLength": 1, "maxLength": 64,
      "description": "A short unique name for the job, e.g. refactor-auth: letters, digits, '-', '_' or '.'."},
    "task_spec": {"type": "string", "minLength": 1,
      "description": "A clear, actionable instruction written by you, not the user's raw message."},
    "context_bundle": {"type": "object", "additionalProperties": false, "properties": {
      "facts": {"type": "array", "items": {"type": "string"}, "description": "Relevant facts."},
      "excerpts": {"type": "array", "items": {"type": "string"}, "description": "File excerpts, prior results, memory references."},
      "constraints": {"type": "array", "items": {"type": "string"}, "description": "The user's requirements and preferences."}}},
    "tool_constraints": {"type": "object", "additionalProperties": false, "properties": {
      "allowed_tools": {"type": "array", "items": {"type": "string"}, "description": "Tools the job may use; empty: all."},
      "time_budget_ms": {"type": "integer", "minimum": 0, "description": "Wall-time budget; 0: the default."}}},
    "output_schema": {"type": ["object", "string"], "description": "JSON Schema the job's result must satisfy."},
    "verbosity": {"type": "string", "enum": ["quiet", "normal", "verbose"],
      "description": "What to relay to the user while it runs: quiet (final report only), normal (and questions), verbose (and progress)."}
  }
}`

// parseStart reads and checks a spawn's input beyond its schema: the name
// is a lock-owner-safe identifier, the allowed tools are offered to core
// lanes, the output schema compiles. Each fault is listed by JSON pointer.
func parseStart(input json.RawMessage, coreTool func(string) bool) (CoreJobStart, *jsonschema.Schema, error) {
	var s CoreJobStart
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, nil, tool.Errorf(tool.CodeInvalidInput, "the CoreJobStart is not valid: %v", err)
	}
	s.JobID = ""
	var fails []tool.FieldFailure
	add := func(path, format string, args ...any) {
		fails = append(fails, tool.FieldFailure{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	s.JobName = strings.TrimSpace(s.JobName)
	if _, err := lock.Core(s.JobName); err != nil || !alnum(s.JobName[0]) {
		add("/job_name", "%q is not a job name: use 1 to 64 letters, digits, '-', '_' or '.', starting with a letter or digit (e.g. refactor-auth)", s.JobName)
	}
	if strings.TrimSpace(s.TaskSpec) == "" {
		add("/task_spec", "empty: write the task for the core job")
	}
	for i, name := range s.ToolConstraints.AllowedTools {
		if !coreTool(name) {
			add("/tool_constraints/allowed_tools/"+strconv.Itoa(i), "%q is not a tool core jobs can use", name)
		}
	}
	if s.Verbosity == "" {
		s.Verbosity = VerbosityNormal
	}
	var schema *jsonschema.Schema
	raw := bytes.TrimSpace(s.OutputSchema)
	if len(raw) > 0 && raw[0] == '"' {
		var text string
		json.Unmarshal(raw, &text)
		raw = bytes.TrimSpace([]byte(text))
	}
	if len(raw) > 0 {
		var err error
		schema, err = jsonschema.Compile(raw)
		if err != nil {
			var se *jsonschema.SchemaError
			if errors.As(err, &se) {
				for _, f := range se.Failures {
					add("/output_schema"+strings.TrimSuffix(f.Path, "/"), "%s", f.Message)
				}
			} else {
				add("/output_schema", "not a JSON Schema: %v", err)
			}
		}
		s.OutputSchema = json.RawMessage(raw)
	} else {
		s.OutputSchema = nil
	}
	if len(fails) > 0 {
		msg := make([]string, len(fails))
		for i, f := range fails {
			msg[i] = f.Path + ": " + f.Message
		}
		return s, nil, &tool.Error{Code: tool.CodeInvalidInput, Message: "the CoreJobStart is not valid: " + strings.Join(msg, "; "), Failures: fails}
	}
	return s, schema, nil
}

func alnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// jobID derives a job's id, its token, from the session, the job's name and
// its number in the session: "job-" and 16 hex digits of SHA-256. Names
// are unique among running jobs only, so the number keeps ids unique.
func jobID(sessionID, name string, seq int64) string {
	sum := sha256.Sum256([]byte(sessionID + "\x00" + name + "\x00" + strconv.FormatInt(seq, 10)))
	return "job-" + hex.EncodeToString(sum[:8])
}

// message is how the CoreJobStart appears at the end of every prompt of
// its job.
func (s CoreJobStart) message() string {
	b, _ := json.MarshalIndent(s, "", "  ")
	return "# CoreJobStart\n\n" + string(b) + "\n\n" +
		"This is your task, written by the edge lane; the events above are your work on it so far. " +
		"Work with the tools offered. Tell the edge what it should know with " + ReportTool + " " +
		"(progress, plan, need_info, partial_result). When you are done, call " + FinishTool +
		" with a summary for the user and the result" + map[bool]string{true: " matching output_schema", false: ""}[len(s.OutputSchema) > 0] + "."
}
