package telegram

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeClock is a Clock that moves only when the test advances it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []fakeTimer
}

type fakeTimer struct {
	at time.Time
	c  chan time.Time
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.timers = append(c.timers, fakeTimer{at: c.now.Add(d), c: ch})
	return ch
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			kept = append(kept, t)
		} else {
			t.c <- c.now
		}
	}
	c.timers = kept
}

// rig is a limiter on a fake clock, driven by the test: while run drives
// it, whenever the scheduler is idle (no send running, no wake-up pending)
// and waiting for a time, the clock jumps to that time. Nothing sleeps.
//
// The scheduler reports each park and stays in the hook until run has
// looked, so the state run judges cannot move under it: a send still
// running or a wake-up pending means another park follows; otherwise the
// scheduler will wait exactly for the timer it reported.
type rig struct {
	t     *testing.T
	clock *fakeClock
	l     *Limiter
	parks chan park

	mu      sync.Mutex
	driving bool                       // run is driving: the scheduler reports each park
	starts  map[string][]time.Duration // job name: start of each attempt, since epoch
}

type park struct {
	wait time.Duration
	seen chan struct{} // closed by run when done with this park
}

func newRig(t *testing.T, cfg LimiterConfig) *rig {
	r := &rig{t: t, clock: &fakeClock{now: epoch}, parks: make(chan park), starts: map[string][]time.Duration{}}
	cfg.Clock = r.clock
	r.l = newLimiter(cfg)
	stop := make(chan struct{})
	r.l.parked = func(wait time.Duration) {
		r.mu.Lock()
		driving := r.driving
		r.mu.Unlock()
		if !driving {
			return
		}
		p := park{wait: wait, seen: make(chan struct{})}
		select {
		case r.parks <- p:
		case <-stop:
			return
		}
		select {
		case <-p.seen:
		case <-stop:
		}
	}
	go r.l.run()
	t.Cleanup(r.l.Close)
	t.Cleanup(func() { close(stop) }) // runs first: releases a parked scheduler
	return r
}

// send returns a send function that records its start under name and
// answers with the next of results (nil when they run out).
func (r *rig) send(name string, results ...error) func(context.Context) error {
	return func(context.Context) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		n := len(r.starts[name])
		r.starts[name] = append(r.starts[name], r.clock.Now().Sub(epoch))
		if n < len(results) {
			return results[n]
		}
		return nil
	}
}

// run drives the clock until the limiter has nothing left to wait for.
func (r *rig) run() {
	r.t.Helper()
	guard := time.NewTimer(10 * time.Second) // a real-time guard against a hung limiter, not a pace
	defer guard.Stop()
	r.setDriving(true)
	defer r.setDriving(false)
	r.l.mu.Lock()
	r.l.signal() // a scheduler that parked before now parks again, reporting it
	r.l.mu.Unlock()
	for {
		select {
		case p := <-r.parks:
			r.l.mu.Lock()
			idle := r.l.running == 0 && len(r.l.wake) == 0
			r.l.mu.Unlock()
			if idle && p.wait == 0 {
				close(p.seen)
				return
			}
			if idle {
				r.clock.Advance(p.wait)
			}
			close(p.seen)
		case <-guard.C:
			r.t.Fatal("limiter did not settle")
		}
	}
}

func (r *rig) setDriving(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.driving = on
}

// result takes the already-delivered result from ch.
func result(t *testing.T, name string, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	default:
		t.Fatalf("%s: no result delivered; the send was dropped", name)
		return nil
	}
}

func (r *rig) startsOf(name string) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.starts[name])
}

func TestLimiterOneMessagePerSecondPerChat(t *testing.T) {
	r := newRig(t, LimiterConfig{})
	ctx := t.Context()
	const a, b = 100, 200
	order := []struct {
		name string
		chat int64
	}{{"a1", a}, {"a2", a}, {"b1", b}, {"a3", a}, {"b2", b}}
	var results []<-chan error
	for _, j := range order {
		results = append(results, r.l.Enqueue(ctx, j.chat, r.send(j.name)))
	}
	r.run()
	for i, j := range order {
		if err := result(t, j.name, results[i]); err != nil {
			t.Errorf("%s = %v", j.name, err)
		}
	}
	want := map[string]time.Duration{"a1": 0, "b1": 0, "a2": time.Second, "b2": time.Second, "a3": 2 * time.Second}
	for name, at := range want {
		if got := r.startsOf(name); len(got) != 1 || got[0] != at {
			t.Errorf("%s started at %v; want once at %v", name, got, at)
		}
	}
}

