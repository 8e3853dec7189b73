package embed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"choir/internal/logs"
	"choir/internal/openai"
)

// The queue's defaults (§11.9).
const (
	DefaultMaxPending = 10000
	DefaultRetries    = 3
	DefaultBaseDelay  = time.Second
	// DefaultMaxWait caps one wait between attempts, a Retry-After included.
	DefaultMaxWait = time.Minute
)

// Errors of Enqueue, for errors.Is.
var (
	ErrQueueFull   = errors.New("embedding queue full")
	ErrQueueClosed = errors.New("embedding queue closed")
	ErrEmptyText   = errors.New("empty text")
)

// Log keys of the queue's lines.
const (
	keyItems   = "items"
	keyAttempt = "attempt"
	keyWait    = "wait"
	keyModel   = "model"
)

// QueueConfig configures a Queue. Embedder and Deliver are required.
type QueueConfig struct {
	Embedder Embedder
	// Deliver receives each accepted item once, from the queue's goroutine:
	// its vector and a nil error, or a nil vector and the reason it has none.
	// It should return quickly; the next batch waits for it.
	Deliver func(id string, vec []float32, err error)
	// BatchSize is the most texts per Embed call, and the count of pending
	// items that starts a call without a Flush. Zero means MaxBatch.
	BatchSize int
	// MaxPending bounds the items accepted and not yet delivered. Zero means
	// DefaultMaxPending.
	MaxPending int
	// Retries after a failed call: zero means DefaultRetries, negative none.
	Retries int
	// BaseDelay is the wait before the first retry, doubled for each next
	// one; zero means DefaultBaseDelay. Each wait gets a random extra of up
	// to half of itself.
	BaseDelay time.Duration
	// MaxWait caps one wait; zero means DefaultMaxWait.
	MaxWait time.Duration
	// Sleep waits d or until ctx ends, returning ctx's error then. Nil means
	// a timer; tests inject one that records d and returns at once.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter returns a number in [0, 1); nil means math/rand/v2.
	Jitter func() float64
	// Logger gets a warning for each retry and each batch given up; nil
	// means no log.
	Logger *slog.Logger
}

// Queue batches texts for an Embedder (see the package comment). Its methods
// are safe for concurrent use.
type Queue struct {
	cfg    QueueConfig
	ctx    context.Context // canceled when Close gives up waiting
	cancel context.CancelFunc
	wake   chan struct{} // capacity 1: a nudge to the goroutine
	done   chan struct{} // closed when the goroutine has returned

	mu          sync.Mutex
	pending     []item
	outstanding int  // accepted and not yet delivered
	flush       bool // embed what is pending even if short of a batch
	closing     bool
}

type item struct{ id, text string }

// NewQueue starts a queue's goroutine; Close stops it.
func NewQueue(cfg QueueConfig) (*Queue, error) {
	if cfg.Embedder == nil || cfg.Deliver == nil {
		return nil, errors.New("embed: NewQueue needs an Embedder and a Deliver callback")
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = MaxBatch
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = DefaultMaxPending
	}
	switch {
	case cfg.Retries == 0:
		cfg.Retries = DefaultRetries
	case cfg.Retries < 0:
		cfg.Retries = 0
	}
	if cfg.BaseDelay <= 0 {
		cfg.BaseDelay = DefaultBaseDelay
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = DefaultMaxWait
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	if cfg.Jitter == nil {
		cfg.Jitter = rand.Float64
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	q := &Queue{cfg: cfg, wake: make(chan struct{}, 1), done: make(chan struct{})}
	q.ctx, q.cancel = context.WithCancel(context.Background())
	go q.run()
	return q, nil
}

// Enqueue adds a text to embed under id and returns at once. It refuses an
// empty text, and any item once MaxPending items are outstanding or the queue
// is closed: then Deliver is not called, and the caller stores the chunk
// without a vector.
func (q *Queue) Enqueue(id, text string) error {
	if strings.TrimSpace(text) == "" {
		return fmt.Errorf("embed: item %q not queued: %w (there is nothing to embed; store it without a vector)", id, ErrEmptyText)
	}
	q.mu.Lock()
	switch {
	case q.closing:
		q.mu.Unlock()
		return fmt.Errorf("embed: item %q not queued: %w (choird is stopping); store it without a vector", id, ErrQueueClosed)
	case q.outstanding >= q.cfg.MaxPending:
		q.mu.Unlock()
		return fmt.Errorf("embed: item %q not queued: %w, %d items wait for the embeddings endpoint; store it without a vector (text search still finds it) and check that the endpoint answers", id, ErrQueueFull, q.cfg.MaxPending)
	}
	q.pending = append(q.pending, item{id, text})
	q.outstanding++
	full := len(q.pending) >= q.cfg.BatchSize
	q.mu.Unlock()
	if full {
		q.nudge()
	}
	return nil
}

// Flush asks for everything pending to be embedded now, even short of a
// batch, and returns without waiting for it.
func (q *Queue) Flush() {
	q.mu.Lock()
	q.flush = len(q.pending) > 0
	q.mu.Unlock()
	q.nudge()
}

// Outstanding is the number of items accepted and not yet delivered.
func (q *Queue) Outstanding() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.outstanding
}

// Close refuses new items, embeds those pending and returns when every one
// has been delivered. When ctx ends first it cancels the call or wait under
// way, delivers the rest with an error, and returns ctx's error once the
// goroutine has stopped. Calling Close again waits for the same end.
func (q *Queue) Close(ctx context.Context) error {
	q.mu.Lock()
	q.closing = true
	q.mu.Unlock()
	q.nudge()
	select {
	case <-q.done:
		q.cancel()
		return nil
	case <-ctx.Done():
		q.cancel()
		<-q.done
		return fmt.Errorf("embed: queue closed before every item was embedded; the rest were delivered without vectors: %w", ctx.Err())
	}
}

func (q *Queue) nudge() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *Queue) run() {
	defer close(q.done)
	for {
		batch := q.next()
		if batch == nil {
			return
		}
		q.embed(batch)
	}
}

