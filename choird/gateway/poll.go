package gateway

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"choir/internal/telegram"
)

// bot is one Telegram bot: its client, pacing, allowlist and poller state.
type bot struct {
	g       *Gateway
	name    string
	client  *telegram.Client
	limiter *telegram.Limiter
	users   map[int64]string // allowlist: user id → DM name (fixed after New)
	log     *slog.Logger

	mu      sync.Mutex
	offset  int64 // the next update_id wanted: last dispatched + 1
	status  BotStatus
	chats   map[int64]*chatQueue
	sendMu  map[int64]*sync.Mutex // one outgoing DMSend at a time per chat
	polling bool
}

// BotStatus is one bot's poller as choird's status shows it.
type BotStatus struct {
	Gateway string    `json:"gateway"`
	Polling bool      `json:"polling"`          // a getUpdates is open now
	LastOK  time.Time `json:"last_ok,omitzero"` // the last getUpdates that answered
	Offset  int64     `json:"offset"`           // the next update_id wanted
	Updates int64     `json:"updates"`          // updates handed on since start
	Dropped int64     `json:"dropped"`          // from users not in the allowlist
	Errors  int       `json:"errors"`           // failed getUpdates, conflicts included
	LastErr string    `json:"last_error,omitempty"`
	ErrAt   time.Time `json:"last_error_at,omitzero"`
	// Conflicts counts 409s: another process polls this bot's token.
	Conflicts    int       `json:"conflicts"`
	ConflictAt   time.Time `json:"last_conflict_at,omitzero"`
	Unauthorized bool      `json:"unauthorized,omitempty"` // the token was refused (401)
	// WatchdogRestarts counts long polls abandoned as stalled.
	WatchdogRestarts int `json:"watchdog_restarts"`
}

// Status reports every bot's poller, in gateway name order.
func (g *Gateway) Status() []BotStatus {
	out := make([]BotStatus, len(g.bots))
	for i, b := range g.bots {
		b.mu.Lock()
		out[i] = b.status
		out[i].Gateway = b.name
		out[i].Offset = b.offset
		out[i].Polling = b.polling
		b.mu.Unlock()
	}
	return out
}

// errStalled is the cause the watchdog cancels a stalled poll with.
var errStalled = errors.New("long poll stalled")

var allowedUpdates = []string{telegram.UpdateMessage, telegram.UpdateCallbackQuery}

// poll long-polls getUpdates until ctx ends. Each update is handed to its
// chat's worker in order and the offset moves past it, so the next poll
// confirms it to Telegram: no update is handled twice, and a poll that
// fails or is restarted asks again from the same offset, so none is
// skipped. A watchdog abandons a poll open longer than StallAfter.
func (b *bot) poll(ctx context.Context) {
	failures := 0
	for ctx.Err() == nil {
		b.mu.Lock()
		offset := b.offset
		b.polling = true
		b.mu.Unlock()

		callCtx, cancel := context.WithCancelCause(ctx)
		watchdog := time.AfterFunc(b.g.cfg.StallAfter, func() { cancel(errStalled) })
		ups, err := b.client.GetUpdates(callCtx, offset, b.g.cfg.PollTimeout, allowedUpdates)
		watchdog.Stop()
		stalled := err != nil && errors.Is(context.Cause(callCtx), errStalled)
		cancel(nil)

		b.mu.Lock()
		b.polling = false
		b.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		if stalled {
			b.mu.Lock()
			b.status.WatchdogRestarts++
			b.mu.Unlock()
			b.log.Warn("getUpdates stalled; the watchdog restarted the long poll", "stall_after", b.g.cfg.StallAfter, "offset", offset)
			continue
		}
		if err != nil {
			failures++
			wait := backoff(b.g.cfg.BackoffMin, b.g.cfg.BackoffMax, failures)
			b.failed(err, wait)
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			continue
		}
		failures = 0
		b.mu.Lock()
		b.status.LastOK = time.Now()
		b.status.Unauthorized = false
		b.mu.Unlock()
		for _, u := range ups {
			b.mu.Lock()
			if u.UpdateID < b.offset {
				b.mu.Unlock()
				continue // already handed on: never twice
			}
			b.offset = u.UpdateID + 1
			b.status.Updates++
			b.mu.Unlock()
			b.dispatch(u)
		}
	}
}

// failed records and logs a failed poll: a 409 loudly, every time.
func (b *bot) failed(err error, wait time.Duration) {
	now := time.Now()
	b.mu.Lock()
	b.status.Errors++
	b.status.LastErr = err.Error()
	b.status.ErrAt = now
	switch {
	case telegram.IsConflict(err):
		b.status.Conflicts++
		b.status.ConflictAt = now
	case telegram.IsUnauthorized(err):
		b.status.Unauthorized = true
	}
	b.mu.Unlock()
	switch {
	case telegram.IsConflict(err):
		b.log.Error("getUpdates conflict (409): another process is polling this bot's token; stop it, only one choird may run per bot",
			"retry_in", wait, keyError, err.Error())
	case telegram.IsUnauthorized(err):
		b.log.Error("getUpdates refused the bot token (401): fix the gateway's secret in secrets.json", "retry_in", wait, keyError, err.Error())
	default:
		b.log.Warn("getUpdates failed", "retry_in", wait, keyError, err.Error())
	}
}

// backoff is the wait before the n-th consecutive retry (n >= 1): doubling
// from lo, capped at hi, with full jitter over its upper half so that
// several bots do not retry in step.
func backoff(lo, hi time.Duration, n int) time.Duration {
	d := lo
	for i := 1; i < n && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	half := d / 2
	if half <= 0 {
		return d
	}
	return half + rand.N(half+1)
}

// confirm tells Telegram, at stop, that every update handed on is handled,
// so a restarted choird does not get them again. getUpdates confirms with
// its offset; a short poll asks for nothing new.
func (b *bot) confirm() {
	b.mu.Lock()
	offset := b.offset
	b.mu.Unlock()
	if offset == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := b.client.GetUpdates(ctx, offset, 0, allowedUpdates); err != nil {
		b.log.Warn("could not confirm the last updates; they may be handled again after restart", "offset", offset, keyError, err.Error())
	}
}
