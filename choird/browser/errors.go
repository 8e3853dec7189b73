package browser

import "fmt"

// Error codes choir.web.browse answers with (the tool result's error.code).
const (
	CodeInvalidInput = "invalid_input"
	CodeForbidden    = "forbidden"
	CodeUnavailable  = "unavailable" // no driver or Chromium, or it will not start
	CodeTimeout      = "timeout"     // the call's deadline passed
	CodeNavigation   = "navigation_failed"
	CodeAction       = "action_failed"
	CodeTooLarge     = "too_large"
	CodeCrashed      = "browser_crashed" // Chromium died during the call
	CodeNotFound     = "not_found"
	CodeFailed       = "browse_failed"
)

// Error is a refusal or failure of a browse call: a code for the tool
// result and a message saying what was wrong and what to do.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// ToolCode is the tool result's error code (choird's lifecycle reads it).
func (e *Error) ToolCode() string { return e.Code }

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
