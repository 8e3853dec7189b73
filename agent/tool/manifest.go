package tool

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"choir/internal/jsonlimit"
	"choir/internal/jsonschema"
)

// Manifest is an external tool's <name>.json file (design §8.3, §8.8):
//
//	{
//	  "llm": {"name": "acme.git.commit", "description": "...", "input_schema": {...}},
//	  "runtime": {"exec_path": "git_commit", "timeout_ms": 15000,
//	              "locks": [{"resource": "workspace", "mode": "X"}],
//	              "network": false, "secret_resources": ["git_identity"],
//	              "side_effect": "write", "idempotent": false, "version": "1.0",
//	              "exposure": "both", "prompt_mask": false}
//	}
//
// Required: llm.name, llm.description, llm.input_schema (an object schema in
// choir's subset, see internal/jsonschema) and runtime.side_effect, which has
// no safe default. Every other runtime member is optional; see the Default
// constants for what an absent one means.
//
// secret_resources names kinds of bound resources, never secrets.json names:
// llm, tts, git_identity, notion, email or search:<provider> (see
// SecretKinds). Any other entry fails the load. At each call the agent
// resolves every kind through the session's bindings and passes the tool
// those values on stdin, keyed by kind; a kind with nothing bound in the
// session fails the call with secret_unavailable.
type Manifest struct {
	LLM     ManifestLLM     `json:"llm"`
	Runtime ManifestRuntime `json:"runtime"`
}

// ManifestLLM is the manifest's LLM view.
type ManifestLLM struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// ManifestRuntime is the manifest's runtime view, as written (defaults are
// applied when the tool is built, not here).
type ManifestRuntime struct {
	// ExecPath is the executable; a relative path is taken from the
	// manifest's directory. Absent: the file beside the manifest with the
	// manifest's base name (foo.json -> foo).
	ExecPath        string    `json:"exec_path,omitempty"`
	TimeoutMS       *int64    `json:"timeout_ms,omitempty"`
	Locks           []LockReq `json:"locks,omitempty"`
	Network         bool      `json:"network,omitempty"`
	SecretResources []string  `json:"secret_resources,omitempty"`
	SideEffect      string    `json:"side_effect"`
	Idempotent      bool      `json:"idempotent,omitempty"`
	Version         string    `json:"version,omitempty"`
	Exposure        string    `json:"exposure,omitempty"`
	PromptMask      bool      `json:"prompt_mask,omitempty"`
}

// Defaults for absent manifest members. network, idempotent and prompt_mask
// default to false, locks and secret_resources to none. timeout_ms may not
// exceed MaxTimeout.
const (
	DefaultTimeout  = 30 * time.Second
	MaxTimeout      = 10 * time.Minute
	DefaultVersion  = "0"
	DefaultExposure = ExposeBoth
)

// ReservedPrefix begins the names of the skill engine's own tools
// (skill.ControlToolPrefix), which the lane handles: no registered tool may
// use it.
const ReservedPrefix = "choir.skill."

//go:embed manifest.schema.json
var manifestSchemaJSON []byte

var manifestSchema = jsonschema.MustCompile(string(manifestSchemaJSON))

// Fault is one thing wrong with a tool definition.
type Fault struct {
	File    string // the manifest file, or "built-in <name>"
	Path    string // JSON pointer inside File, when there is one
	Message string
}

// String renders the fault as "file: /path: message".
func (f Fault) String() string {
	parts := make([]string, 0, 3)
	if f.File != "" {
		parts = append(parts, f.File)
	}
	if f.Path != "" {
		parts = append(parts, f.Path)
	}
	return strings.Join(append(parts, f.Message), ": ")
}

// LoadError lists every fault found while loading tools, one per line.
type LoadError struct {
	Faults []Fault
}

func (e *LoadError) Error() string {
	lines := make([]string, len(e.Faults))
	for i, f := range e.Faults {
		lines[i] = f.String()
	}
	return strings.Join(lines, "\n")
}

// MaxManifestBytes is the largest manifest accepted; a manifest's objects
// and arrays may nest jsonlimit.DefaultMaxDepth levels, and its text must be
// valid UTF-8. Manifests are read and checked before they are decoded.
const MaxManifestBytes = 1 << 20

