package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"choir/internal/rpc"
)

// The calls the simulated agents time, as the table names them.
const (
	callHello      = "INIT_HELLO"
	callSecrets    = "GET_SECRETS"
	callConfig     = "FETCH_DYNAMIC_CONFIG"
	callIdle       = "HEARTBEAT (idle)"
	callEvents     = "HEARTBEAT (with events)"
	callDMSend     = "EXECUTE_HOST_TOOL choir.dm.send"
	callStream     = "GET /events (stream opened)"
	callTerminate  = "TERMINATE_SELF"
	callAgentStart = "agent start (admin API)"
)

// callOrder is the order of the table's latency rows.
var callOrder = []string{callAgentStart, callHello, callSecrets, callConfig, callIdle, callEvents, callDMSend, callStream, callTerminate}

// recorder collects the latency of each call and classifies its errors.
// It is safe for concurrent use; take returns what was recorded since the
// last take.
type recorder struct {
	mu     sync.Mutex
	lat    map[string][]time.Duration
	errs   map[string]map[string]int // call → error class → count
	sample map[string]string         // error class → the first message seen
}

func newRecorder() *recorder {
	return &recorder{lat: map[string][]time.Duration{}, errs: map[string]map[string]int{}, sample: map[string]string{}}
}

// observe records one call: its latency when it succeeded, its error's
// class otherwise.
func (r *recorder) observe(call string, d time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.lat[call] = append(r.lat[call], d)
		return
	}
	class := errorClass(err)
	if r.errs[call] == nil {
		r.errs[call] = map[string]int{}
	}
	r.errs[call][class]++
	if _, ok := r.sample[class]; !ok {
		r.sample[class] = call + ": " + abbrev(err.Error(), 300)
	}
}

// tally is what a recorder held at a take.
type tally struct {
	lat    map[string][]time.Duration
	errs   map[string]map[string]int
	sample map[string]string
}

func (r *recorder) take() tally {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := tally{lat: r.lat, errs: r.errs, sample: r.sample}
	r.lat, r.errs, r.sample = map[string][]time.Duration{}, map[string]map[string]int{}, map[string]string{}
	return t
}

// merge adds u's calls to t (for the calls a stage keeps from its starts).
func (t *tally) merge(u tally, calls ...string) {
	for _, c := range calls {
		t.lat[c] = append(t.lat[c], u.lat[c]...)
		for class, n := range u.errs[c] {
			if t.errs[c] == nil {
				t.errs[c] = map[string]int{}
			}
			t.errs[c][class] += n
		}
	}
	for class, msg := range u.sample {
		if _, ok := t.sample[class]; !ok {
			t.sample[class] = msg
		}
	}
}

// errorCount is the number of failed calls of call.
func (t tally) errorCount(call string) int {
	n := 0
	for _, k := range t.errs[call] {
		n += k
	}
	return n
}

// errorClasses sums the errors of every call by class, most frequent
// first, as "class ×n".
func (t tally) errorClasses() []string {
	sum := map[string]int{}
	for _, byClass := range t.errs {
		for c, n := range byClass {
			sum[c] += n
		}
	}
	classes := make([]string, 0, len(sum))
	for c := range sum {
		classes = append(classes, c)
	}
	sort.Slice(classes, func(i, j int) bool {
		if sum[classes[i]] != sum[classes[j]] {
			return sum[classes[i]] > sum[classes[j]]
		}
		return classes[i] < classes[j]
	})
	out := make([]string, len(classes))
	for i, c := range classes {
		out[i] = fmt.Sprintf("%s ×%d", c, sum[c])
	}
	return out
}

// errorClass names what kind of failure err is, so that thousands of
// errors read as a few lines: an answer from choird by status and code,
// a connection choird closed or refused, a timeout.
func errorClass(err error) string {
	var re *rpc.Error
	switch {
	case errors.As(err, &re):
		return fmt.Sprintf("HTTP %d %s", re.Status, re.Code)
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "EOF"):
		return "connection closed by choird (EOF)"
	case errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE):
		return "too many open files (simulator)"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return "no local port left (simulator)"
	case strings.Contains(err.Error(), "tls:") || strings.Contains(err.Error(), "x509"):
		return "TLS"
	}
	return "other"
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
}

func abbrev(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
