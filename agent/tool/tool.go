package tool

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"time"
)

// Tool is what built-in and external tools share (design §8.8). Name, LLM and
// Runtime describe the tool and never change; Locks and Execute are called per
// call, after the registry has validated the input against the tool's schema.
type Tool interface {
	// Name is the canonical namespaced name, e.g. "choir.fs.read".
	Name() string
	// LLM is the only part of the tool a model API ever sees.
	LLM() LLMTool
	// Runtime is the internal metadata: timeouts, locks, secrets, policy.
	Runtime() Runtime
	// Locks is the lockset the arbiter must hold while Execute runs. It may
	// depend on the input (a file tool locks file:<path>); a refused input
	// is returned as an *Error.
	Locks(input json.RawMessage) ([]LockReq, error)
	// Execute runs one call. ctx carries the call's deadline. A failure the
	// model should see is returned as an *Error (or as a Result whose
	// Status is StatusError when the tool has fields to report with it); any
	// other error is turned into an "internal" error result by Call.Run.
	Execute(ctx context.Context, input json.RawMessage, env Env) (Result, error)
}

// LLMTool is the LLM view of a tool (design §8.3): its name, description and
// the JSON Schema of its parameters. It carries no runtime metadata. It has
// the same fields as skill.ToolDef, so a lane can convert one to the other.
type LLMTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Runtime is the runtime view of a tool (design §8.3), never shown to a model.
type Runtime struct {
	// ExecPath is the executable of an external tool; empty for built-ins.
	ExecPath string
	// Timeout bounds one call; Call.Run applies it.
	Timeout time.Duration
	// Locks is the static lockset (external tools). Built-ins whose locks
	// depend on the input leave it empty and compute them in Tool.Locks.
	Locks []LockReq
	// Network says the tool talks to the network. v1 records it for policy
	// and audit; nothing here enforces it.
	Network bool
	// SecretResources names the kinds of bound resources whose secrets the
	// tool may read (SecretLLM, SecretGitIdentity, search:<provider>, ...);
	// Call.Run resolves each through the session's bindings and passes the
	// tool those values and no others.
	SecretResources []string
	SideEffect      SideEffect
	Idempotent      bool
	Version         string
	Exposure        Exposure
	// PromptMask asks the lane to keep the tool's full output out of later
	// prompts: the model sees the summary and artifact_ref instead.
	PromptMask bool
	// Host marks a tool that choird executes (EXECUTE_HOST_TOOL).
	Host bool
}

// clone copies the slices, so a caller cannot change a tool's metadata.
func (rt Runtime) clone() Runtime {
	rt.Locks = append([]LockReq(nil), rt.Locks...)
	rt.SecretResources = append([]string(nil), rt.SecretResources...)
	return rt
}

// LockReq is one lock a tool needs. Key is a lock key in agent/lock's syntax
// (workspace, file:<clean relative path>, browser_tab, choirtmp, ...), Mode
// is "S" or "X". The arbiter translates it into the lock manager's types.
type LockReq struct {
	Key  string `json:"resource"`
	Mode string `json:"mode"`
}

// Lock modes.
const (
	Shared    = "S"
	Exclusive = "X"
)

// SideEffect classifies what a tool changes (design §8.4).
type SideEffect string

const (
	SideEffectRead     SideEffect = "read"
	SideEffectWrite    SideEffect = "write"
	SideEffectExternal SideEffect = "external"
)

func (s SideEffect) valid() bool {
	return s == SideEffectRead || s == SideEffectWrite || s == SideEffectExternal
}

// Exposure says which lanes are offered a tool and may see its output (design
// §8.5): the edge lane, core lanes, both, or none (a tool the runtime calls
// itself, never offered to a model).
type Exposure string

const (
	ExposeEdge Exposure = "edge"
	ExposeCore Exposure = "core"
	ExposeBoth Exposure = "both"
	ExposeNone Exposure = "none"
)

func (e Exposure) valid() bool {
	return e == ExposeEdge || e == ExposeCore || e == ExposeBoth || e == ExposeNone
}

// Lane is a kind of LLM lane.
type Lane string

const (
	Edge Lane = "edge"
	Core Lane = "core"
)

// Offers reports whether a tool with exposure e is offered to lane.
func (e Exposure) Offers(lane Lane) bool {
	switch e {
	case ExposeBoth:
		return lane == Edge || lane == Core
	case ExposeEdge:
		return lane == Edge
	case ExposeCore:
		return lane == Core
	}
	return false
}

// Env is what one call runs with.
type Env struct {
	// Workspace is the absolute path of the workspace root; file tools
	// confine every path to it and processes run in it.
	Workspace string
	// CallID identifies the call (for deduplication and host dispatch).
	CallID string
	// Secrets holds the granted secrets only: each resource kind of the
	// tool's SecretResources with the value of the secret bound to it. nil
	// when the tool names none.
	Secrets map[string]string
}

// MaxNameLen bounds a tool name: model APIs accept function names of at most
// 64 characters.
const MaxNameLen = 64

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$`)

// ValidName reports whether name is a canonical tool name: at least two
// dot-separated segments of lowercase letters, digits and underscores, each
// starting with a letter, at most MaxNameLen bytes.
func ValidName(name string) bool {
	return len(name) <= MaxNameLen && nameRE.MatchString(name)
}

// WireName is the name a model API sees for a canonical name: dots become
// underscores ("choir.fs.read" -> "choir_fs_read"), since model APIs accept
// only ^[a-zA-Z0-9_-]{1,64}$. The registry refuses two tools with the same
// wire name, so Registry.LookupWire inverts it.
func WireName(name string) string { return strings.ReplaceAll(name, ".", "_") }
