package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// HostFunc runs a host tool in choird (EXECUTE_HOST_TOOL) and returns the
// tool's output: one result object as ParseResult reads it. An error means
// choird could not run the tool at all.
type HostFunc func(ctx context.Context, name, callID string, input json.RawMessage) (json.RawMessage, error)

// HostDef describes a host tool: its LLM view and its runtime metadata.
// Runtime.Locks is its static lockset (choir.web.browse: browser_tab X);
// Runtime.Host is set by NewHostTool.
type HostDef struct {
	LLM     LLMTool
	Runtime Runtime
}

// HostTool is a built-in whose Execute delegates to choird through an
// injected HostFunc: the arbiter wires it to the EXECUTE_HOST_TOOL verb.
// Later issues register e.g. choir.web.browse or choir.memory.query with
// their schema and locks this way.
type HostTool struct {
	def  HostDef
	call HostFunc
}

var _ Tool = (*HostTool)(nil)

// NewHostTool returns the host tool def, executed by call. The registry
// checks the definition when it loads.
func NewHostTool(def HostDef, call HostFunc) (*HostTool, error) {
	if call == nil {
		return nil, fmt.Errorf("host tool %q: no HostFunc", def.LLM.Name)
	}
	def.Runtime.Host = true
	def.Runtime.Locks = append([]LockReq(nil), def.Runtime.Locks...)
	return &HostTool{def: def, call: call}, nil
}

func (t *HostTool) Name() string     { return t.def.LLM.Name }
func (t *HostTool) LLM() LLMTool     { return t.def.LLM }
func (t *HostTool) Runtime() Runtime { return t.def.Runtime.clone() }

// Locks returns the static lockset.
func (t *HostTool) Locks(json.RawMessage) ([]LockReq, error) {
	return append([]LockReq(nil), t.def.Runtime.Locks...), nil
}

// Execute asks choird to run the tool. Host tools get no secrets here:
// choird holds its own.
func (t *HostTool) Execute(ctx context.Context, input json.RawMessage, env Env) (Result, error) {
	out, err := t.call(ctx, t.def.LLM.Name, env.CallID, input)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		var te *Error
		if errors.As(err, &te) {
			return Result{}, te
		}
		return Result{}, Errorf(CodeHost, "choird could not run %s: %v", t.def.LLM.Name, err)
	}
	res, err := ParseResult(out)
	if err != nil {
		return Result{}, Errorf(CodeBadOutput, "%s answered something other than one result object: %v", t.def.LLM.Name, err)
	}
	if res.Summary == "" {
		res.Summary = t.def.LLM.Name + " finished"
	}
	return res, nil
}
