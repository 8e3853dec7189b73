// Package webapi turns the failure of a web API client (internal/brave,
// internal/notion, internal/elevenlabs) into the error result a model can
// act on: what failed, whether to wait and for how long, whether to fix
// the input, or that only the operator can fix it.
package webapi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"choir/agent/tool"
)

// Error codes of the web API tools, beside tool's own (invalid_input,
// timeout, too_large). A model reads them; keep them stable.
const (
	// CodeAuth: the service refused the credential; only the operator can
	// fix it (the secret bound in config.json). Retrying will not help.
	CodeAuth = "auth_failed"
	// CodeRateLimited: too many calls; retry_after_s says how long to wait.
	CodeRateLimited = "rate_limited"
	// CodeQuota: the account's quota is spent; retrying will not help.
	CodeQuota = "quota_exceeded"
	// CodeNotFound: the object does not exist or is not shared.
	CodeNotFound = "not_found"
	// CodeRefused: the service refused the request as invalid.
	CodeRefused = "request_refused"
	// CodeUpstream: the service failed (5xx); try again later.
	CodeUpstream = "upstream_error"
	// CodeUnreachable: no answer came (connection refused, DNS).
	CodeUnreachable = "unreachable"
	// CodeBadAnswer: the answer was not what the API promises.
	CodeBadAnswer = "bad_answer"
)

// Failure is what a client's *APIError says, in the terms of this package.
type Failure struct {
	Status     int
	Code       string // the service's own code
	Message    string // the client's whole error text
	RetryAfter time.Duration
	Err        error // the cause
	// TooLarge is set when the answer passed the client's size cap.
	TooLarge bool
	// Auth, Quota and NotFound are the client's own classification.
	Auth, Quota, NotFound bool
}

// Result is the error result of a failed call of service ("Brave
// Search"); fix says what the operator must do when the credential is
// refused.
func Result(service, fix string, f Failure) tool.Result {
	code, advice := tool.CodeInternal, ""
	var fields map[string]any
	switch {
	case f.TooLarge:
		code, advice = tool.CodeTooLarge, "ask for less (a smaller page size or count)"
	case errors.Is(f.Err, context.DeadlineExceeded):
		code, advice = tool.CodeTimeout, "the service is slow; try again later or ask for less"
	case errors.Is(f.Err, context.Canceled):
		code = tool.CodeCancelled
	case f.Status == 0 && f.Err == nil:
		code, advice = tool.CodeInvalidInput, "fix the input"
	case f.Status == 0:
		code, advice = CodeUnreachable, "the service cannot be reached from the agent; tell the user"
	case f.Quota:
		code, advice = CodeQuota, "the account's quota is spent; tell the user, retrying will not help"
	case f.Auth:
		code, advice = CodeAuth, "the operator must fix it: "+fix+"; retrying will not help, tell the user"
	case f.Status == http.StatusTooManyRequests:
		code = CodeRateLimited
		wait := max(int(math.Ceil(f.RetryAfter.Seconds())), 1)
		fields = map[string]any{"retry_after_s": wait}
		advice = fmt.Sprintf("wait %d s before calling %s again", wait, service)
	case f.NotFound:
		code, advice = CodeNotFound, "check the id or query"
	case f.Status/100 == 5:
		code, advice = CodeUpstream, "the service failed; try again in a while"
	case f.Status/100 == 4:
		code, advice = CodeRefused, "fix the request"
	case f.Status/100 == 2:
		code, advice = CodeBadAnswer, "the service answered something unexpected; try again later"
	}
	msg := service + " failed: " + f.Message
	if advice != "" {
		msg += " (" + advice + ")"
	}
	return tool.Result{Status: tool.StatusError, Summary: msg, Error: &tool.Error{Code: code, Message: msg}, Fields: fields}
}
