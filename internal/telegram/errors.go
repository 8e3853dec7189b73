package telegram

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// APIError is a call the Bot API refused: the {"ok":false,...} answer, or an
// answer that was not the Bot API's JSON at all (NotJSON). Use errors.As, or
// the IsConflict, IsRateLimited and IsUnauthorized helpers.
type APIError struct {
	// Method is the Bot API method called ("sendMessage"), or "download".
	Method string
	// Code is the answer's error_code, or the HTTP status when the answer
	// carried none.
	Code int
	// Description is Telegram's text, e.g. "Bad Request: message is too
	// long", or what the client saw for an answer that was not JSON.
	Description string
	// RetryAfter is parameters.retry_after of a 429 (flood control): how long
	// this bot must wait before sending again. A proxy's Retry-After header
	// in seconds is used when the body has none.
	RetryAfter time.Duration
	// MigrateToChatID is parameters.migrate_to_chat_id: the group became a
	// supergroup with this id.
	MigrateToChatID int64
	// HTTPStatus is the HTTP status of the answer.
	HTTPStatus int
	// NotJSON reports an answer that was not the Bot API's JSON envelope
	// (a proxy's error page, a wrong api_base).
	NotJSON bool
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("telegram %s: error %d: %s", e.Method, e.Code, e.Description)
	if e.RetryAfter > 0 && !strings.Contains(e.Description, "retry after") {
		msg += fmt.Sprintf(" (retry after %v)", e.RetryAfter)
	}
	return msg
}

// IsConflict reports a 409: another process polls getUpdates with this
// token (or a webhook is set). Only one poller per token can run.
func IsConflict(err error) bool { return hasCode(err, http.StatusConflict) }

// IsRateLimited reports a 429 (flood control); RetryAfterOf says how long to
// pause.
func IsRateLimited(err error) bool { return hasCode(err, http.StatusTooManyRequests) }

// IsUnauthorized reports a 401: the token is wrong or was revoked. Retrying
// cannot help.
func IsUnauthorized(err error) bool { return hasCode(err, http.StatusUnauthorized) }

// RetryAfterOf returns the wait a 429 asked for, 0 for any other error.
func RetryAfterOf(err error) time.Duration {
	if e, ok := errors.AsType[*APIError](err); ok && e.Code == http.StatusTooManyRequests {
		return e.RetryAfter
	}
	return 0
}

func hasCode(err error, code int) bool {
	e, ok := errors.AsType[*APIError](err)
	return ok && e.Code == code
}

// ErrFileTooLarge is wrapped by Download's error when a file exceeds the
// size limit it was given.
var ErrFileTooLarge = errors.New("file too large")

// redactedToken replaces the token wherever a text would carry it.
const redactedToken = "<redacted>"

// redact removes the token from s.
func (c *Client) redact(s string) string {
	s = strings.ReplaceAll(s, c.token, redactedToken)
	if esc := url.PathEscape(c.token); esc != c.token {
		s = strings.ReplaceAll(s, esc, redactedToken)
	}
	return s
}

// transportError wraps an error from building or sending a request, or from
// reading its answer. http.Client returns a *url.Error whose text quotes the
// URL, token included: it is rebuilt with the token redacted, keeping
// errors.Is(err, context.DeadlineExceeded) and the like working.
func (c *Client) transportError(method string, err error) error {
	return fmt.Errorf("telegram %s: %w", method, c.redactErr(err))
}

func (c *Client) redactErr(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return &url.Error{Op: ue.Op, URL: c.redact(ue.URL), Err: c.redactErr(ue.Err)}
	}
	if err == nil || !strings.Contains(err.Error(), c.token) && !strings.Contains(err.Error(), url.PathEscape(c.token)) {
		return err
	}
	return &redactedError{msg: c.redact(err.Error()), cause: err}
}

// redactedError carries the text of an error that quoted the token, with the
// token removed. It does not unwrap (that would hand out the original text)
// but still answers errors.Is for its cause.
type redactedError struct {
	msg   string
	cause error
}

func (e *redactedError) Error() string        { return e.msg }
func (e *redactedError) Is(target error) bool { return errors.Is(e.cause, target) }