func TestLimiterThirtyPerSecondPerBot(t *testing.T) {
	r := newRig(t, LimiterConfig{})
	ctx := t.Context()
	const n = 100
	var results []<-chan error
	for i := range n { // one message to each of 100 chats
		results = append(results, r.l.Enqueue(ctx, int64(1000+i), r.send(fmt.Sprint(i))))
	}
	r.run()
	var starts []time.Duration
	for i := range n {
		if err := result(t, fmt.Sprint(i), results[i]); err != nil {
			t.Errorf("send %d = %v", i, err)
		}
		got := r.startsOf(fmt.Sprint(i))
		if len(got) != 1 {
			t.Fatalf("send %d started %d times", i, len(got))
		}
		// FIFO across chats: the first 30 at once, the next 30 a second
		// later, and so on.
		if want := time.Duration(i/30) * time.Second; got[0] != want {
			t.Errorf("send %d started at %v; want %v", i, got[0], want)
		}
		starts = append(starts, got[0])
	}
	for i := range starts {
		inWindow := 0
		for _, s := range starts {
			if s >= starts[i] && s < starts[i]+time.Second {
				inWindow++
			}
		}
		if inWindow > 30 {
			t.Errorf("%d sends in the second from %v; the limit is 30", inWindow, starts[i])
		}
	}
}

func TestLimiterConfigurablePace(t *testing.T) {
	r := newRig(t, LimiterConfig{PerChatInterval: 3 * time.Second, PerBotLimit: 2, PerBotWindow: 10 * time.Second})
	ctx := t.Context()
	var results []<-chan error
	for i, chat := range []int64{1, 1, 2, 3} {
		results = append(results, r.l.Enqueue(ctx, chat, r.send(fmt.Sprint(i))))
	}
	r.run()
	// 0 and 2 fill the window from 0 s; 1 (chat 1, due at 3 s) and 3 wait
	// until both of those are 10 s old.
	for i, want := range []time.Duration{0, 10 * time.Second, 0, 10 * time.Second} {
		if err := result(t, fmt.Sprint(i), results[i]); err != nil {
			t.Fatal(err)
		}
		if got := r.startsOf(fmt.Sprint(i)); len(got) != 1 || got[0] != want {
			t.Errorf("send %d started at %v; want %v", i, got, want)
		}
	}
}

// TestLimiter429PausesTheBot: a 429 with retry_after 5 s holds every chat
// of the bot for 5 s, then the refused send goes again, first in its chat.
func TestLimiter429PausesTheBot(t *testing.T) {
	r := newRig(t, LimiterConfig{})
	ctx := t.Context()
	const a, b = 100, 200
	limited := &APIError{Method: "sendMessage", Code: 429, Description: "Too Many Requests: retry after 5", RetryAfter: 5 * time.Second}
	release := make(chan struct{})
	first := r.send("a1", limited)
	a1 := r.l.Enqueue(ctx, a, func(ctx context.Context) error {
		if len(r.startsOf("a1")) == 0 {
			<-release // hold the 429 until b1 has run at 0
		}
		return first(ctx)
	})
	b1 := r.l.Enqueue(ctx, b, r.send("b1"))
	a2 := r.l.Enqueue(ctx, a, r.send("a2"))
	b2 := r.l.Enqueue(ctx, b, r.send("b2"))
	if err := <-b1; err != nil {
		t.Fatal(err)
	}
	close(release)
	r.run()
	for name, ch := range map[string]<-chan error{"a1": a1, "a2": a2, "b2": b2} {
		if err := result(t, name, ch); err != nil {
			t.Errorf("%s = %v; want it retried to success", name, err)
		}
	}
	for name, want := range map[string][]time.Duration{
		"a1": {0, 5 * time.Second}, // refused, then retried when the pause ends
		"b1": {0},
		"b2": {5 * time.Second}, // due at 1 s, held by the pause
		"a2": {6 * time.Second}, // a second after a1's retry
	} {
		if got := r.startsOf(name); !slices.Equal(got, want) {
			t.Errorf("%s started at %v; want %v", name, got, want)
		}
	}
}

