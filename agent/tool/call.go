package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Call is a validated call, ready to run once the arbiter holds Locks.
type Call struct {
	Tool  Tool
	Input json.RawMessage
	Locks []LockReq
}

// SecretFunc looks up one of the agent's secrets by name.
type SecretFunc func(name string) (value string, ok bool)

// Invocation is what the arbiter knows about one call.
type Invocation struct {
	Workspace string
	CallID    string
	// Secrets reaches all the agent's secrets; Run passes the tool only the
	// ones its SecretResources name. nil: no secrets are bound.
	Secrets SecretFunc
}

// Run executes the call under the tool's timeout and always returns a
// result: a Go error, a timeout, a cancellation or a panic in the tool
// becomes a structured error result. A granted secret that is not bound fails
// the call before the tool starts.
func (c *Call) Run(ctx context.Context, inv Invocation) (res Result) {
	rt := c.Tool.Runtime()
	env := Env{Workspace: inv.Workspace, CallID: inv.CallID}
	for _, name := range rt.SecretResources {
		var v string
		ok := false
		if inv.Secrets != nil {
			v, ok = inv.Secrets(name)
		}
		if !ok {
			return ErrorResult(Errorf(CodeSecretUnavailable,
				"%s needs the secret %q, which is not bound to this agent", c.Tool.Name(), name))
		}
		if env.Secrets == nil {
			env.Secrets = make(map[string]string, len(rt.SecretResources))
		}
		env.Secrets[name] = v
	}
	if rt.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, rt.Timeout)
		defer cancel()
	}
	defer func() {
		if p := recover(); p != nil {
			res = ErrorResult(Errorf(CodeInternal, "%s failed: panic: %v", c.Tool.Name(), p))
		}
	}()
	res, err := c.Tool.Execute(ctx, c.Input, env)
	if err != nil {
		var te *Error
		switch {
		case errors.As(err, &te):
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
			te = Errorf(CodeTimeout, "%s did not finish within %v and was stopped", c.Tool.Name(), rt.Timeout)
		case errors.Is(err, context.Canceled) || ctx.Err() != nil:
			te = Errorf(CodeCancelled, "%s was cancelled", c.Tool.Name())
		default:
			te = Errorf(CodeInternal, "%s failed: %v", c.Tool.Name(), err)
		}
		return ErrorResult(te)
	}
	switch res.Status {
	case "":
		res.Status = StatusSuccess
	case StatusError:
		if res.Error == nil {
			res.Error = Errorf(CodeToolError, "%s", res.Summary)
		}
	case StatusSuccess:
	default:
		return ErrorResult(fmt.Errorf("%s returned the status %q", c.Tool.Name(), res.Status))
	}
	return res
}
