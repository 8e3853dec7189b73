package openai

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultRateLimitWait is the spec's rate_limit_retry_ms default (§7.7).
const DefaultRateLimitWait = time.Second

// RateLimitRetry is the spec's answer to a 429 (§7.7): tell the user once,
// wait the provider's Retry-After (or DefaultWait when it gave none), retry
// once, and surface the error if the retry fails too. No other failure is
// retried.
type RateLimitRetry struct {
	// DefaultWait is rate_limit_retry_ms; zero means DefaultRateLimitWait.
	DefaultWait time.Duration
	// MaxWait, when positive, is the longest wait accepted: a 429 asking for
	// more is returned at once, without notice or retry.
	MaxWait time.Duration
	// Notify is called once, before the wait, with its length: the caller
	// tells the user and logs the event. It may be nil.
	Notify func(wait time.Duration)
	// Sleep waits d or until ctx ends, returning ctx's error then. Nil
	// means a timer; tests inject one that does not really wait.
	Sleep func(ctx context.Context, d time.Duration) error
}

// ChatWithRateLimitRetry is Chat with rl's single retry after a 429. Each
// attempt has its own Config.Timeout; the wait between them is bounded only
// by ctx. When ctx ends during the wait, the error is an *APIError of
// KindCanceled or KindTimeout that says a retry was pending.
func (c *Client) ChatWithRateLimitRetry(ctx context.Context, req ChatRequest, rl RateLimitRetry) (*ChatResponse, error) {
	resp, err := c.Chat(ctx, req)
	limited, ok := errors.AsType[*APIError](err)
	if !ok || limited.Kind != KindRateLimited {
		return resp, err
	}
	wait := limited.RetryAfter
	if wait <= 0 {
		wait = rl.DefaultWait
	}
	if wait <= 0 {
		wait = DefaultRateLimitWait
	}
	if rl.MaxWait > 0 && wait > rl.MaxWait {
		return nil, err
	}
	if rl.Notify != nil {
		rl.Notify(wait)
	}
	sleep := rl.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	if serr := sleep(ctx, wait); serr != nil {
		kind := KindCanceled
		if errors.Is(serr, context.DeadlineExceeded) {
			kind = KindTimeout
		}
		gave := *limited
		gave.Kind, gave.Err = kind, serr
		gave.Message = fmt.Sprintf("stopped waiting %v to retry (%s)", wait, limited.Message)
		gave.RetryAfter = 0
		return nil, &gave
	}
	return c.Chat(ctx, req)
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
