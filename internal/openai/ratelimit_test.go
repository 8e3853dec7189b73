package openai_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"choir/internal/openai"
	"choir/testkit/openaitest"
)

// waits records what a RateLimitRetry was told and asked to wait, without
// waiting.
type waits struct {
	notified []time.Duration
	slept    []time.Duration
}

func (w *waits) policy(defaultWait time.Duration) openai.RateLimitRetry {
	return openai.RateLimitRetry{
		DefaultWait: defaultWait,
		Notify:      func(d time.Duration) { w.notified = append(w.notified, d) },
		Sleep: func(ctx context.Context, d time.Duration) error {
			w.slept = append(w.slept, d)
			return ctx.Err()
		},
	}
}

func TestRateLimitRetry(t *testing.T) {
	tests := []struct {
		name        string
		steps       []*openaitest.Step
		defaultWait time.Duration
		wantWait    time.Duration // notified and slept once; 0: neither
		wantKind    openai.Kind   // KindUnknown: success
	}{
		{"retry succeeds after Retry-After",
			[]*openaitest.Step{openaitest.Chat().ReplyRateLimited("2"), openaitest.Chat().ReplyText("ok")},
			time.Second, 2 * time.Second, openai.KindUnknown},
		{"no Retry-After: the configured default",
			[]*openaitest.Step{openaitest.Chat().ReplyRateLimited(""), openaitest.Chat().ReplyText("ok")},
			1500 * time.Millisecond, 1500 * time.Millisecond, openai.KindUnknown},
		{"no Retry-After, no default: 1s",
			[]*openaitest.Step{openaitest.Chat().ReplyRateLimited(""), openaitest.Chat().ReplyText("ok")},
			0, time.Second, openai.KindUnknown},
		{"the retry is limited too",
			[]*openaitest.Step{openaitest.Chat().ReplyRateLimited("1"), openaitest.Chat().ReplyRateLimited("1")},
			time.Second, time.Second, openai.KindRateLimited},
		{"the retry fails otherwise",
			[]*openaitest.Step{openaitest.Chat().ReplyRateLimited("1"), openaitest.Chat().ReplyError(502, "server_error", "", "bad gateway")},
			time.Second, time.Second, openai.KindServerError},
		{"other errors are not retried",
			[]*openaitest.Step{openaitest.Chat().ReplyError(500, "server_error", "", "boom")},
			time.Second, 0, openai.KindServerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openaitest.New(t)
			c := newClient(t, s)
			s.Expect(tt.steps...)
			var w waits

			resp, err := c.ChatWithRateLimitRetry(t.Context(), userAsks("x"), w.policy(tt.defaultWait))

			if tt.wantKind == openai.KindUnknown {
				if err != nil || resp.Content != "ok" {
					t.Errorf("ChatWithRateLimitRetry = %+v, %v; want ok", resp, err)
				}
			} else if openai.KindOf(err) != tt.wantKind {
				t.Errorf("ChatWithRateLimitRetry = %v; want %s", err, tt.wantKind)
			}
			var want []time.Duration
			if tt.wantWait > 0 {
				want = []time.Duration{tt.wantWait}
			}
			if !slices.Equal(w.notified, want) || !slices.Equal(w.slept, want) {
				t.Errorf("notified %v, slept %v; want %v each", w.notified, w.slept, want)
			}
		})
	}
}

func TestRateLimitRetryCanceledWhileWaiting(t *testing.T) {
	s := openaitest.New(t)
	c := newClient(t, s)
	s.Expect(openaitest.Chat().ReplyRateLimited("30"))
	ctx, cancel := context.WithCancel(t.Context())
	// The user stops the agent as soon as they are told; the real timer
	// (Sleep nil) must give up at once.
	rl := openai.RateLimitRetry{Notify: func(time.Duration) { cancel() }}

	_, err := c.ChatWithRateLimitRetry(ctx, userAsks("x"), rl)

	e, ok := errors.AsType[*openai.APIError](err)
	if !ok || e.Kind != openai.KindCanceled || e.Status != 429 || !errors.Is(err, context.Canceled) {
		t.Fatalf("ChatWithRateLimitRetry = %v; want KindCanceled after the 429, wrapping context.Canceled", err)
	}
	if !contains(err.Error(), "stopped waiting 30s to retry") {
		t.Errorf("Error() = %q; want it to say a retry was pending", err)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("%d requests; want 1, no retry", n)
	}
}

func TestRateLimitRetryMaxWait(t *testing.T) {
	s := openaitest.New(t)
	c := newClient(t, s)
	s.Expect(openaitest.Chat().ReplyRateLimited("3600"))
	var w waits
	rl := w.policy(time.Second)
	rl.MaxWait = time.Minute

	_, err := c.ChatWithRateLimitRetry(t.Context(), userAsks("x"), rl)

	if e, ok := errors.AsType[*openai.APIError](err); !ok || e.Kind != openai.KindRateLimited || e.RetryAfter != time.Hour {
		t.Errorf("ChatWithRateLimitRetry = %v; want the 429 with its hour-long Retry-After", err)
	}
	if len(w.notified)+len(w.slept) != 0 {
		t.Errorf("notified %v, slept %v; want neither past MaxWait", w.notified, w.slept)
	}
}