var manifestLimits = jsonlimit.Limits{MaxBytes: MaxManifestBytes, MaxDepth: jsonlimit.DefaultMaxDepth}

// ParseManifest decodes and checks one manifest: strict shape (unknown
// members refused with their JSON pointer), a canonical name, an input schema
// that compiles and takes an object, valid lock keys and secret resource
// kinds. It
// does not look for the executable. file names the source in faults; the
// error is a *LoadError listing every fault.
func ParseManifest(file string, data []byte) (*Manifest, error) {
	fail := func(p, format string, args ...any) error {
		return &LoadError{Faults: []Fault{{File: file, Path: p, Message: fmt.Sprintf(format, args...)}}}
	}
	if err := jsonlimit.Check(data, manifestLimits); err != nil {
		return nil, fail("", "%v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, fail("", "%s", jsonschema.DecodeProblem(data, err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fail("", "unexpected data after the manifest object")
	}
	if err := manifestSchema.ValidateValue(tree); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, fail("", "%v", err)
		}
		faults := make([]Fault, 0, len(ve.Failures)+1)
		for _, f := range ve.Failures {
			faults = append(faults, Fault{File: file, Path: f.Path, Message: f.Message})
		}
		if ve.Omitted > 0 {
			faults = append(faults, Fault{File: file, Message: fmt.Sprintf("and %d more faults", ve.Omitted)})
		}
		return nil, &LoadError{Faults: faults}
	}
	// The schema has refused unknown members with their pointers; the
	// strict decoder keeps the struct and the schema honest with each other.
	strict := json.NewDecoder(bytes.NewReader(data))
	strict.DisallowUnknownFields()
	var m Manifest
	if err := strict.Decode(&m); err != nil {
		return nil, fail("", "decode manifest: %v", err)
	}
	faults := m.check(file)
	if len(faults) > 0 {
		return nil, &LoadError{Faults: faults}
	}
	return &m, nil
}

// check finds the faults the schema cannot express.
func (m *Manifest) check(file string) []Fault {
	var faults []Fault
	add := func(p, format string, args ...any) {
		faults = append(faults, Fault{File: file, Path: p, Message: fmt.Sprintf(format, args...)})
	}
	if msg := NameProblem(m.LLM.Name); msg != "" {
		add("/llm/name", "%s", msg)
	}
	if _, fs := compileParams(m.LLM.InputSchema); len(fs) > 0 {
		for _, f := range fs {
			add(joinPointer("/llm/input_schema", f.Path), "%s", f.Message)
		}
	}
	for i, l := range m.Runtime.Locks {
		if msg := lockKeyProblem(l.Key); msg != "" {
			add(fmt.Sprintf("/runtime/locks/%d/resource", i), "%s", msg)
		}
	}
	seen := make(map[string]bool)
	for i, s := range m.Runtime.SecretResources {
		p := fmt.Sprintf("/runtime/secret_resources/%d", i)
		if msg := secretKindProblem(s); msg != "" {
			add(p, "%s", msg)
		} else if seen[s] {
			add(p, "secret resource %q is listed twice", s)
		}
		seen[s] = true
	}
	return faults
}

// NameProblem says what is wrong with a tool name, or "": the one rule for
// built-ins, manifests, proposed tools and choird's build.
func NameProblem(name string) string {
	switch {
	case !ValidName(name):
		return fmt.Sprintf("%q is not a canonical tool name: want dot-separated lowercase segments "+
			"of letters, digits and _, each starting with a letter, at least two segments "+
			"(e.g. \"acme.git.commit\"), at most %d characters", name, MaxNameLen)
	case strings.HasPrefix(name, ReservedPrefix):
		return fmt.Sprintf("%q uses the prefix %q, reserved for the skill engine's tools", name, ReservedPrefix)
	}
	return ""
}

