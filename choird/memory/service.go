package memory

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"choir/choird/store"
	"choir/internal/embed"
	"choir/internal/logs"
	"choir/internal/rpc"
)

// SessionStore is what the Service needs of choird's store. Writes run
// under the agent's own role (the store's concern).
type SessionStore interface {
	// ChunkedThrough says what memory already holds of a session.
	ChunkedThrough(ctx context.Context, agentID, sessionID string) (store.Chunked, error)
	// EventsPage reads at most max of a session's events after rev.
	EventsPage(ctx context.Context, sessionID string, rev int64, max int) (string, []store.Event, error)
	// SessionOutcome holds the session summary of its last graceful stop.
	SessionOutcome(ctx context.Context, sessionID string) (store.Outcome, error)
	// Sessions lists an agent's sessions, newest first.
	Sessions(ctx context.Context, agentID string, limit int) ([]store.Session, error)
	AddMemory(ctx context.Context, agentID string, docs []store.MemoryDoc) ([]string, error)
	SetMemoryVector(ctx context.Context, agentID, docID string, vec []float32) error
	SetKnowledgeVector(ctx context.Context, agentID, docID, contentHash string, vec []float32) error
	MemoryWithoutVectors(ctx context.Context, agentID string, limit int) ([]store.Unembedded, error)
	PromoteOldSessions(ctx context.Context, agentID string, keep int) ([]string, error)
}

var _ SessionStore = (*store.Store)(nil)

// pageSize is how many events CloseSession reads at a time.
const pageSize = 500

// storeTimeout bounds storing one vector the queue delivered.
const storeTimeout = 30 * time.Second

// Config configures a Service. Store, Embedder and MidTermSessions are
// required.
type Config struct {
	Store    SessionStore
	Embedder embed.Embedder
	// MidTermSessions returns mid_term_sessions of the running config: how
	// many sessions keep their event chunks in mid-term memory.
	MidTermSessions func() int
	Log             *slog.Logger
	// Queue tunes the embedding queue (tests shorten its waits); its
	// Embedder, Deliver and Logger are the Service's.
	Queue embed.QueueConfig
}

// Service is the session-close pipeline (spec 11.8 steps 6-7) and the
// embedding queue that fills in the vectors of memory chunks and knowledge
// documents after they are stored.
type Service struct {
	st    SessionStore
	emb   embed.Embedder
	keep  func() int
	log   *slog.Logger
	queue *embed.Queue

	ctx    context.Context // ends at Close: background closes stop
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex // one session close at a time

	bgMu   sync.Mutex // guards closed and wg.Add
	closed bool

	lastErr error // the last delivery error logged (queue goroutine only)
}

// New starts a Service and its queue; Close stops them.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil || cfg.Embedder == nil || cfg.MidTermSessions == nil {
		return nil, errors.New("memory: New needs a Store, an Embedder and MidTermSessions")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	s := &Service{st: cfg.Store, emb: cfg.Embedder, keep: cfg.MidTermSessions, log: cfg.Log}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	qc := cfg.Queue
	qc.Embedder, qc.Deliver, qc.Logger = cfg.Embedder, s.deliver, cfg.Log
	q, err := embed.NewQueue(qc)
	if err != nil {
		return nil, err
	}
	s.queue = q
	return s, nil
}

// Embedder is the embedder the queue uses, for searches that need the
// vector of a query.
func (s *Service) Embedder() embed.Embedder { return s.emb }

// Flush asks the queue to embed what is pending now (the heartbeat tick).
func (s *Service) Flush() { s.queue.Flush() }

// Close stops taking work, waits for the session closes under way (until
// ctx ends: then they are cancelled and the next start's sweep finishes
// them) and drains the queue (what it cannot embed before ctx ends stays
// without a vector and is queued again at the next start).
func (s *Service) Close(ctx context.Context) error {
	s.bgMu.Lock()
	s.closed = true
	s.bgMu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.cancel()
		<-done
	}
	s.cancel()
	return s.queue.Close(ctx)
}

// Queue ids say which table the vector goes to and whose it is.
const (
	idSep        = "\x1f"
	idMemory     = "memory"
	idKnowledge  = "knowledge"
	keyDocID     = "document_id"
	keyPromoted  = "promoted"
	keyChunks    = "chunks"
	keyStatus    = "status"
	keyTable     = "table"
	keyQueueMiss = "not_queued"
)

