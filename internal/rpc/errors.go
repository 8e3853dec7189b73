package rpc

import (
	"fmt"
	"net/http"
	"time"
)

// Error codes carried in {"error":{"code":...}}.
const (
	CodeBadRequest         = "bad_request"
	CodeUnauthorized       = "unauthorized"
	CodeForbidden          = "forbidden"
	CodeUnknownVerb        = "unknown_verb"
	CodeMethod             = "method_not_allowed"
	CodeTooLarge           = "payload_too_large"
	CodeRateLimited        = "rate_limited"
	CodeConflict           = "conflict"
	CodeInternal           = "internal"
	CodeUnavailable        = "unavailable"
	CodeNotFound           = "not_found"
	CodeFailedPrecondition = "failed_precondition"
	// CodeReplicationRefused is a HEARTBEAT whose events do not follow the
	// session's stored log (a gap, or a chain that does not verify): 409,
	// with Error.Head saying where the stored log ends.
	CodeReplicationRefused = "replication_refused"
)

// Error is an RPC failure as the wire carries it. Handlers return it to
// choose the status; clients return it for every non-200 answer.
type Error struct {
	Status     int           `json:"-"`
	Code       string        `json:"code"`
	Message    string        `json:"message"`
	RetryAfter time.Duration `json:"-"` // from Retry-After on 429
	// Head is set on replication_refused: the agent resends from
	// Head.Rev+1.
	Head *ChainHead `json:"head,omitempty"`
}

func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("rpc: %s (HTTP %d)", e.Code, e.Status)
	}
	return fmt.Sprintf("rpc: %s: %s", e.Code, e.Message)
}

// Errorf builds an *Error for a handler to return.
func Errorf(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Forbidden is the error for an authenticated caller asking for something
// its session may not have.
func Forbidden(format string, args ...any) *Error {
	return Errorf(http.StatusForbidden, CodeForbidden, format, args...)
}

type errorBody struct {
	Error *Error `json:"error"`
}
