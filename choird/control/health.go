package control

import (
	"context"
	"fmt"
	"time"
)

// Probe checks, cheaply, one thing choird depends on: Postgres (a ping on
// the pool) or the Docker engine (GET /_ping). Check returns nil when it
// answers.
type Probe struct {
	Name  string // "Postgres", "the Docker engine"
	Check func(ctx context.Context) error
	// Fix says what the operator can do about it.
	Fix string
}

// probeState is what the last check of a probe found.
type probeState struct {
	down  time.Time // when it stopped answering; zero while it answers
	cause string
}

// DefaultHealthInterval is how often WatchHealth checks when told 0.
const DefaultHealthInterval = 5 * time.Second

// WatchHealth checks each probe at once and then every interval until ctx
// ends, recording what it finds for Status and Degraded; a probe that stops
// answering, or answers again, is logged once. Each check gets at most the
// interval (5 s at most) to answer.
func (p *Plane) WatchHealth(ctx context.Context, interval time.Duration, probes ...Probe) {
	if interval <= 0 {
		interval = DefaultHealthInterval
	}
	p.mu.Lock()
	p.probes = probes
	if p.health == nil {
		p.health = map[string]probeState{}
	}
	p.mu.Unlock()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		for _, pr := range probes {
			p.check(ctx, pr, min(interval, 5*time.Second))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (p *Plane) check(ctx context.Context, pr Probe, limit time.Duration) {
	cctx, cancel := context.WithTimeout(ctx, limit)
	err := pr.Check(cctx)
	cancel()
	if ctx.Err() != nil {
		return // choird is stopping: not a finding
	}
	p.mu.Lock()
	was := p.health[pr.Name]
	now := was
	if err == nil {
		now = probeState{}
	} else {
		if was.down.IsZero() {
			now.down = time.Now()
		}
		now.cause = err.Error()
	}
	p.health[pr.Name] = now
	p.mu.Unlock()
	switch {
	case err != nil && was.down.IsZero():
		p.log.Warn(pr.Name+" is unreachable: choird is degraded", "error", err.Error())
	case err == nil && !was.down.IsZero():
		p.log.Info(pr.Name+" answers again", "down_for", time.Since(was.down).Round(time.Millisecond).String())
	}
}

// Degraded lists what is unreachable now, each with how long, the last
// error and what to do; empty when all is well. `choirctl status`, `agent
// status` and the gateway's /status show it.
func (p *Plane) Degraded() []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.degraded()
}

// degraded is Degraded with p.mu held.
func (p *Plane) degraded() []string {
	var out []string
	for _, pr := range p.probes {
		st := p.health[pr.Name]
		if st.down.IsZero() {
			continue
		}
		out = append(out, fmt.Sprintf("%s unreachable for %s: %s; %s", pr.Name,
			time.Since(st.down).Round(time.Second), st.cause, pr.Fix))
	}
	return out
}