// next waits for a batch to embed: a full one, or what is pending after a
// Flush or Close. It returns nil when the queue is closed and empty.
func (q *Queue) next() []item {
	for {
		q.mu.Lock()
		n := len(q.pending)
		if n >= q.cfg.BatchSize || (n > 0 && (q.flush || q.closing)) {
			n = min(n, q.cfg.BatchSize)
			batch := append([]item(nil), q.pending[:n]...)
			q.pending = append(q.pending[:0], q.pending[n:]...)
			q.mu.Unlock()
			return batch
		}
		q.flush = false
		closing := q.closing
		q.mu.Unlock()
		if closing {
			return nil
		}
		<-q.wake
	}
}

// embed calls the embedder for one batch, retrying as configured, and
// delivers every item.
func (q *Queue) embed(batch []item) {
	texts := make([]string, len(batch))
	for i, it := range batch {
		texts[i] = it.text
	}
	dims := q.cfg.Embedder.Dimensions()
	log := q.cfg.Logger.With(keyItems, len(batch), keyModel, q.cfg.Embedder.Model())
	var err error
	for attempt := 0; ; attempt++ {
		if cerr := q.ctx.Err(); cerr != nil {
			err = closedBefore(err, cerr)
			break
		}
		var vecs [][]float32
		vecs, err = q.cfg.Embedder.Embed(q.ctx, texts)
		if err == nil {
			err = CheckVectors(vecs, len(texts), dims)
		}
		if err == nil {
			for i, it := range batch {
				q.deliver(it.id, vecs[i], nil)
			}
			return
		}
		if attempt == q.cfg.Retries || !Retryable(err) {
			break
		}
		wait := q.backoff(attempt, retryAfter(err))
		log.Warn("embedding call failed; retrying", keyAttempt, attempt+1, keyWait, wait.String(), logs.KeyError, err.Error())
		if serr := q.cfg.Sleep(q.ctx, wait); serr != nil {
			err = closedBefore(err, serr)
			break
		}
	}
	if len(batch) > 1 && openai.KindOf(err) == openai.KindBadRequest && q.ctx.Err() == nil {
		// One text the provider refuses (too long, say) must not cost the
		// others their vectors: try each alone.
		log.Warn("embedding batch refused; embedding its items one by one", logs.KeyError, err.Error())
		for _, it := range batch {
			q.embed([]item{it})
		}
		return
	}
	log.Warn("embedding failed; the chunks are stored without vectors and found by text search", logs.KeyError, err.Error())
	err = fmt.Errorf("embed: batch of %d not embedded: %w", len(batch), err)
	for _, it := range batch {
		q.deliver(it.id, nil, err)
	}
}

// closedBefore is the error of items given up because Close stopped waiting.
func closedBefore(last, cause error) error {
	if last == nil {
		return fmt.Errorf("embed: not embedded, the queue was closed first: %w", cause)
	}
	return fmt.Errorf("embed: not embedded, the queue was closed while retrying (last failure: %v): %w", last, cause)
}

// backoff is the wait before retry attempt+1: BaseDelay·2^attempt plus up to
// half of it again, at least a 429's Retry-After, at most MaxWait.
func (q *Queue) backoff(attempt int, retryAfter time.Duration) time.Duration {
	base := q.cfg.BaseDelay << attempt
	wait := base + time.Duration(q.cfg.Jitter()*float64(base/2))
	return min(max(wait, retryAfter), q.cfg.MaxWait)
}

func (q *Queue) deliver(id string, vec []float32, err error) {
	q.mu.Lock()
	q.outstanding--
	q.mu.Unlock()
	q.cfg.Deliver(id, vec, err)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
