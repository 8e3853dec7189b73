package bravetest

import (
	"net/http"
	"strconv"

	"choir/testkit/apitest"
)

// Fault is a scripted failure, answered instead of a search (after the
// token check).
type Fault struct {
	serve func(w http.ResponseWriter, r *http.Request, done <-chan struct{})
}

// FailNext makes the next n searches answer f. Faults queue in order.
func (s *Server) FailNext(n int, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults = append(s.faults, f)
	}
}

// Unauthorized is a 401 as for a request without a token.
func Unauthorized() Fault {
	return Fault{func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		writeError(w, http.StatusUnauthorized, "SUBSCRIPTION_TOKEN_MISSING", "The request requires a subscription token.")
	}}
}

// RateLimited is a 429 RATE_LIMITED with Retry-After (when retryAfter >=
// 0) and the per-second window spent in X-RateLimit-Remaining.
func RateLimited(retryAfter int) Fault {
	return Fault{func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		rateHeaders(w, "0, 1999")
		if retryAfter >= 0 {
			w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
		}
		writeError(w, http.StatusTooManyRequests, "RATE_LIMITED", "Request rate limit exceeded for plan.")
	}}
}

// ServerError is a 5xx in Brave's error object.
func ServerError(status int) Fault {
	return Fault{func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		writeError(w, status, "INTERNAL_ERROR", http.StatusText(status))
	}}
}

// Malformed is a 200 whose body is not JSON (a proxy's page).
func Malformed() Fault {
	return Fault{func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html><body>502 Bad Gateway</body></html>"))
	}}
}

// Endless is a 200 whose results never end.
func Endless() Fault {
	return Fault{func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
		apitest.Endless(w, r, done, http.StatusOK, "application/json",
			`{"type":"search","web":{"results":[`, `{"title":"again","url":"https://example.com/","description":"again and again"},`)
	}}
}

// Stall is a 200 that sends the start of its body and then nothing.
func Stall() Fault {
	return Fault{func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
		apitest.Stall(w, r, done, http.StatusOK, "application/json", `{"type":"search","web":{"results":[`)
	}}
}
