package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"choir/internal/jsonschema"
)

// Registry is the immutable set of tools an agent can call, built once by
// Load. It is safe for concurrent use.
type Registry struct {
	entries map[string]*entry
	wire    map[string]string // wire name -> canonical name
	names   []string
	hash    string
}

type entry struct {
	name     string
	tool     Tool
	schema   *jsonschema.Schema
	source   string // "built-in <name>" or the manifest file
	manifest []byte // canonical manifest of an external tool, nil for built-ins
}

// Lookup returns the tool called name.
func (r *Registry) Lookup(name string) (Tool, bool) {
	e, ok := r.entries[name]
	if !ok {
		return nil, false
	}
	return e.tool, true
}

// Has reports whether a tool called name is registered; skill.LoadDir takes
// it to check allowed_tools.
func (r *Registry) Has(name string) bool {
	_, ok := r.entries[name]
	return ok
}

// Names returns every tool name in sorted order.
func (r *Registry) Names() []string { return append([]string(nil), r.names...) }

// LookupWire returns the canonical name of the tool whose WireName is wire.
func (r *Registry) LookupWire(wire string) (string, bool) {
	name, ok := r.wire[wire]
	return name, ok
}

// ManifestHash is the hex SHA-256 over the canonical form (compact JSON,
// sorted members) of each external tool's manifest in effect, in name order,
// each followed by a newline: version.json's tool_manifest_hash. It changes
// when a manifest's content changes, not when its formatting does; built-ins
// are versioned with the image.
func (r *Registry) ManifestHash() string { return r.hash }

// Filter selects tools for LLMTools.
type Filter func(Tool) bool

// ForLane keeps the tools whose exposure offers them to lane.
func ForLane(lane Lane) Filter {
	return func(t Tool) bool { return t.Runtime().Exposure.Offers(lane) }
}

// Among keeps the tools named in names (a skill state's allowed_tools).
func Among(names []string) Filter {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return func(t Tool) bool { return set[t.Name()] }
}

// All keeps the tools every filter keeps.
func All(filters ...Filter) Filter {
	return func(t Tool) bool {
		for _, f := range filters {
			if f != nil && !f(t) {
				return false
			}
		}
		return true
	}
}

// LLMTools returns the LLM views (name, description, parameters) of the
// tools keep selects (nil keeps all), in name order. Tools with exposure
// "none" are never included. Nothing of the runtime view is in the result.
func (r *Registry) LLMTools(keep Filter) []LLMTool {
	var out []LLMTool
	for _, name := range r.names {
		t := r.entries[name].tool
		if t.Runtime().Exposure == ExposeNone || (keep != nil && !keep(t)) {
			continue
		}
		v := t.LLM()
		v.Parameters = bytes.Clone(v.Parameters)
		out = append(out, v)
	}
	return out
}

// Validate checks input against the schema of the tool called name. The
// error is an *Error: unknown_tool, or invalid_input listing every failing
// JSON pointer. An empty input counts as {} (models send "" for tools
// without arguments).
func (r *Registry) Validate(name string, input json.RawMessage) error {
	_, _, err := r.validate(name, input)
	return err
}

func (r *Registry) validate(name string, input json.RawMessage) (*entry, json.RawMessage, error) {
	e, ok := r.entries[name]
	if !ok {
		return nil, nil, Errorf(CodeUnknownTool, "there is no tool called %q", name)
	}
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage("{}")
	}
	if err := e.schema.Validate(input); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, nil, Errorf(CodeInvalidInput, "the arguments of %s are not one JSON object: %v", name, err)
		}
		te := &Error{Code: CodeInvalidInput, Message: fmt.Sprintf("the arguments of %s do not match its parameters: %v", name, ve)}
		for _, f := range ve.Failures {
			te.Failures = append(te.Failures, FieldFailure{Path: f.Path, Message: f.Message})
		}
		return nil, nil, te
	}
	return e, input, nil
}

// Prepare is the first half of a call (design §8.9): it finds the tool,
// validates input against its schema and computes the locks. The arbiter then
// acquires Call.Locks, runs Call.Run and releases them. The error is an
// *Error; ErrorResult turns it into the result the model sees.
func (r *Registry) Prepare(name string, input json.RawMessage) (*Call, error) {
	e, input, err := r.validate(name, input)
	if err != nil {
		return nil, err
	}
	locks, err := e.tool.Locks(input)
	if err != nil {
		var te *Error
		if !errors.As(err, &te) {
			te = Errorf(CodeInvalidInput, "%s: %v", name, err)
		}
		return nil, te
	}
	return &Call{Tool: e.tool, Input: input, Locks: locks}, nil
}
