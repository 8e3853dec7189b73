package embedtest

import "net/http"

// Fault is a scripted answer to one request; see Server.Fail.
type Fault struct {
	Name   string
	answer func(a *answer)
}

// RateLimited answers 429 as OpenAI does, with Retry-After set to retryAfter
// (delay-seconds such as "2", or an HTTP date); "" sends none.
func RateLimited(retryAfter string) Fault {
	return Fault{Name: "429 Retry-After " + retryAfter, answer: func(a *answer) {
		if retryAfter != "" {
			a.w.Header().Set("Retry-After", retryAfter)
		}
		writeError(a.w, http.StatusTooManyRequests, "requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again later.")
	}}
}

// ServerError answers 500 with OpenAI's server_error body.
func ServerError() Fault {
	return Fault{Name: "500", answer: func(a *answer) {
		writeError(a.w, http.StatusInternalServerError, "server_error", "", "The server had an error while processing your request. Sorry about that!")
	}}
}

// Status answers status with an OpenAI error body of the given type, code and
// message (a 400, a 401, a 503).
func Status(status int, errType, code, message string) Fault {
	return Fault{Name: http.StatusText(status), answer: func(a *answer) {
		writeError(a.w, status, errType, code, message)
	}}
}

// Malformed answers 200 with body as is, labelled application/json.
func Malformed(body string) Fault {
	return Fault{Name: "malformed", answer: func(a *answer) {
		a.w.Header().Set("Content-Type", "application/json")
		a.w.WriteHeader(http.StatusOK)
		_, _ = a.w.Write([]byte(body))
	}}
}

// WrongCount answers one vector fewer than there were inputs.
func WrongCount() Fault {
	return Fault{Name: "a vector too few", answer: func(a *answer) {
		vecs := a.embed(a.dims)
		a.vectors(vecs[:len(vecs)-1], false)
	}}
}

// WrongDimensions answers vectors of n numbers whatever was asked.
func WrongDimensions(n int) Fault {
	return Fault{Name: "wrong dimensions", answer: func(a *answer) {
		a.vectors(a.embed(n), false)
	}}
}

// OutOfOrder answers the right vectors listed in reverse order, each with its
// index, as the API allows.
func OutOfOrder() Fault {
	return Fault{Name: "out of order", answer: func(a *answer) {
		a.vectors(a.embed(a.dims), true)
	}}
}

// Hang never answers: the request waits until the client gives up or the
// server closes.
func Hang() Fault {
	return Fault{Name: "hang", answer: func(a *answer) {
		select {
		case <-a.r.Context().Done():
		case <-a.done:
		}
	}}
}

// Held answers normally once release is closed: a slow answer whose end the
// test decides (or the client's deadline, or the server's close).
func Held(release <-chan struct{}) Fault {
	return Fault{Name: "held", answer: func(a *answer) {
		select {
		case <-release:
			a.vectors(a.embed(a.dims), false)
		case <-a.r.Context().Done():
		case <-a.done:
		}
	}}
}
