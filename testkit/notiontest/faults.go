package notiontest

import (
	"net/http"
	"strconv"

	"choir/testkit/apitest"
)

// Fault is a scripted failure, answered instead of the endpoint's work
// (after the token and version checks).
type Fault struct {
	serve func(w http.ResponseWriter, r *http.Request, done <-chan struct{})
}

// FailNext makes the next n requests answer f. Faults queue in order.
func (s *Server) FailNext(n int, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults = append(s.faults, f)
	}
}

// Unauthorized is 401 unauthorized, as for a revoked token.
func Unauthorized() Fault {
	return Fault{func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		writeError(w, http.StatusUnauthorized, "unauthorized", "API token is invalid.")
	}}
}

// RateLimited is 429 rate_limited with Retry-After (when retryAfter >= 0).
func RateLimited(retryAfter int) Fault {
	return Fault{func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		if retryAfter >= 0 {
			w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
		}
		writeError(w, http.StatusTooManyRequests, "rate_limited", "You have been rate limited. Please try again in a few minutes.")
	}}
}

// ServerError is a 5xx in Notion's error object (internal_server_error,
// service_unavailable).
func ServerError(status int) Fault {
	code := "internal_server_error"
	if status == http.StatusServiceUnavailable {
		code = "service_unavailable"
	}
	return Fault{func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		writeError(w, status, code, "Unexpected error occurred.")
	}}
}

// Malformed is a 200 whose body is not JSON (a proxy's page).
func Malformed() Fault {
	return Fault{func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html><body>502 Bad Gateway</body></html>"))
	}}
}

// Endless is a 200 list whose results never end.
func Endless() Fault {
	return Fault{func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
		apitest.Endless(w, r, done, http.StatusOK, "application/json",
			`{"object":"list","results":[`, `{"object":"block","type":"paragraph","paragraph":{"rich_text":[]}},`)
	}}
}

// Stall is a 200 that sends the start of its body and then nothing.
func Stall() Fault {
	return Fault{func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
		apitest.Stall(w, r, done, http.StatusOK, "application/json", `{"object":"list","results":[`)
	}}
}