func TestLimiter429WithoutRetryAfterUsesDefault(t *testing.T) {
	r := newRig(t, LimiterConfig{DefaultRetryAfter: 2 * time.Second})
	ch := r.l.Enqueue(t.Context(), 1, r.send("x", &APIError{Code: 429}, &APIError{Code: 429}))
	r.run()
	if err := result(t, "x", ch); err != nil {
		t.Fatal(err)
	}
	if got, want := r.startsOf("x"), []time.Duration{0, 2 * time.Second, 4 * time.Second}; !slices.Equal(got, want) {
		t.Errorf("attempts at %v; want %v", got, want)
	}
}

func TestLimiterReturnsOtherErrors(t *testing.T) {
	r := newRig(t, LimiterConfig{})
	bad := &APIError{Code: 400, Description: "Bad Request: message is too long"}
	ch := r.l.Enqueue(t.Context(), 1, r.send("x", bad))
	r.run()
	if err := result(t, "x", ch); !errors.Is(err, bad) {
		t.Errorf("result = %v; want the 400, not retried", err)
	}
	if n := len(r.startsOf("x")); n != 1 {
		t.Errorf("%d attempts; want 1", n)
	}
}

// TestLimiterDoWithdrawsOnCancel cancels a queued send: Do returns at once
// and the send never runs.
func TestLimiterDoWithdrawsOnCancel(t *testing.T) {
	r := newRig(t, LimiterConfig{})
	first := r.l.Enqueue(t.Context(), 1, r.send("first"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := r.l.Do(ctx, 1, r.send("second")); !errors.Is(err, context.Canceled) {
		t.Errorf("Do(canceled) = %v; want context.Canceled", err)
	}
	r.run()
	if err := result(t, "first", first); err != nil {
		t.Fatal(err)
	}
	if got := r.startsOf("second"); len(got) != 0 {
		t.Errorf("canceled send ran at %v", got)
	}
}

func TestLimitedReturnsValue(t *testing.T) {
	l := NewLimiter(LimiterConfig{PerChatInterval: time.Nanosecond, PerBotWindow: time.Nanosecond})
	defer l.Close()
	m, err := Limited(t.Context(), l, 7, func(context.Context) (*Message, error) { return &Message{MessageID: 42}, nil })
	if err != nil || m.MessageID != 42 {
		t.Errorf("Limited = %+v, %v; want message 42", m, err)
	}
}

// TestLimiterRealClockKeepsOrder runs many sends to a few chats on the real
// clock with tiny intervals: every send runs once, each chat in order.
func TestLimiterRealClockKeepsOrder(t *testing.T) {
	l := NewLimiter(LimiterConfig{PerChatInterval: time.Microsecond, PerBotLimit: 5, PerBotWindow: time.Microsecond})
	defer l.Close()
	var mu sync.Mutex
	ran := map[int64][]int{}
	var results []<-chan error
	for i := range 60 {
		chat := int64(i % 3)
		results = append(results, l.Enqueue(t.Context(), chat, func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			ran[chat] = append(ran[chat], i)
			return nil
		}))
	}
	for i, ch := range results {
		if err := <-ch; err != nil {
			t.Fatalf("send %d = %v", i, err)
		}
	}
	for chat, order := range ran {
		if len(order) != 20 || !slices.IsSorted(order) {
			t.Errorf("chat %d ran %v; want its 20 sends in order", chat, order)
		}
	}
}

func TestLimiterClose(t *testing.T) {
	r := newRig(t, LimiterConfig{})
	first := r.l.Enqueue(t.Context(), 1, r.send("first"))
	second := r.l.Enqueue(t.Context(), 1, r.send("second")) // due in a second that never comes
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	r.l.Close()
	if err := <-second; !errors.Is(err, ErrLimiterClosed) {
		t.Errorf("queued send after Close = %v; want ErrLimiterClosed", err)
	}
	if err := <-r.l.Enqueue(t.Context(), 1, r.send("late")); !errors.Is(err, ErrLimiterClosed) {
		t.Errorf("send queued after Close = %v; want ErrLimiterClosed", err)
	}
}
