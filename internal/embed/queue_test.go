package embed_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/internal/embed"
	"choir/internal/openai"
	"choir/testkit/embedtest"
)

// scripted is an Embedder whose calls answer from a script of errors, then
// with Hashing vectors; with block set, each call waits for it (or its ctx).
type scripted struct {
	embed.Hashing
	block chan struct{}

	mu      sync.Mutex
	errs    []error
	batches []int
}

var _ embed.Embedder = (*scripted)(nil)

func (s *scripted) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	s.mu.Lock()
	s.batches = append(s.batches, len(texts))
	var err error
	if len(s.errs) > 0 {
		err, s.errs = s.errs[0], s.errs[1:]
	}
	s.mu.Unlock()
	if s.block != nil {
		select {
		case <-s.block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err != nil {
		return nil, err
	}
	return s.Hashing.Embed(ctx, texts)
}

func (s *scripted) calls() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.batches...)
}

// delivered records what a queue delivered, item by item.
type delivered struct {
	mu    sync.Mutex
	vecs  map[string][]float32
	errs  map[string]error
	times map[string]int
}

func newDelivered() *delivered {
	return &delivered{vecs: map[string][]float32{}, errs: map[string]error{}, times: map[string]int{}}
}

func (d *delivered) deliver(id string, vec []float32, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.vecs[id], d.errs[id] = vec, err
	d.times[id]++
}

func (d *delivered) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.times)
}

// waitFor waits until n items were delivered, failing after a deadline.
func (d *delivered) waitFor(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for d.count() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d items delivered after 10 s; want %d", d.count(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// checkOnce fails unless every id was delivered exactly once.
func (d *delivered) checkOnce(t *testing.T, ids []string) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range ids {
		if d.times[id] != 1 {
			t.Errorf("item %s delivered %d times; want exactly once", id, d.times[id])
		}
	}
}

// sleeps records the queue's waits instead of waiting.
type sleeps struct {
	mu sync.Mutex
	ds []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.ds = append(s.ds, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.ds...)
}

func newQueue(t *testing.T, cfg embed.QueueConfig) *embed.Queue {
	t.Helper()
	q, err := embed.NewQueue(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close(t.Context()) })
	return q
}

func enqueue(t *testing.T, q *embed.Queue, from, n int) []string {
	t.Helper()
	var ids []string
	for i := from; i < from+n; i++ {
		id := fmt.Sprintf("chunk-%d", i)
		if err := q.Enqueue(id, fmt.Sprintf("text of chunk %d", i)); err != nil {
			t.Fatalf("Enqueue(%s) = %v", id, err)
		}
		ids = append(ids, id)
	}
	return ids
}

func serverError() error {
	return &openai.APIError{Kind: openai.KindServerError, Endpoint: "example/v1/embeddings", Status: 500, Message: "boom"}
}

func TestQueueSendsFullBatchesAndFlushesTheRest(t *testing.T) {
	emb := &scripted{Hashing: embed.Hashing{Dims: 8}}
	got := newDelivered()
	q := newQueue(t, embed.QueueConfig{Embedder: emb, Deliver: got.deliver})

	ids := enqueue(t, q, 0, 70)
	got.waitFor(t, 64)

	if calls := emb.calls(); !reflect.DeepEqual(calls, []int{32, 32}) {
		t.Errorf("calls before a Flush = %v; want two full batches of 32", calls)
	}
	if n := q.Outstanding(); n != 6 {
		t.Errorf("Outstanding = %d; want the 6 short of a batch, waiting for a Flush", n)
	}
	q.Flush()
	got.waitFor(t, 70)
	if calls := emb.calls(); !reflect.DeepEqual(calls, []int{32, 32, 6}) {
		t.Errorf("calls = %v; want 32, 32, then the 6 flushed", calls)
	}
	got.checkOnce(t, ids)
	want := hashVec(t, 8, "text of chunk 69")
	if !reflect.DeepEqual(got.vecs["chunk-69"], want) || got.errs["chunk-69"] != nil {
		t.Errorf("chunk-69 = %v, %v; want its vector", got.vecs["chunk-69"], got.errs["chunk-69"])
	}
}

