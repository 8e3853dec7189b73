package telegram

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// Clock is the time a Limiter paces by. Tests inject one they advance by
// hand; the default is the real clock.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Telegram's documented broadcast limits for one bot.
const (
	DefaultPerChatInterval = time.Second // at most one message a second in one chat
	DefaultPerBotLimit     = 30          // at most 30 messages...
	DefaultPerBotWindow    = time.Second // ...in any second, over all chats
	DefaultRetryAfter      = time.Second // pause after a 429 that names no wait
)

// LimiterConfig sets a Limiter's pace. Zero fields take the defaults above.
type LimiterConfig struct {
	// PerChatInterval is the least time between the starts of two sends to
	// one chat.
	PerChatInterval time.Duration
	// PerBotLimit sends may start in any PerBotWindow, over all chats.
	PerBotLimit  int
	PerBotWindow time.Duration
	// DefaultRetryAfter is how long a 429 without retry_after pauses the bot.
	DefaultRetryAfter time.Duration
	// Clock is the time source; nil is the real clock.
	Clock Clock
}

// ErrLimiterClosed is returned for sends still queued when the Limiter is
// closed, and for sends queued after.
var ErrLimiterClosed = errors.New("telegram: limiter closed")

// Limiter paces one bot's outgoing sends: each is a function the caller
// queues for a chat, and the Limiter runs it when Telegram's limits allow.
//
// Sends to one chat run one at a time, in the order they were queued (FIFO),
// each starting at least PerChatInterval after the one before. At most
// PerBotLimit sends start in any PerBotWindow over all chats; among chats
// that may send, the send queued first goes first. Sends to different chats
// run concurrently, so a slow upload to one DM holds up no other.
//
// Nothing is dropped. A send whose error is a 429 (IsRateLimited) pauses the
// whole bot for its RetryAfter (DefaultRetryAfter when it names none) and is
// run again, at the head of its chat's queue, until it succeeds, fails
// otherwise, or its context ends. Any other result is handed back as is.
type Limiter struct {
	cfg     LimiterConfig
	clock   Clock
	wake    chan struct{} // capacity 1: something changed, look again
	quit    chan struct{}
	stopped chan struct{}

	mu          sync.Mutex
	chats       map[int64]*chatQueue
	seq         uint64
	starts      []time.Time // starts of the latest PerBotLimit sends, oldest first
	pausedUntil time.Time
	running     int
	closed      bool

	// parked, when set (by tests), is called each time the scheduler is
	// about to wait: wait > 0 for a timer, 0 for the next event.
	parked func(wait time.Duration)
}

type chatQueue struct {
	jobs []*job
	busy bool      // a send to this chat is running
	next time.Time // earliest start of the next send
}

type jobState int

const (
	jobQueued jobState = iota
	jobRunning
	jobDone
)

type job struct {
	ctx   context.Context
	chat  int64
	send  func(context.Context) error
	seq   uint64
	state jobState
	done  chan error // capacity 1, written once
}

func (j *job) finish(err error) {
	j.state = jobDone
	j.done <- err
}

// NewLimiter starts a limiter; Close stops it.
func NewLimiter(cfg LimiterConfig) *Limiter {
	l := newLimiter(cfg)
	go l.run()
	return l
}

func newLimiter(cfg LimiterConfig) *Limiter {
	if cfg.PerChatInterval <= 0 {
		cfg.PerChatInterval = DefaultPerChatInterval
	}
	if cfg.PerBotLimit <= 0 {
		cfg.PerBotLimit = DefaultPerBotLimit
	}
	if cfg.PerBotWindow <= 0 {
		cfg.PerBotWindow = DefaultPerBotWindow
	}
	if cfg.DefaultRetryAfter <= 0 {
		cfg.DefaultRetryAfter = DefaultRetryAfter
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	return &Limiter{
		cfg:     cfg,
		clock:   cfg.Clock,
		wake:    make(chan struct{}, 1),
		quit:    make(chan struct{}),
		stopped: make(chan struct{}),
		chats:   make(map[int64]*chatQueue),
	}
}

// Enqueue queues send for chatID and returns the channel its result will
// arrive on. Queue a chat's sends from one goroutine, in order: their order
// of arrival is the order they run. When ctx ends before the send starts,
// the result is ctx's error, delivered once the send reaches the head of its
// queue.
func (l *Limiter) Enqueue(ctx context.Context, chatID int64, send func(context.Context) error) <-chan error {
	return l.enqueue(ctx, chatID, send).done
}

// Do queues send for chatID and waits for its result. When ctx ends while
// the send is still queued, it is withdrawn and Do returns ctx's error at
// once; a send already running gets ctx itself and Do waits for it.
func (l *Limiter) Do(ctx context.Context, chatID int64, send func(context.Context) error) error {
	j := l.enqueue(ctx, chatID, send)
	select {
	case err := <-j.done:
		return err
	case <-ctx.Done():
	}
	l.mu.Lock()
	if j.state == jobQueued {
		l.withdraw(j)
		j.finish(ctx.Err())
	}
	l.mu.Unlock()
	return <-j.done
}

// Limited runs fn through l as a send to chatID and returns its value, for
// the Client methods that return a *Message:
//
//	m, err := telegram.Limited(ctx, lim, chat, func(ctx context.Context) (*telegram.Message, error) {
//		return c.SendMessage(ctx, chat, part, telegram.MessageOptions{})
//	})
func Limited[T any](ctx context.Context, l *Limiter, chatID int64, fn func(context.Context) (T, error)) (T, error) {
	var out T
	err := l.Do(ctx, chatID, func(ctx context.Context) error {
		v, err := fn(ctx)
		if err == nil {
			out = v
		}
		return err
	})
	return out, err
}

// Close stops the limiter. Queued sends get ErrLimiterClosed; running ones
// finish, and a 429 among them is returned rather than retried.
func (l *Limiter) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		<-l.stopped
		return
	}
	l.closed = true
	for _, q := range l.chats {
		for _, j := range q.jobs {
			j.finish(ErrLimiterClosed)
		}
		q.jobs = nil
	}
	l.mu.Unlock()
	close(l.quit)
	<-l.stopped
}

