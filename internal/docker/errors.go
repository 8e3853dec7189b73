package docker

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// APIError is an HTTP error answer from the engine: a status of 400 or more
// with a JSON body {"message": "..."}.
type APIError struct {
	Status  int    // HTTP status code: 400 bad parameter, 404 not found, 409 conflict, 500 server error
	Message string // the engine's message, e.g. "No such container: abc"
	Method  string // the request, for context: "POST"
	Path    string // the endpoint without version prefix: "/containers/create"
}

func (e *APIError) Error() string {
	return fmt.Sprintf("docker %s %s: %s (HTTP %d)", e.Method, e.Path, e.Message, e.Status)
}

// readAPIError turns an error response into an *APIError. A body that is not
// the engine's JSON (a proxy's page, say) becomes the message as text.
func readAPIError(resp *http.Response, method, path string) error {
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &APIError{Status: resp.StatusCode, Method: method, Path: path}
	var body struct {
		Message string `json:"message"`
	}
	switch {
	case err != nil && len(b) == 0:
		e.Message = fmt.Sprintf("%s (reading the error body: %v)", http.StatusText(resp.StatusCode), err)
	case json.Unmarshal(b, &body) == nil && body.Message != "":
		e.Message = body.Message
	case len(strings.TrimSpace(string(b))) > 0:
		e.Message = strings.TrimSpace(string(b))
	default:
		e.Message = http.StatusText(resp.StatusCode)
	}
	return e
}

// IsNotFound reports whether err is the engine saying the container, image
// or other object does not exist (HTTP 404).
func IsNotFound(err error) bool { return hasStatus(err, http.StatusNotFound) }

// IsConflict reports whether err is the engine refusing because of the
// object's state (HTTP 409): a name in use, removing a running container
// without force, killing a stopped one, removing an image in use.
func IsConflict(err error) bool { return hasStatus(err, http.StatusConflict) }

// IsBadRequest reports whether the engine rejected the request's parameters
// (HTTP 400): a Dockerfile parse error, an invalid mount.
func IsBadRequest(err error) bool { return hasStatus(err, http.StatusBadRequest) }

// IsUnavailable reports whether the engine cannot serve the call in its
// present state (HTTP 503): a Swarm call to an engine that is in no swarm,
// or is a worker rather than a manager.
func IsUnavailable(err error) bool { return hasStatus(err, http.StatusServiceUnavailable) }

func hasStatus(err error, status int) bool {
	var e *APIError
	return errors.As(err, &e) && e.Status == status
}

// StreamError is an error the engine reported inside a JSON progress stream
// that had already started with HTTP 200 (an image import that failed, say).
type StreamError struct {
	Code    int    // errorDetail.code, 0 when the engine gave none
	Message string // the engine's message
}

func (e *StreamError) Error() string {
	return "docker: " + e.Message
}

// BuildError is a build that failed at a step: the engine reports it inside
// the HTTP 200 progress stream. (A Dockerfile the engine cannot parse is
// refused before the build starts, as an *APIError with status 400.)
type BuildError struct {
	Step    string // the failing step as the engine printed it: "Step 3/4 : RUN make"; "" before the first step
	Message string // the engine's message: "The command '/bin/sh -c make' returned a non-zero code: 2"
	Code    int    // errorDetail.code: a RUN step's exit status, 0 when absent
	Output  string // what the failing step printed (the last 8 KiB)
}

func (e *BuildError) Error() string {
	if e.Step == "" {
		return "docker build failed: " + e.Message
	}
	return fmt.Sprintf("docker build failed at %s: %s", e.Step, e.Message)
}