func TestQueueRetriesWithBackoff(t *testing.T) {
	tests := []struct {
		name   string
		errs   []error
		jitter float64
		waits  []time.Duration
		ok     bool
		calls  int
	}{
		{"two failures then success", []error{serverError(), serverError()}, 0, []time.Duration{time.Second, 2 * time.Second}, true, 3},
		{"three retries then give up", []error{serverError(), serverError(), serverError(), serverError()}, 0, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, false, 4},
		{"jitter adds up to half", []error{serverError(), serverError(), serverError(), serverError()}, 0.999, []time.Duration{1499500 * time.Microsecond, 2999 * time.Millisecond, 5998 * time.Millisecond}, false, 4},
		{"a malformed answer is retried", []error{fmt.Errorf("short: %w", embed.ErrMalformed)}, 0, []time.Duration{time.Second}, true, 2},
		{"a 429's Retry-After is waited", []error{&openai.APIError{Kind: openai.KindRateLimited, Status: 429, RetryAfter: 9 * time.Second}}, 0, []time.Duration{9 * time.Second}, true, 2},
		{"a refused key is not retried", []error{&openai.APIError{Kind: openai.KindAuth, Status: 401}}, 0, nil, false, 1},
		{"a refused batch is tried item by item", []error{&openai.APIError{Kind: openai.KindBadRequest, Status: 400}}, 0, nil, true, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			emb := &scripted{Hashing: embed.Hashing{Dims: 4}, errs: tt.errs}
			got, slept := newDelivered(), &sleeps{}
			q := newQueue(t, embed.QueueConfig{Embedder: emb, Deliver: got.deliver, Sleep: slept.sleep, Jitter: func() float64 { return tt.jitter }})

			ids := enqueue(t, q, 0, 3)
			q.Flush()
			got.waitFor(t, 3)

			if w := slept.got(); !reflect.DeepEqual(w, tt.waits) {
				t.Errorf("waits = %v; want %v", w, tt.waits)
			}
			if calls := emb.calls(); len(calls) != tt.calls {
				t.Errorf("calls = %v; want %d", calls, tt.calls)
			}
			got.checkOnce(t, ids)
			for _, id := range ids {
				vec, err := got.vecs[id], got.errs[id]
				switch {
				case tt.ok && (vec == nil || err != nil):
					t.Errorf("%s delivered %v, %v; want its vector", id, vec, err)
				case !tt.ok && (vec != nil || err == nil):
					t.Errorf("%s delivered %v, %v; want no vector and the error", id, vec, err)
				case !tt.ok && !strings.Contains(err.Error(), "batch of 3 not embedded"):
					t.Errorf("%s error = %v; want it to say the batch was not embedded", id, err)
				}
			}
		})
	}
}

func TestQueueOverTheWire(t *testing.T) {
	s := embedtest.New(t)
	s.RequireKey(testKey)
	s.Fail(embedtest.RateLimited("3"), embedtest.WrongDimensions(7), embedtest.Malformed(`{"data":`))
	c := newClient(t, s, 12)
	got, slept := newDelivered(), &sleeps{}
	q := newQueue(t, embed.QueueConfig{Embedder: c, Deliver: got.deliver, Sleep: slept.sleep, Jitter: func() float64 { return 0 }})

	ids := enqueue(t, q, 0, 40)
	q.Flush()
	got.waitFor(t, 40)

	// The first batch (32) met the three faults and passed on its 4th try;
	// the 8 left went in one more call.
	if w, want := slept.got(), []time.Duration{3 * time.Second, 2 * time.Second, 4 * time.Second}; !reflect.DeepEqual(w, want) {
		t.Errorf("waits = %v; want %v (Retry-After 3 s over the 1 s base, then 2 s, 4 s)", w, want)
	}
	var sizes []int
	for _, r := range s.Requests() {
		sizes = append(sizes, len(r.Inputs()))
	}
	if want := []int{32, 32, 32, 32, 8}; !reflect.DeepEqual(sizes, want) {
		t.Errorf("request sizes = %v; want %v", sizes, want)
	}
	got.checkOnce(t, ids)
	for _, id := range ids {
		if len(got.vecs[id]) != 12 || got.errs[id] != nil {
			t.Errorf("%s delivered %d numbers, %v; want a vector of 12", id, len(got.vecs[id]), got.errs[id])
		}
	}
}