func (l *Limiter) enqueue(ctx context.Context, chatID int64, send func(context.Context) error) *job {
	j := &job{ctx: ctx, chat: chatID, send: send, done: make(chan error, 1)}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		j.finish(ErrLimiterClosed)
		return j
	}
	l.seq++
	j.seq = l.seq
	q := l.chats[chatID]
	if q == nil {
		q = &chatQueue{}
		l.chats[chatID] = q
	}
	q.jobs = append(q.jobs, j)
	l.signal()
	return j
}

// withdraw takes a queued job out of its chat's queue. l.mu is held.
func (l *Limiter) withdraw(j *job) {
	if q := l.chats[j.chat]; q != nil {
		if i := slices.Index(q.jobs, j); i >= 0 {
			q.jobs = slices.Delete(q.jobs, i, i+1)
		}
	}
}

// signal wakes the scheduler. l.mu is held, so that a test which sees no
// send running and no wake-up pending knows the scheduler is idle.
func (l *Limiter) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// run is the scheduler: it starts every send that may start now, then
// sleeps until the next one may, or until something changes.
func (l *Limiter) run() {
	defer close(l.stopped)
	for {
		l.mu.Lock()
		j, wait := l.pick(l.clock.Now())
		l.mu.Unlock()
		if j != nil {
			go l.exec(j)
			continue
		}
		var timer <-chan time.Time
		if wait > 0 {
			timer = l.clock.After(wait)
		}
		if l.parked != nil {
			l.parked(wait)
		}
		select {
		case <-l.wake:
		case <-timer:
		case <-l.quit:
			return
		}
	}
}

// pick starts the send that may go now, if any, and otherwise says how long
// until one may (0: none is waiting on time). l.mu is held.
func (l *Limiter) pick(now time.Time) (*job, time.Duration) {
	botFree := l.pausedUntil
	if n := len(l.starts); n >= l.cfg.PerBotLimit {
		if t := l.starts[n-l.cfg.PerBotLimit].Add(l.cfg.PerBotWindow); t.After(botFree) {
			botFree = t
		}
	}
	var best *chatQueue
	var soonest time.Time // earliest next start among chats waiting on their interval
	for id, q := range l.chats {
		for len(q.jobs) > 0 && q.jobs[0].ctx.Err() != nil {
			q.jobs[0].finish(q.jobs[0].ctx.Err())
			q.jobs = q.jobs[1:]
		}
		switch {
		case q.busy:
		case len(q.jobs) == 0:
			if !q.next.After(now) {
				delete(l.chats, id)
			}
		case q.next.After(now):
			if soonest.IsZero() || q.next.Before(soonest) {
				soonest = q.next
			}
		case best == nil || q.jobs[0].seq < best.jobs[0].seq:
			best = q
		}
	}
	if best == nil {
		if soonest.IsZero() {
			return nil, 0
		}
		if botFree.After(soonest) {
			soonest = botFree
		}
		return nil, soonest.Sub(now)
	}
	if botFree.After(now) {
		return nil, botFree.Sub(now)
	}
	j := best.jobs[0]
	best.jobs = best.jobs[1:]
	best.busy = true
	best.next = now.Add(l.cfg.PerChatInterval)
	j.state = jobRunning
	l.running++
	l.starts = append(l.starts, now)
	if len(l.starts) > l.cfg.PerBotLimit {
		l.starts = append(l.starts[:0], l.starts[1:]...)
	}
	return j, 0
}

// exec runs one send and files its result: back to the head of its queue
// after a 429, to the caller otherwise.
func (l *Limiter) exec(j *job) {
	err := j.send(j.ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.chats[j.chat] // kept while busy
	q.busy = false
	l.running--
	if IsRateLimited(err) && !l.closed && j.ctx.Err() == nil {
		wait := RetryAfterOf(err)
		if wait <= 0 {
			wait = l.cfg.DefaultRetryAfter
		}
		if until := l.clock.Now().Add(wait); until.After(l.pausedUntil) {
			l.pausedUntil = until
		}
		j.state = jobQueued
		q.jobs = append([]*job{j}, q.jobs...)
	} else {
		j.finish(err)
	}
	l.signal()
}
