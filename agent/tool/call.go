package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Call is a validated call, ready to run once the arbiter holds Locks.
type Call struct {
	Tool  Tool
	Input json.RawMessage
	Locks []LockReq
}

// SecretFunc resolves a resource kind of secret_resources (SecretLLM,
// SecretNotion, search:<provider>, ...) through the session's bindings to the
// value of the secret bound to it now. The error says why there is none: no
// resource of that kind is bound in this session, or choird did not grant
// its secret.
type SecretFunc func(resource string) (value string, err error)

// Invocation is what the arbiter knows about one call.
type Invocation struct {
	Workspace string
	CallID    string
	// Secrets resolves the kinds a tool's SecretResources name; Run asks it
	// for those and no others. nil: nothing is bound.
	Secrets SecretFunc
}

type timeoutCapKey struct{}

// WithTimeoutCap returns a context under which no call runs longer than d,
// whatever its tool's own timeout (the session's tool_call_timeout_ms: the
// lane proposes every call under it, and the arbiter runs the call with
// the proposal's context). d <= 0 leaves the tools' timeouts alone.
func WithTimeoutCap(ctx context.Context, d time.Duration) context.Context {
	if d <= 0 {
		return ctx
	}
	return context.WithValue(ctx, timeoutCapKey{}, d)
}

// timeout is the call's limit: the tool's, capped by ctx's WithTimeoutCap.
func timeout(ctx context.Context, own time.Duration) time.Duration {
	if limit, ok := ctx.Value(timeoutCapKey{}).(time.Duration); ok && (own <= 0 || limit < own) {
		return limit
	}
	return own
}

// Run executes the call under the tool's timeout (at most ctx's
// WithTimeoutCap) and always returns a
// result: a Go error, a timeout, a cancellation or a panic in the tool
// becomes a structured error result. A secret resource the tool names that
// cannot be resolved fails the call with secret_unavailable before the tool
// starts. A tool that names none (choir.exec, every built-in) gets no
// secrets at all: Env.Secrets is nil.
func (c *Call) Run(ctx context.Context, inv Invocation) (res Result) {
	rt := c.Tool.Runtime()
	env := Env{Workspace: inv.Workspace, CallID: inv.CallID}
	for _, kind := range rt.SecretResources {
		err := errors.New("nothing is bound in this session")
		var v string
		if inv.Secrets != nil {
			v, err = inv.Secrets(kind)
		}
		if err != nil {
			return ErrorResult(Errorf(CodeSecretUnavailable,
				"%s needs the secret of the %s resource, which this session cannot give: %v", c.Tool.Name(), kind, err))
		}
		if env.Secrets == nil {
			env.Secrets = make(map[string]string, len(rt.SecretResources))
		}
		env.Secrets[kind] = v
	}
	limit := timeout(ctx, rt.Timeout)
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
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
			te = Errorf(CodeTimeout, "%s did not finish within %v and was stopped", c.Tool.Name(), limit)
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
