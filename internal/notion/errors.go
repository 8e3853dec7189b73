package notion

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"choir/internal/httpapi"
)

// ErrTooLarge is the cause of an *APIError whose answer passed the size cap.
var ErrTooLarge = httpapi.ErrTooLarge

// APIError is every failure of a call. It never holds the token.
type APIError struct {
	// Endpoint is the method, host and path called ("POST host/path").
	Endpoint string
	// Status is the HTTP status; 0 when no answer arrived.
	Status int
	// Code is Notion's error code (object_not_found, unauthorized,
	// rate_limited, ...); "" when the answer had none.
	Code string
	// Message is Notion's message, or what the client saw.
	Message string
	// RetryAfter is the answer's Retry-After; 0 when absent.
	RetryAfter time.Duration
	// Err is the underlying cause, if any.
	Err error
}

func (e *APIError) Error() string {
	return httpapi.Describe("notion", e.Endpoint, e.Status, e.Code, e.Message, e.RetryAfter, e.hint())
}

func (e *APIError) Unwrap() error { return e.Err }

// Auth reports whether the token was refused.
func (e *APIError) Auth() bool {
	return e.Code == "unauthorized" || e.Status == http.StatusUnauthorized
}

// NotFound reports whether the object does not exist or is not shared
// with the integration (Notion does not tell the two apart).
func (e *APIError) NotFound() bool {
	return e.Code == "object_not_found" || e.Status == http.StatusNotFound
}

func (e *APIError) hint() string {
	switch {
	case e.Auth():
		return "check the integration token (the secret of the Notion integration)"
	case e.NotFound() || e.Code == "restricted_resource":
		return "check the id, and that the page or database is shared with the integration (Connections in Notion)"
	case e.Status == 0 && e.Err != nil && !errors.Is(e.Err, ErrTooLarge):
		return "check that the endpoint is reachable from here"
	}
	return ""
}

// parseError reads Notion's error object; anything else becomes a message
// quoting the start of the body.
func parseError(status int, body []byte) *APIError {
	var w struct {
		Object  string `json:"object"`
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	e := &APIError{Status: status}
	if json.Unmarshal(body, &w) == nil && w.Object == "error" {
		e.Code, e.Message = w.Code, w.Message
		if e.Message == "" {
			e.Message = http.StatusText(status)
		}
		return e
	}
	e.Message = http.StatusText(status) + " (not a Notion error object: " + httpapi.Snippet(body) + ")"
	return e
}