// compileParams compiles a tool's parameter schema, which must describe an
// object (model APIs pass arguments as one object). Failure paths are
// pointers inside the schema.
func compileParams(raw json.RawMessage) (*jsonschema.Schema, []jsonschema.Failure) {
	s, err := jsonschema.Compile(raw)
	if err != nil {
		var se *jsonschema.SchemaError
		if errors.As(err, &se) {
			return nil, se.Failures
		}
		return nil, []jsonschema.Failure{{Path: "/", Message: err.Error()}}
	}
	var top struct {
		Type any `json:"type"`
	}
	if json.Unmarshal(raw, &top) != nil || top.Type != "object" {
		return nil, []jsonschema.Failure{{Path: "/type", Message: `the parameters schema must have "type": "object"`}}
	}
	return s, nil
}

// joinPointer appends a pointer inside a sub-document ("/" is its root) to
// the pointer of that sub-document.
func joinPointer(base, inner string) string {
	if inner == "/" || inner == "" {
		return base
	}
	return base + inner
}

// lockKeyProblem checks a lock key against agent/lock's grammar: workspace,
// browser_tab, choirtmp, file:<relative path> and the reserved mem:, repo:,
// net:, ext: namespaces followed by a name.
func lockKeyProblem(key string) string {
	switch key {
	case "workspace", "browser_tab", "choirtmp":
		return ""
	}
	ns, arg, ok := strings.Cut(key, ":")
	switch {
	case ok && ns == "file":
		p, msg := lexicalClean(arg)
		if msg != "" {
			return fmt.Sprintf("lock key %q: %s", key, msg)
		}
		if p == "." {
			return fmt.Sprintf("lock key %q names the workspace root; use \"workspace\"", key)
		}
		return ""
	case ok && (ns == "mem" || ns == "repo" || ns == "net" || ns == "ext"):
		if arg == "" || strings.ContainsFunc(arg, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			return fmt.Sprintf("lock key %q: want a name without spaces after %q", key, ns+":")
		}
		return ""
	}
	return fmt.Sprintf("unknown lock key %q: want workspace, browser_tab, choirtmp, "+
		"or file:, mem:, repo:, net:, ext: followed by a name", key)
}

// lexicalClean cleans a workspace-relative path without touching the disk,
// or says why it cannot be one: empty, NUL, absolute, ~, or leaving the
// workspace. "." (the root) is allowed.
func lexicalClean(rel string) (string, string) {
	switch {
	case rel == "":
		return "", "empty path; give a path relative to the workspace root"
	case strings.IndexByte(rel, 0) >= 0:
		return "", "the path contains a NUL byte"
	case path.IsAbs(rel):
		return "", "absolute path; give it relative to the workspace root"
	case rel == "~" || strings.HasPrefix(rel, "~/"):
		return "", "~ is not expanded; give the path relative to the workspace root"
	}
	p := path.Clean(rel)
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", "the path leaves the workspace"
	}
	return p, ""
}

// runtime applies the defaults and returns the tool's Runtime.
func (m *Manifest) runtime(execPath string) Runtime {
	rt := Runtime{
		ExecPath:        execPath,
		Timeout:         DefaultTimeout,
		Locks:           append([]LockReq(nil), m.Runtime.Locks...),
		Network:         m.Runtime.Network,
		SecretResources: append([]string(nil), m.Runtime.SecretResources...),
		SideEffect:      SideEffect(m.Runtime.SideEffect),
		Idempotent:      m.Runtime.Idempotent,
		Version:         m.Runtime.Version,
		Exposure:        Exposure(m.Runtime.Exposure),
		PromptMask:      m.Runtime.PromptMask,
	}
	if m.Runtime.TimeoutMS != nil {
		rt.Timeout = time.Duration(*m.Runtime.TimeoutMS) * time.Millisecond
	}
	if rt.Version == "" {
		rt.Version = DefaultVersion
	}
	if rt.Exposure == "" {
		rt.Exposure = DefaultExposure
	}
	for i, l := range rt.Locks {
		if p, ok := strings.CutPrefix(l.Key, "file:"); ok {
			c, _ := lexicalClean(p)
			rt.Locks[i].Key = "file:" + c
		}
	}
	return rt
}

// canonical is the manifest's canonical form for hashing: compact JSON with
// members in sorted order and numbers as written.
func canonical(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	return json.Marshal(tree)
}