func TestQueueFinalFailureOverTheWire(t *testing.T) {
	s := embedtest.New(t)
	s.Fail(embedtest.ServerError(), embedtest.ServerError(), embedtest.ServerError(), embedtest.ServerError())
	c := newClient(t, s, 12)
	got, slept := newDelivered(), &sleeps{}
	q := newQueue(t, embed.QueueConfig{Embedder: c, Deliver: got.deliver, Sleep: slept.sleep, Jitter: func() float64 { return 0 }})

	ids := enqueue(t, q, 0, 2)
	q.Flush()
	got.waitFor(t, 2)

	got.checkOnce(t, ids)
	for _, id := range ids {
		if err := got.errs[id]; got.vecs[id] != nil || openai.KindOf(err) != openai.KindServerError || !strings.Contains(err.Error(), "HTTP 500") {
			t.Errorf("%s delivered %v, %v; want no vector and the last HTTP 500", id, got.vecs[id], err)
		}
	}
	if n := len(s.Requests()); n != 4 {
		t.Errorf("requests = %d; want 4 (one and 3 retries)", n)
	}
}

func TestQueueIsBounded(t *testing.T) {
	emb := &scripted{Hashing: embed.Hashing{Dims: 4}, block: make(chan struct{})}
	got := newDelivered()
	q := newQueue(t, embed.QueueConfig{Embedder: emb, Deliver: got.deliver, BatchSize: 2, MaxPending: 5})

	ids := enqueue(t, q, 0, 5) // the first 2 are in a call that hangs

	err := q.Enqueue("chunk-5", "one too many")
	if !errors.Is(err, embed.ErrQueueFull) || !strings.Contains(err.Error(), `"chunk-5"`) || !strings.Contains(err.Error(), "store it without a vector") {
		t.Errorf("Enqueue past the bound = %v; want ErrQueueFull naming the item and what to do", err)
	}
	close(emb.block)
	q.Flush()
	got.waitFor(t, 5)
	got.checkOnce(t, ids)
	if err := q.Enqueue("chunk-6", "room again"); err != nil {
		t.Errorf("Enqueue once the queue drained = %v; want it accepted", err)
	}
	if got.times["chunk-5"] != 0 {
		t.Error("a refused item was delivered; want Deliver only for accepted items")
	}
}

func TestQueueRefusals(t *testing.T) {
	got := newDelivered()
	q := newQueue(t, embed.QueueConfig{Embedder: embed.Hashing{Dims: 4}, Deliver: got.deliver})
	for _, text := range []string{"", "  \n\t "} {
		if err := q.Enqueue("blank", text); !errors.Is(err, embed.ErrEmptyText) {
			t.Errorf("Enqueue(%q) = %v; want ErrEmptyText", text, err)
		}
	}
	if err := q.Close(t.Context()); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if err := q.Enqueue("late", "after close"); !errors.Is(err, embed.ErrQueueClosed) {
		t.Errorf("Enqueue after Close = %v; want ErrQueueClosed", err)
	}
	if got.count() != 0 {
		t.Errorf("%d items delivered; want none (all refused)", got.count())
	}
	if _, err := embed.NewQueue(embed.QueueConfig{Embedder: embed.Hashing{Dims: 4}}); err == nil {
		t.Error("NewQueue without Deliver = nil error; want a refusal")
	}
}

func TestQueueCloseDrains(t *testing.T) {
	emb := &scripted{Hashing: embed.Hashing{Dims: 4}}
	got := newDelivered()
	q := newQueue(t, embed.QueueConfig{Embedder: emb, Deliver: got.deliver})
	ids := enqueue(t, q, 0, 40)

	if err := q.Close(t.Context()); err != nil {
		t.Fatalf("Close = %v", err)
	}

	if got.count() != 40 || q.Outstanding() != 0 {
		t.Errorf("after Close: %d delivered, %d outstanding; want all 40 delivered", got.count(), q.Outstanding())
	}
	got.checkOnce(t, ids)
	for _, id := range ids {
		if got.vecs[id] == nil {
			t.Errorf("%s delivered without a vector: %v", id, got.errs[id])
		}
	}
	if err := q.Close(t.Context()); err != nil {
		t.Errorf("second Close = %v; want nil", err)
	}
}

