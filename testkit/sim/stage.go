package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"choir/internal/ctl"
)

// result is what one stage measured.
type result struct {
	N                 int
	Started, Failed   int           // this stage's starts
	Stopped           bool          // starts stopped after -max-failures
	StartWall         time.Duration // all of the stage's starts
	Running           int           // choird's running agents at the window's end
	Window            time.Duration
	Load              string // /proc/loadavg at the window's end
	ChoirdCPU, DBCPU  float64
	SimCPU            float64 // the simulator's own CPU, on the same cores
	HasDB             bool
	Choird            procSample // at the window's end
	T                 tally      // calls: the starts' opening calls, the window's others
	Ended401          int64      // sessions choird ended under a running agent, this stage
	HelloFail         int64
	StreamDrops       int64
	DMSent, Delivered int64 // choir.dm.send answered, sendMessage at the fake Telegram (window)
	FirstFailure      string
}

// gaveOut says whether choird failed the agents at this stage.
func (r result) gaveOut() bool { return r.Failed > 0 || r.Ended401 > 0 || r.Running < r.N }

// stage grows the running agents to n, settles, and measures over the
// window.
func (s *sim) stage(ctx context.Context, n int) (result, error) {
	r := result{N: n, HasDB: s.DBPID > 0}
	s.rec.take()
	c0 := s.counters()
	from := s.started + 1
	s.Say("N=%d: starting %s … %s, %d at once", n, agentID(from), agentID(n), s.parallel)
	t0 := time.Now()
	if err := s.startAll(ctx, from, n, &r); err != nil {
		return r, err
	}
	r.StartWall = time.Since(t0)
	s.Say("N=%d: %d started, %d failed in %v; settling", n, r.Started, r.Failed, r.StartWall.Round(time.Millisecond))
	if err := s.ChoirdExited(); err != nil {
		return r, err
	}
	if err := sleep(ctx, 10*time.Second); err != nil { // two default heartbeats
		return r, err
	}
	starts := s.rec.take()
	before, err := s.sample()
	if err != nil {
		return r, err
	}
	sent0 := s.tg.Sent()
	dm0 := s.cnt.dmSent.Load()
	s.Say("N=%d: measuring for %v", n, s.window)
	w0 := time.Now()
	if err := sleep(ctx, s.window); err != nil {
		return r, err
	}
	after, err := s.sample()
	if err != nil {
		return r, err
	}
	wall := float64(time.Since(w0))
	r.Window, r.Load = s.window, loadAverage()
	r.T = s.rec.take()
	r.T.merge(starts, callAgentStart, callHello, callSecrets, callConfig, callStream, callIdle, callEvents, callDMSend)
	r.Choird = after.choird
	r.ChoirdCPU = float64(after.choird.cpu-before.choird.cpu) / wall
	r.SimCPU = float64(after.self.cpu-before.self.cpu) / wall
	if r.HasDB {
		r.DBCPU = float64(after.db.cpu-before.db.cpu) / wall
	}
	r.Delivered, r.DMSent = s.tg.Sent()-sent0, s.cnt.dmSent.Load()-dm0
	c1 := s.counters()
	r.Ended401, r.HelloFail, r.StreamDrops = c1.ended401-c0.ended401, c1.helloFail-c0.helloFail, c1.streamDrop-c0.streamDrop
	list, err := s.admin.Agents(ctx)
	if err != nil {
		return r, fmt.Errorf("list agents: %w", err)
	}
	for _, a := range list {
		if a.State == "running" {
			r.Running++
		}
	}
	return r, s.ChoirdExited()
}

type counterSnap struct{ ended401, helloFail, streamDrop int64 }

func (s *sim) counters() counterSnap {
	return counterSnap{s.cnt.ended401.Load(), s.cnt.helloFail.Load(), s.cnt.streamDrop.Load()}
}

// startAll starts agents from..to through the admin API, s.parallel at a
// time, timing each; after s.maxFailures failures it starts no more.
func (s *sim) startAll(ctx context.Context, from, to int, r *result) error {
	next := make(chan int)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range s.parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t0 := time.Now()
				_, err := s.admin.StartAgent(ctx, agentID(i), ctl.StartRequest{})
				if ctx.Err() != nil {
					return
				}
				s.rec.observe(callAgentStart, time.Since(t0), err)
				mu.Lock()
				if err != nil {
					r.Failed++
					if r.FirstFailure == "" {
						r.FirstFailure = fmt.Sprintf("%s (with %d running): %s", agentID(i), s.cnt.running.Load(), abbrev(err.Error(), 400))
						s.Say("first failed start: %s", r.FirstFailure)
					}
				} else {
					r.Started++
				}
				mu.Unlock()
			}
		}()
	}
	last := from - 1
loop:
	for i := from; i <= to; i++ {
		mu.Lock()
		failed := r.Failed
		mu.Unlock()
		if failed >= s.maxFailures {
			r.Stopped = true
			break
		}
		select {
		case next <- i:
			last = i
		case <-ctx.Done():
			break loop
		}
		if i%500 == 0 {
			s.Say("… %s (%d running)", agentID(i), s.cnt.running.Load())
		}
	}
	close(next)
	wg.Wait()
	s.started = last
	return ctx.Err()
}

// samples are the processes at one instant.
type samples struct{ choird, db, self procSample }

func (s *sim) sample() (samples, error) {
	var out samples
	var err error
	if out.choird, err = readProc(s.ChoirdPID()); err != nil {
		return out, fmt.Errorf("choird's /proc: %w", err)
	}
	if s.DBPID > 0 {
		if out.db, err = readProc(s.DBPID); err != nil {
			return out, fmt.Errorf("PGlite's /proc: %w", err)
		}
	}
	if out.self, err = readProc(os.Getpid()); err != nil {
		return out, fmt.Errorf("the simulator's /proc: %w", err)
	}
	return out, nil
}
