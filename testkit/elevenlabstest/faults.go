package elevenlabstest

import (
	"net/http"
	"strconv"

	"choir/testkit/apitest"
)

// Fault is a scripted failure, answered instead of the speech (after the
// key check).
type Fault struct {
	serve func(w http.ResponseWriter, r *http.Request, done <-chan struct{})
}

// FailNext makes the next n calls answer f. Faults queue in order.
func (s *Server) FailNext(n int, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults = append(s.faults, f)
	}
}

// Unauthorized is 401 invalid_api_key, as for a revoked key.
func Unauthorized() Fault {
	return Fault{func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		writeDetail(w, http.StatusUnauthorized, "invalid_api_key", "Invalid API key")
	}}
}

// QuotaExceeded is the 401 quota_exceeded of a spent character quota.
func QuotaExceeded() Fault {
	return Fault{func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		writeDetail(w, http.StatusUnauthorized, "quota_exceeded", "This request exceeds your quota of 10000. You have 12 credits remaining.")
	}}
}

// RateLimited is 429 too_many_concurrent_requests with Retry-After (when
// retryAfter >= 0).
func RateLimited(retryAfter int) Fault {
	return Fault{func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		if retryAfter >= 0 {
			w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
		}
		writeDetail(w, http.StatusTooManyRequests, "too_many_concurrent_requests", "Too many concurrent requests for your subscription.")
	}}
}

// ServerError is a 5xx with a detail object.
func ServerError(status int) Fault {
	return Fault{func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		writeDetail(w, status, "internal_error", http.StatusText(status))
	}}
}

// Malformed is a 200 whose body is a proxy's HTML page, not audio.
func Malformed() Fault {
	return Fault{func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html><body>upstream error</body></html>"))
	}}
}

// Endless is a 200 whose audio never ends.
func Endless() Fault {
	return Fault{func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
		apitest.Endless(w, r, done, http.StatusOK, "audio/ogg", "OggS", string(make([]byte, 4096)))
	}}
}

// Stall is a 200 that sends the start of its audio and then nothing.
func Stall() Fault {
	return Fault{func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
		apitest.Stall(w, r, done, http.StatusOK, "audio/ogg", "OggS")
	}}
}
