package config

import (
	"encoding/json"
	"strconv"
)

// Restart policies (agents.<id>.restart.policy).
const (
	RestartOff     = "off"      // a crashed session stays ended (the default)
	RestartOnCrash = "on-crash" // choird starts the agent again after a crash
)

// Restart policy defaults and bounds.
const (
	DefaultMaxRestarts  = 5
	DefaultBackoffMS    = 2000
	DefaultMaxBackoffMS = 300000
	// MaxRestartsLimit and MaxBackoffLimitMS bound what a config may ask
	// (a day between attempts at most; the doubling stays far from
	// overflowing a time.Duration).
	MaxRestartsLimit  = 1000
	MaxBackoffLimitMS = 24 * 60 * 60 * 1000
)

// RestartPolicy is what choird does when a session of the agent crashes
// (heartbeats lost, its container died): with policy "on-crash" it starts
// the agent again after BackoffMS, doubling after each restart in a row
// up to MaxBackoffMS, at most MaxRestarts times in a row (a session that
// runs long enough starts the count over). Absent, or any field left out,
// means the defaults: off, 5, 2000 ms, 300000 ms.
type RestartPolicy struct {
	Policy       string `json:"policy"`
	MaxRestarts  int    `json:"max_restarts"`
	BackoffMS    int    `json:"backoff_ms"`
	MaxBackoffMS int    `json:"max_backoff_ms"`
}

// DefaultRestartPolicy is the policy of an agent whose definition has no
// "restart" (or leaves fields out of it).
func DefaultRestartPolicy() RestartPolicy {
	return RestartPolicy{Policy: RestartOff, MaxRestarts: DefaultMaxRestarts, BackoffMS: DefaultBackoffMS, MaxBackoffMS: DefaultMaxBackoffMS}
}

// OnCrash reports whether choird restarts the agent after a crash.
func (p RestartPolicy) OnCrash() bool { return p.Policy == RestartOnCrash }

// UnmarshalJSON decodes over the defaults, so a field left out keeps its
// default while one written as 0 stays 0 (and is judged by Validate).
func (p *RestartPolicy) UnmarshalJSON(b []byte) error {
	type plain RestartPolicy
	v := plain(DefaultRestartPolicy())
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*p = RestartPolicy(v)
	return nil
}

// restart checks one agent's restart policy; a zero policy (an agent
// built in Go without one) is off.
func (v *validator) restart(path string, p RestartPolicy) {
	if p == (RestartPolicy{}) {
		return
	}
	if p.Policy != RestartOff && p.Policy != RestartOnCrash {
		v.add(path+".policy", quote(p.Policy), "want %q (a crashed session stays ended) or %q (choird starts the agent again with backoff)", RestartOff, RestartOnCrash)
	}
	if p.MaxRestarts < 1 || p.MaxRestarts > MaxRestartsLimit {
		v.add(path+".max_restarts", strconv.Itoa(p.MaxRestarts), "want restarts in a row between 1 and %d (to never restart, set policy %q)", MaxRestartsLimit, RestartOff)
	}
	if p.BackoffMS < 0 || p.BackoffMS > MaxBackoffLimitMS {
		v.add(path+".backoff_ms", strconv.Itoa(p.BackoffMS), "want a wait before the first restart between 0 and %d ms (a day)", MaxBackoffLimitMS)
	}
	switch {
	case p.MaxBackoffMS < 0 || p.MaxBackoffMS > MaxBackoffLimitMS:
		v.add(path+".max_backoff_ms", strconv.Itoa(p.MaxBackoffMS), "want a longest wait between 0 and %d ms (a day)", MaxBackoffLimitMS)
	case p.MaxBackoffMS < p.BackoffMS:
		v.add(path+".max_backoff_ms", strconv.Itoa(p.MaxBackoffMS), "must be at least backoff_ms (%d): the wait doubles from backoff_ms up to max_backoff_ms", p.BackoffMS)
	}
}