// EnqueueKnowledge queues the embedding of a knowledge document's text; the
// vector is stored only if the document still has that text. It never
// blocks; when the queue refuses (full, or choird stopping), the document
// stays without a vector, text search finds it, and the refusal is logged.
func (s *Service) EnqueueKnowledge(agentID, docID, text string) {
	id := strings.Join([]string{idKnowledge, agentID, docID, store.ContentHash(text)}, idSep)
	if err := s.queue.Enqueue(id, text); err != nil {
		s.log.Warn("knowledge document not queued for embedding; text search finds it",
			logs.KeyAgent, agentID, keyDocID, docID, logs.KeyError, err.Error())
	}
}

func (s *Service) enqueueMemory(agentID, docID, text string) error {
	return s.queue.Enqueue(strings.Join([]string{idMemory, agentID, docID}, idSep), text)
}

// deliver stores a vector the queue computed. A failed batch is logged once
// (its items share one error); the chunks stay without vectors, found by
// text search, and are queued again at the next start.
func (s *Service) deliver(id string, vec []float32, err error) {
	f := strings.Split(id, idSep)
	if len(f) < 3 {
		return
	}
	table, agentID, docID := f[0], f[1], f[2]
	if err != nil {
		if err != s.lastErr {
			s.lastErr = err
			s.log.Warn("memory stored without vectors; text search finds it, and the next choird start queues it again",
				logs.KeyAgent, agentID, keyTable, table, logs.KeyError, err.Error())
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	switch table {
	case idMemory:
		err = s.st.SetMemoryVector(ctx, agentID, docID, vec)
	case idKnowledge:
		if len(f) != 4 {
			return
		}
		err = s.st.SetKnowledgeVector(ctx, agentID, docID, f[3], vec)
		if errors.Is(err, store.ErrStaleVector) {
			return // the text changed since; its new text is queued too
		}
	}
	if errors.Is(err, store.ErrNotFound) {
		return // deleted meanwhile
	}
	if err != nil {
		s.log.Warn("store a memory vector failed; the document stays without one (text search finds it)",
			logs.KeyAgent, agentID, keyTable, table, keyDocID, docID, logs.KeyError, err.Error())
	}
}

// SessionEnded runs CloseSession in the background, never blocking the
// caller (the lifecycle's end of a session). Failures are logged; the next
// choird start's Sweep finishes what was left.
func (s *Service) SessionEnded(agentID, sessionID, status string) {
	s.background(func() {
		if err := s.CloseSession(s.ctx, agentID, sessionID); err != nil {
			s.log.Warn("session memory not chunked; the next choird start tries again",
				logs.KeyAgent, agentID, logs.KeySession, sessionID, keyStatus, status, logs.KeyError, err.Error())
		}
	})
}

// background runs f on a goroutine Close waits for, unless Close began.
func (s *Service) background(f func()) {
	s.bgMu.Lock()
	defer s.bgMu.Unlock()
	if s.closed {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// CloseSession is steps 6-7 of spec 11.8 for one session: its events after
// what memory already holds become mid_term chunks, its summary a summary
// chunk when memory does not hold that summary yet, their embeddings are
// queued, and then the agent's oldest sessions past mid_term_sessions are
// promoted. Running it again, for the same end or after a crash half way,
// adds nothing twice (see DESIGN.md, Memory).
func (s *Service) CloseSession(ctx context.Context, agentID, sessionID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.chunkSession(ctx, agentID, sessionID)
	if err != nil {
		return err
	}
	promoted, err := s.st.PromoteOldSessions(ctx, agentID, s.keep())
	if err != nil {
		return err
	}
	if n > 0 || len(promoted) > 0 {
		s.log.Info("session memory chunked", logs.KeyAgent, agentID, logs.KeySession, sessionID,
			keyChunks, n, keyPromoted, strings.Join(promoted, ","))
	}
	return nil
}

// chunkSession adds the session's new chunks and returns how many.
func (s *Service) chunkSession(ctx context.Context, agentID, sessionID string) (int, error) {
	held, err := s.st.ChunkedThrough(ctx, agentID, sessionID)
	if err != nil {
		return 0, err
	}
	added := 0
	next, rev := held.NextIndex, held.ThroughRev
	var pending []rpc.Event // read and not chunked yet: the last, maybe unfinished, chunk
	for {
		_, page, err := s.st.EventsPage(ctx, sessionID, rev, pageSize)
		if err != nil {
			return added, err
		}
		last := len(page) < pageSize
		for _, e := range page {
			pending = append(pending, rpc.Event{Rev: e.Rev, Type: e.Type, Lane: e.Lane, Payload: e.Payload, Hash: e.Hash, Time: e.Time})
		}
		if len(page) > 0 {
			rev = page[len(page)-1].Rev
		}
		chunks := Events(sessionID, pending, next)
		if !last && len(chunks) > 0 {
			// The last chunk may go on in the next page: chunk it again
			// then, from its first event.
			tail := chunks[len(chunks)-1]
			chunks = chunks[:len(chunks)-1]
			i := 0
			for i < len(pending) && pending[i].Rev < tail.Meta.FromRev {
				i++
			}
			pending = append(pending[:0], pending[i:]...)
		} else if last {
			pending = nil
		}
		if err := s.add(ctx, agentID, chunks); err != nil {
			return added, err
		}
		added += len(chunks)
		next += len(chunks)
		if last {
			break
		}
	}
	out, err := s.st.SessionOutcome(ctx, sessionID)
	if err != nil {
		return added, err
	}
	if c, ok := Summary(sessionID, out.Summary, next, rev); ok && store.ContentHash(c.Text) != held.SummaryHash {
		if err := s.add(ctx, agentID, []Chunk{c}); err != nil {
			return added, err
		}
		added++
	}
	return added, nil
}

// add stores chunks as mid_term documents in one transaction and queues
// their embeddings.
func (s *Service) add(ctx context.Context, agentID string, chunks []Chunk) error {
	if len(chunks) == 0 {
		return nil
	}
	docs := make([]store.MemoryDoc, len(chunks))
	for i, c := range chunks {
		docs[i] = doc(c)
	}
	ids, err := s.st.AddMemory(ctx, agentID, docs)
	if err != nil {
		return err
	}
	missed := 0
	for i, id := range ids {
		if s.enqueueMemory(agentID, id, chunks[i].Text) != nil {
			missed++
		}
	}
	if missed > 0 {
		s.log.Warn("memory chunks not queued for embedding (queue full or closing); text search finds them, the next choird start queues them again",
			logs.KeyAgent, agentID, logs.KeySession, chunks[0].Meta.SessionID, keyQueueMiss, missed)
	}
	return nil
}

// doc is a chunk as the store takes it: its revisions are the first and the
// last event of its span; the rest of its provenance rides in metadata.
func doc(c Chunk) store.MemoryDoc {
	d := store.MemoryDoc{SessionID: c.Meta.SessionID, ChunkIndex: c.Index, Kind: c.Meta.Kind, Text: c.Text}
	if c.Meta.Kind == KindEvents {
		d.Revisions = []int64{c.Meta.FromRev}
		if c.Meta.ToRev != c.Meta.FromRev {
			d.Revisions = append(d.Revisions, c.Meta.ToRev)
		}
	}
	m := map[string]any{"from_rev": c.Meta.FromRev, "to_rev": c.Meta.ToRev}
	if len(c.Meta.Lanes) > 0 {
		m["lanes"] = c.Meta.Lanes
	}
	if c.Meta.Skill != "" {
		m["skill"] = c.Meta.Skill
	}
	if c.Meta.Kind == KindSummary {
		delete(m, "from_rev")
	}
	d.Metadata, _ = json.Marshal(m)
	return d
}

// Sweep finishes, at choird's start, what earlier runs left: for each agent
// its last ended sessions (at most mid_term_sessions of them, oldest first;
// older ones would be promoted at once) are closed again, which adds only
// what is missing, and the chunks left without vectors (at most
// maxRequeue per agent) are queued again. Errors are logged per agent and
// session; the sweep goes on.
func (s *Service) Sweep(ctx context.Context, agents []string) {
	for _, a := range agents {
		list, err := s.st.Sessions(ctx, a, max(s.keep(), 1))
		if err != nil {
			s.log.Warn("memory sweep: list sessions failed", logs.KeyAgent, a, logs.KeyError, err.Error())
			continue
		}
		for i := len(list) - 1; i >= 0; i-- {
			if list[i].Status == store.SessionActive {
				continue
			}
			if err := s.CloseSession(ctx, a, list[i].SessionID); err != nil {
				s.log.Warn("memory sweep: session memory not chunked", logs.KeyAgent, a, logs.KeySession, list[i].SessionID, logs.KeyError, err.Error())
			}
		}
		docs, err := s.st.MemoryWithoutVectors(ctx, a, maxRequeue)
		if err != nil {
			s.log.Warn("memory sweep: list chunks without vectors failed", logs.KeyAgent, a, logs.KeyError, err.Error())
			continue
		}
		for _, d := range docs {
			if err := s.enqueueMemory(a, d.ID, d.Text); err != nil {
				break
			}
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// maxRequeue bounds the chunks without vectors the sweep queues again per
// agent (the queue holds embed.DefaultMaxPending).
const maxRequeue = 2000

// SweepInBackground runs Sweep on its own goroutine; Close waits for it.
func (s *Service) SweepInBackground(agents []string) {
	s.background(func() { s.Sweep(s.ctx, agents) })
}
