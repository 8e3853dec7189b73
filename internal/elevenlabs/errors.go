package elevenlabs

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"choir/internal/httpapi"
)

// ErrTooLarge is the cause of an *APIError whose answer passed the size cap.
var ErrTooLarge = httpapi.ErrTooLarge

// APIError is every failure of a call. It never holds the key.
type APIError struct {
	// Endpoint is the method, host and path called ("POST host/path").
	Endpoint string
	// Status is the HTTP status; 0 when no answer arrived.
	Status int
	// Code is ElevenLabs' detail.status or detail.code (invalid_api_key,
	// voice_not_found, quota_exceeded, ...), or the first validation
	// error's type; "" when the answer had none.
	Code string
	// Message is ElevenLabs' message, or what the client saw.
	Message string
	// RetryAfter is the answer's Retry-After; 0 when absent.
	RetryAfter time.Duration
	// Err is the underlying cause, if any.
	Err error
}

func (e *APIError) Error() string {
	return httpapi.Describe("elevenlabs", e.Endpoint, e.Status, e.Code, e.Message, e.RetryAfter, e.hint())
}

func (e *APIError) Unwrap() error { return e.Err }

// Auth reports whether the key was refused.
func (e *APIError) Auth() bool {
	return e.Code == "invalid_api_key" || e.Code == "missing_api_key" ||
		(e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden) && !e.Quota()
}

// Quota reports whether the account's character quota is spent.
func (e *APIError) Quota() bool { return e.Code == "quota_exceeded" }

func (e *APIError) hint() string {
	switch {
	case e.Quota():
		return "the ElevenLabs account's character quota is spent"
	case e.Auth():
		return "check the API key (the secret of the voice profile's TTS provider)"
	case e.Code == "voice_not_found":
		return "check voice_id of the voice profile"
	case e.Status == 0 && e.Err != nil && !errors.Is(e.Err, ErrTooLarge):
		return "check that the endpoint is reachable from here"
	}
	return ""
}

// parseError reads {"detail":{...}}, {"detail":[...]} or {"detail":"..."};
// anything else becomes a message quoting the start of the body.
func parseError(status int, body []byte) *APIError {
	e := &APIError{Status: status}
	var top struct {
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &top) == nil && len(top.Detail) > 0 {
		var obj struct {
			Status  string `json:"status"`
			Code    string `json:"code"`
			Type    string `json:"type"`
			Message string `json:"message"`
		}
		var list []struct {
			Loc  []any  `json:"loc"`
			Msg  string `json:"msg"`
			Type string `json:"type"`
		}
		var text string
		switch {
		case json.Unmarshal(top.Detail, &obj) == nil && (obj.Message != "" || obj.Status != "" || obj.Code != ""):
			e.Code, e.Message = obj.Status, obj.Message
			if e.Code == "" {
				e.Code = obj.Code
			}
			if e.Message == "" {
				e.Message = http.StatusText(status)
			}
			return e
		case json.Unmarshal(top.Detail, &list) == nil && len(list) > 0:
			var msgs []string
			for _, v := range list {
				var loc []string
				for _, l := range v.Loc {
					loc = append(loc, fmt.Sprint(l))
				}
				msgs = append(msgs, strings.Join(loc, ".")+": "+v.Msg)
			}
			e.Code, e.Message = list[0].Type, strings.Join(msgs, "; ")
			return e
		case json.Unmarshal(top.Detail, &text) == nil && text != "":
			e.Message = text
			return e
		}
	}
	e.Message = http.StatusText(status) + " (not an ElevenLabs error object: " + httpapi.Snippet(body) + ")"
	return e
}
