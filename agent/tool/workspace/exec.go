package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"time"

	"choir/agent/tool"
	"choir/agent/tool/internal/proc"
)

// choir.exec limits: a command runs DefaultExecTimeout unless its input asks
// for another timeout, and never longer than MaxExecTimeout.
const (
	DefaultExecTimeout = 2 * time.Minute
	MaxExecTimeout     = 10 * time.Minute
)

// Exec is choir.exec: `bash -c <command>` in the workspace root, holding
// workspace X (design §9.5: no command parsing, no read-only override). The
// command runs in its own process group, killed on timeout or cancellation
// and, once the command exits, with any child it left behind. stdout and
// stderr are captured separately, each keeping its first and last halves
// around a "[choir: N bytes omitted]" marker past the cap. A command that
// exits non-zero is a success result with its exit_code: the tool ran; the
// command's outcome is data. A timeout is an error result carrying the output
// captured so far.
type Exec struct {
	base
	env []string
	cap int
}

var _ tool.Tool = (*Exec)(nil)

const execParams = `{
  "type": "object",
  "properties": {
    "command": {"type": "string", "minLength": 1,
      "description": "The command line, run as bash -c <command> in the workspace root."},
    "timeout_ms": {"type": "integer", "minimum": 1, "maximum": 600000,
      "description": "Stop the command after this many milliseconds (default 120000, at most 600000)."}
  },
  "required": ["command"],
  "additionalProperties": false
}`

func newExec(env []string, outputCap int) *Exec {
	return &Exec{
		base: base{
			llm: tool.LLMTool{
				Name: "choir.exec",
				Description: "Run a shell command (bash -c) in the workspace root and return its exit code, " +
					"stdout and stderr. Long outputs keep their start and end.",
				Parameters: json.RawMessage(execParams),
			},
			rt: tool.Runtime{
				Timeout:    MaxExecTimeout + 5*time.Second, // the command's own timeout fires first
				Locks:      []tool.LockReq{{Key: "workspace", Mode: tool.Exclusive}},
				SideEffect: tool.SideEffectWrite,
				Version:    "1",
				Exposure:   tool.ExposeBoth,
			},
		},
		env: env,
		cap: outputCap,
	}
}

// Locks is always workspace X.
func (t *Exec) Locks(json.RawMessage) ([]tool.LockReq, error) {
	return []tool.LockReq{{Key: "workspace", Mode: tool.Exclusive}}, nil
}

type execInput struct {
	Command   string `json:"command"`
	TimeoutMS int64  `json:"timeout_ms"`
}

// Execute runs the command.
func (t *Exec) Execute(ctx context.Context, input json.RawMessage, env tool.Env) (tool.Result, error) {
	var in execInput
	if err := decode(input, &in); err != nil {
		return tool.Result{}, err
	}
	timeout := DefaultExecTimeout
	if in.TimeoutMS > 0 {
		timeout = min(time.Duration(in.TimeoutMS)*time.Millisecond, MaxExecTimeout)
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	bash, err := lookBash()
	if err != nil {
		return tool.Result{}, err
	}
	r, err := proc.Run(runCtx, proc.Spec{
		Path:      bash,
		Args:      []string{"-c", in.Command},
		Dir:       env.Workspace,
		Env:       t.env,
		StdoutCap: t.cap,
		StderrCap: t.cap,
	})
	if err != nil {
		return tool.Result{}, fmt.Errorf("start bash: %w", err)
	}
	fields := map[string]any{
		"stdout":           r.Stdout.Text,
		"stderr":           r.Stderr.Text,
		"stdout_truncated": r.Stdout.Truncated,
		"stderr_truncated": r.Stderr.Truncated,
	}
	if r.Stopped != nil {
		if ctx.Err() != nil {
			return tool.Result{}, ctx.Err() // cancelled from outside
		}
		e := tool.Errorf(tool.CodeTimeout, "the command did not finish within %v; its process group was killed", timeout)
		return tool.Result{Status: tool.StatusError, Summary: e.Message, Error: e, Fields: fields}, nil
	}
	fields["exit_code"] = r.ExitCode
	summary := fmt.Sprintf("exit status %d", r.ExitCode)
	if r.Signal != "" {
		fields["signal"] = r.Signal
		summary = "killed by signal " + r.Signal
	}
	if r.OOMKilled {
		fields["out_of_memory"] = true
		summary = "killed by the kernel: the container ran out of memory (the command used too much)"
	}
	return tool.Success(summary, fields), nil
}

func lookBash() (string, error) {
	p, err := exec.LookPath("bash")
	if err != nil {
		return "", tool.Errorf(tool.CodeInternal, "bash is not available in this image: %v", err)
	}
	return p, nil
}
