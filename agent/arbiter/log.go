package arbiter

import (
	"context"
	"sync"
	"time"

	"choir/internal/chain"
	"choir/internal/rpc"
)

// chunkSize is how many events one chunk of the log holds. The log grows a
// chunk at a time, so appending never copies a full chunk.
const chunkSize = 4096

// firstChunkCap is the room a new chunk starts with; it doubles up to
// chunkSize. An idle agent holds a few dozen events: a chunk made whole
// at once was 416 KiB of its heap, the largest object in a heap profile.
const firstChunkCap = 64

// commitLog is the in-memory append log. Only the arbiter goroutine appends;
// any goroutine may read. Event rev n is at index n-1-base: a resumed
// session's log holds only the tail after base it was restored with.
type commitLog struct {
	mu     sync.RWMutex
	chunks [][]rpc.Event
	base   int64         // the revision before the first event held
	baseH  string        // its hash
	n      int64         // events committed
	last   string        // hash of event n
	grew   chan struct{} // closed at the next append; nil while nobody waits

	hasher chain.Hasher // arbiter goroutine only
	clock  func() time.Time
	redact func([]byte) []byte // secret values out of a canonical payload
}

// append commits one event of type typ with a canonical payload and
// returns it with its rev, time and hash. Secret values are redacted from
// the payload first, so the hash covers what is stored and replicated.
func (l *commitLog) append(lane, typ string, payload []byte) rpc.Event {
	if l.redact != nil {
		payload = l.redact(payload)
	}
	e := rpc.Event{Type: typ, Lane: lane, Payload: payload, Time: now(l.clock)}
	// Only this goroutine writes n and last, so it may read them unlocked.
	e.Rev = l.n + 1
	e.Hash = l.hasher.Sum(l.last, chain.Event(e), payload)

	l.put(e)
	return e
}

// put adds a committed event to the log; only the arbiter goroutine (or
// Restore, before it runs) calls it.
func (l *commitLog) put(e rpc.Event) {
	l.mu.Lock()
	if (l.n-l.base)%chunkSize == 0 {
		l.chunks = append(l.chunks, make([]rpc.Event, 0, firstChunkCap))
	}
	c := &l.chunks[len(l.chunks)-1]
	if len(*c) == cap(*c) {
		grown := make([]rpc.Event, len(*c), min(2*cap(*c), chunkSize))
		copy(grown, *c)
		*c = grown
	}
	*c = append(*c, e)
	l.n, l.last = e.Rev, e.Hash
	grew := l.grew
	l.grew = nil
	l.mu.Unlock()
	if grew != nil {
		close(grew)
	}
}

// at returns event rev; mu must be held.
func (l *commitLog) at(rev int64) *rpc.Event {
	i := rev - 1 - l.base
	return &l.chunks[i/chunkSize][i%chunkSize]
}

// since returns a copy of the events after rev.
func (l *commitLog) since(rev int64) []rpc.Event { return l.sinceN(rev, -1) }

// sinceN returns a copy of at most max events after rev (every one for a
// negative max).
func (l *commitLog) sinceN(rev int64, max int) []rpc.Event {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if rev < l.base {
		rev = l.base
	}
	end := l.n
	if max >= 0 && rev+int64(max) < end {
		end = rev + int64(max)
	}
	if rev >= end {
		return nil
	}
	out := make([]rpc.Event, 0, end-rev)
	for i := rev - l.base; i < end-l.base; {
		c := l.chunks[i/chunkSize]
		from := int(i % chunkSize)
		to := min(len(c), from+int(end-l.base-i))
		out = append(out, c[from:to]...)
		i += int64(to - from)
	}
	return out
}

// head returns the last rev and its hash.
func (l *commitLog) head() (int64, string) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.n, l.last
}

// hashAt returns the hash of event rev ("" for rev 0).
func (l *commitLog) hashAt(rev int64) (string, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	switch {
	case rev == 0:
		return "", true
	case rev == l.base:
		return l.baseH, true
	case rev < l.base || rev > l.n:
		return "", false
	}
	return l.at(rev).Hash, true
}

// wait blocks until the log holds rev or ctx ends.
func (l *commitLog) wait(ctx context.Context, rev int64) error {
	for {
		l.mu.Lock()
		if l.n >= rev {
			l.mu.Unlock()
			return nil
		}
		if l.grew == nil {
			l.grew = make(chan struct{})
		}
		grew := l.grew
		l.mu.Unlock()
		select {
		case <-grew:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