func TestQueueCloseCancelsWhenItsContextEnds(t *testing.T) {
	for _, during := range []string{"a call", "a wait"} {
		t.Run(during, func(t *testing.T) {
			emb := &scripted{Hashing: embed.Hashing{Dims: 4}, block: make(chan struct{})}
			cfg := embed.QueueConfig{Embedder: emb, Sleep: func(ctx context.Context, _ time.Duration) error { <-ctx.Done(); return ctx.Err() }}
			if during == "a wait" {
				close(emb.block)
				emb.errs = []error{serverError()}
			}
			got := newDelivered()
			cfg.Deliver = got.deliver
			q := newQueue(t, cfg)
			ids := enqueue(t, q, 0, 40) // the first 32 go out at once
			deadline := time.Now().Add(10 * time.Second)
			for len(emb.calls()) == 0 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			ctx, cancel := context.WithCancel(t.Context())
			cancel()

			err := q.Close(ctx)

			if !errors.Is(err, context.Canceled) {
				t.Errorf("Close = %v; want context.Canceled", err)
			}
			if got.count() != 40 || q.Outstanding() != 0 {
				t.Fatalf("after Close: %d delivered, %d outstanding; want all 40 delivered", got.count(), q.Outstanding())
			}
			got.checkOnce(t, ids)
			for _, id := range ids {
				if got.vecs[id] != nil || !errors.Is(got.errs[id], context.Canceled) {
					t.Errorf("%s delivered %v, %v; want no vector and a cancellation", id, got.vecs[id], got.errs[id])
				}
			}
			if n := len(emb.calls()); n != 1 {
				t.Errorf("calls = %d; want 1 (nothing sent after the cancellation)", n)
			}
		})
	}
}

// refusing answers 400 to any batch holding a text that starts with "TOO LONG".
type refusing struct {
	embed.Hashing
	mu      sync.Mutex
	batches []int
}

func (r *refusing) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	r.mu.Lock()
	r.batches = append(r.batches, len(texts))
	r.mu.Unlock()
	for _, t := range texts {
		if strings.HasPrefix(t, "TOO LONG") {
			return nil, &openai.APIError{Kind: openai.KindBadRequest, Status: 400, Message: "maximum context length is 8192 tokens"}
		}
	}
	return r.Hashing.Embed(ctx, texts)
}

func TestQueueOneRefusedTextCostsNoOtherItsVector(t *testing.T) {
	emb := &refusing{Hashing: embed.Hashing{Dims: 4}}
	got, slept := newDelivered(), &sleeps{}
	q := newQueue(t, embed.QueueConfig{Embedder: emb, Deliver: got.deliver, Sleep: slept.sleep})
	ids := enqueue(t, q, 0, 2)
	if err := q.Enqueue("huge", "TOO LONG "+strings.Repeat("word ", 10000)); err != nil {
		t.Fatal(err)
	}
	ids = append(ids, "huge")
	q.Flush()
	got.waitFor(t, 3)

	got.checkOnce(t, ids)
	for _, id := range ids[:2] {
		if got.vecs[id] == nil {
			t.Errorf("%s delivered without a vector (%v); want one: only the refused text should lack it", id, got.errs[id])
		}
	}
	if err := got.errs["huge"]; got.vecs["huge"] != nil || openai.KindOf(err) != openai.KindBadRequest || !strings.Contains(err.Error(), "8192 tokens") {
		t.Errorf("huge delivered %v, %v; want no vector and the provider's refusal", got.vecs["huge"], err)
	}
	emb.mu.Lock()
	defer emb.mu.Unlock()
	if !reflect.DeepEqual(emb.batches, []int{3, 1, 1, 1}) || len(slept.got()) != 0 {
		t.Errorf("calls = %v, waits %v; want the batch of 3, then each alone, without waiting", emb.batches, slept.got())
	}
}
