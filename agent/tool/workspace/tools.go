package workspace

import (
	"encoding/json"
	"os/exec"
	"slices"

	"choir/agent/sandbox"
	"choir/agent/tool"
)

// Options configure the workspace tools. The zero value is the production
// setting.
type Options struct {
	// ExecEnv is the whole environment of choir.exec commands; nil is
	// sandbox.Env(), an allowlist: never choir-agent's own environment.
	ExecEnv []string
	// ExecOutputCap bounds what choir.exec keeps of stdout and of stderr;
	// default DefaultExecOutputCap.
	ExecOutputCap int
	// ReadCap bounds the content choir.fs.read returns; default
	// DefaultReadCap.
	ReadCap int
	// Ripgrep is the rg executable for choir.fs.search; "" looks "rg" up on
	// PATH once, and NoRipgrep forces the built-in walker.
	Ripgrep   string
	NoRipgrep bool
}

// Defaults of Options.
const (
	DefaultExecOutputCap = 64 << 10
	DefaultReadCap       = 256 << 10
)

// Tools returns choir.exec, choir.fs.read, choir.fs.write and
// choir.fs.search, ready for tool.Load.
func Tools(opts Options) []tool.Tool {
	if opts.ExecOutputCap <= 0 {
		opts.ExecOutputCap = DefaultExecOutputCap
	}
	if opts.ReadCap <= 0 {
		opts.ReadCap = DefaultReadCap
	}
	if opts.ExecEnv == nil {
		opts.ExecEnv = sandbox.Env()
	}
	rg := opts.Ripgrep
	if opts.NoRipgrep {
		rg = ""
	} else if rg == "" {
		rg, _ = exec.LookPath("rg") // not found: the built-in walker
	}
	return []tool.Tool{
		newExec(opts.ExecEnv, opts.ExecOutputCap),
		newRead(opts.ReadCap),
		newWrite(),
		newSearch(rg),
	}
}

// base carries a built-in's two views.
type base struct {
	llm tool.LLMTool
	rt  tool.Runtime
}

func (b *base) Name() string      { return b.llm.Name }
func (b *base) LLM() tool.LLMTool { return b.llm }
func (b *base) Runtime() tool.Runtime {
	rt := b.rt
	rt.Locks = slices.Clone(rt.Locks)
	return rt
}

// decode reads an input the registry has validated into v.
func decode(input json.RawMessage, v any) error {
	if err := json.Unmarshal(input, v); err != nil {
		return tool.Errorf(tool.CodeInvalidInput, "%v", err)
	}
	return nil
}

// fileLocks is Locks for a tool taking a "path" argument.
func fileLocks(input json.RawMessage, mode string) ([]tool.LockReq, error) {
	var in struct {
		Path string `json:"path"`
	}
	if err := decode(input, &in); err != nil {
		return nil, err
	}
	if in.Path == "" {
		in.Path = "."
	}
	clean, err := Clean(in.Path)
	if err != nil {
		return nil, err
	}
	return []tool.LockReq{lockKey(clean, mode)}, nil
}

// isBinary reports whether a file's first bytes hold a NUL, the heuristic
// git and ripgrep use.
func isBinary(head []byte) bool {
	for _, c := range head {
		if c == 0 {
			return true
		}
	}
	return false
}

// sniffLen is how much of a file isBinary looks at.
const sniffLen = 8 << 10
