package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"choir/agent/sandbox"
	"choir/agent/tool/internal/proc"
)

// External is a tool defined by a manifest and run as an executable (design
// §8.8).
//
// The protocol: the executable starts in its own process group with the
// workspace as working directory, no arguments and the environment
// sandbox.Env() (PATH, HOME=/tmp, LANG, TERM and the agent's ids) and nothing
// else; in a container it runs as the workspace's owner (agent/sandbox). Its standard input is one
// JSON object, then EOF:
//
//	{"input": {...}, "call_id": "...", "workspace": "/workspace", "secrets": {"name": "value"}}
//
// where secrets is present only when the manifest grants secret_resources,
// and holds exactly those. Secrets never travel in the environment or the
// arguments, where /proc would show them. The executable answers one JSON
// result object on standard output (see ParseResult) and exits 0. A non-zero
// exit, a signal, output that is not one object, or more than OutputCap bytes
// of it, is an error result carrying the tail of standard error. When the
// call's deadline passes, or it is cancelled, the whole process group is
// killed.
type External struct {
	llm  LLMTool
	rt   Runtime
	file string // the manifest, for messages
}

// OutputCap bounds what is kept of an external tool's stdout and stderr.
const OutputCap = 1 << 20

// stderrExcerpt bounds the stderr quoted in an error result.
const stderrExcerpt = 2 << 10

var _ Tool = (*External)(nil)

func (t *External) Name() string     { return t.llm.Name }
func (t *External) LLM() LLMTool     { return t.llm }
func (t *External) Runtime() Runtime { return t.rt.clone() }

// ManifestFile is the manifest the tool was loaded from.
func (t *External) ManifestFile() string { return t.file }

// Locks returns the manifest's static locks.
func (t *External) Locks(json.RawMessage) ([]LockReq, error) {
	return append([]LockReq(nil), t.rt.Locks...), nil
}

type envelope struct {
	Input     json.RawMessage   `json:"input"`
	CallID    string            `json:"call_id"`
	Workspace string            `json:"workspace"`
	Secrets   map[string]string `json:"secrets,omitempty"`
}

// Execute runs the executable once.
func (t *External) Execute(ctx context.Context, input json.RawMessage, env Env) (Result, error) {
	if env.Workspace == "" {
		return Result{}, errors.New("external tool: no workspace in the environment")
	}
	stdin, err := json.Marshal(envelope{Input: input, CallID: env.CallID, Workspace: env.Workspace, Secrets: env.Secrets})
	if err != nil {
		return Result{}, fmt.Errorf("encode the tool's input: %w", err)
	}
	r, err := proc.Run(ctx, proc.Spec{
		Path:      t.rt.ExecPath,
		Dir:       env.Workspace,
		Env:       sandbox.Env(),
		Stdin:     stdin,
		StdoutCap: OutputCap,
		StderrCap: OutputCap,
	})
	if err != nil {
		return Result{}, Errorf(CodeInternal, "start %s: %v", t.rt.ExecPath, err)
	}
	if r.Stopped != nil {
		return Result{}, r.Stopped // Call.Run names it timeout or cancelled
	}
	fail := func(code, format string, args ...any) (Result, error) {
		e := Errorf(code, format, args...)
		fields := map[string]any{}
		if s := strings.TrimSpace(tailOf(r.Stderr.Text, stderrExcerpt)); s != "" {
			fields["stderr"] = s
		}
		return Result{Status: StatusError, Summary: e.Message, Error: e, Fields: fields}, nil
	}
	switch {
	case r.OOMKilled:
		return fail(CodeExitStatus, "%s was killed by the kernel: the container ran out of memory", t.llm.Name)
	case r.Signal != "":
		return fail(CodeExitStatus, "%s was killed by signal %s", t.llm.Name, r.Signal)
	case r.ExitCode != 0:
		return fail(CodeExitStatus, "%s exited with status %d", t.llm.Name, r.ExitCode)
	case r.Stdout.Truncated:
		return fail(CodeBadOutput, "%s wrote %d bytes to stdout, more than the %d allowed", t.llm.Name, r.Stdout.Total, OutputCap)
	}
	res, err := ParseResult([]byte(r.Stdout.Text))
	if err != nil {
		return fail(CodeBadOutput, "%s did not print one JSON result object on stdout: %v", t.llm.Name, err)
	}
	if res.Summary == "" {
		res.Summary = t.llm.Name + " finished"
	}
	return res, nil
}

// tailOf returns the last n bytes of s.
func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
