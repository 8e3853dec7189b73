// Package kb is the local knowledge base of headless runs (seed 002 §2.4,
// spiral 5): the typed objects runs produce (notes, verifier results,
// patches, fetched sources) indexed in pgvector by a short structured
// text, searched by text and vector, answered with pointers (object
// hashes and snippets) and never the objects' content; and the check of
// citations ("sha256:<hex>") against the object store.
//
// The index follows the receipts: Run reads the receipts appended after
// its cursor, stores what they name with the cursor in one transaction
// (so a receipt is indexed once, also across a restart), and queues the
// texts for embedding. An object whose embedding failed is found by text
// and queued again (at start and every RetryEvery).
package kb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"choir/choird/headless"
	"choir/choird/headless/objects"
	"choir/choird/store"
	"choir/internal/embed"
)

// Store is what the KB needs of choird's store (store.Store).
type Store interface {
	KBCursor(ctx context.Context) (int64, error)
	KBReceipts(ctx context.Context, after int64, limit int) ([]store.KBReceipt, error)
	KBIndex(ctx context.Context, through int64, objs []store.KBObject) ([]string, error)
	KBSetVector(ctx context.Context, object, model string, vec []float32) error
	KBWithoutVectors(ctx context.Context, model string, limit int) ([]store.KBObject, error)
	KBDropOtherModels(ctx context.Context, model string) (int64, error)
	KBSearch(ctx context.Context, req store.KBSearchReq) ([]store.KBHit, error)
}

var _ Store = (*store.Store)(nil)

// Tunables.
const (
	// PageSize is how many receipts one step of the index reads.
	PageSize = 500
	// RetryEvery is how often objects without a vector are queued again.
	RetryEvery = 5 * time.Minute
	// backlog bounds the objects queued again at once.
	backlog = 2000
	// pollEvery wakes the loop when nothing kicked it.
	pollEvery = 30 * time.Second
	// queryTimeout bounds embedding a query; past it the search is by
	// text alone.
	queryTimeout = 10 * time.Second
	storeTimeout = 30 * time.Second
)

// Config configures a KB. Store, Objects and Embedder are required.
type Config struct {
	Store    Store
	Objects  *objects.Store
	Embedder embed.Embedder
	Log      *slog.Logger
	// Queue tunes the embedding queue (tests shorten its waits).
	Queue embed.QueueConfig
}

// KB is the knowledge base: its indexer, its embedding queue, search and
// the check of citations.
type KB struct {
	st    Store
	objs  *objects.Store
	emb   embed.Embedder
	log   *slog.Logger
	queue *embed.Queue
	kick  chan struct{}

	mu      sync.Mutex // one CatchUp at a time
	lastErr error      // the last delivery error logged (queue goroutine)
}

// New returns a KB and starts its embedding queue; Close stops it.
func New(cfg Config) (*KB, error) {
	if cfg.Store == nil || cfg.Objects == nil || cfg.Embedder == nil {
		return nil, errors.New("kb: New needs a Store, the object store and an Embedder")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	k := &KB{st: cfg.Store, objs: cfg.Objects, emb: cfg.Embedder, log: cfg.Log, kick: make(chan struct{}, 1)}
	qc := cfg.Queue
	qc.Embedder, qc.Deliver, qc.Logger = cfg.Embedder, k.deliver, cfg.Log
	q, err := embed.NewQueue(qc)
	if err != nil {
		return nil, err
	}
	k.queue = q
	return k, nil
}

// Kick wakes Run to index new receipts (the director calls it after an
// append); it never blocks.
func (k *KB) Kick() {
	select {
	case k.kick <- struct{}{}:
	default:
	}
}

// Close stops the embedding queue (what it cannot embed before ctx ends
// stays without a vector and is queued again at the next start).
func (k *KB) Close(ctx context.Context) error { return k.queue.Close(ctx) }

// Flush asks the queue to embed what is pending now.
func (k *KB) Flush() { k.queue.Flush() }

// Run indexes until ctx ends: first it drops the vectors of another model
// and queues the objects without a vector of this one, then it catches up
// with the receipts whenever kicked (and every 30 s), and queues objects
// without vectors again every RetryEvery.
func (k *KB) Run(ctx context.Context) {
	model := k.emb.Model()
	if n, err := k.st.KBDropOtherModels(ctx, model); err != nil {
		k.log.Warn("kb: vectors of other models not dropped", "error", err.Error())
	} else if n > 0 {
		k.log.Info("kb: vectors of another embedding model dropped; they are made again", "count", n, "model", model)
	}
	k.Requeue(ctx)
	retry := time.NewTicker(RetryEvery)
	defer retry.Stop()
	poll := time.NewTicker(pollEvery)
	defer poll.Stop()
	for {
		if _, err := k.CatchUp(ctx); err != nil && ctx.Err() == nil {
			k.log.Warn("kb: receipts not indexed; tried again later", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-k.kick:
		case <-poll.C:
		case <-retry.C:
			if k.queue.Outstanding() == 0 {
				k.Requeue(ctx)
			}
		}
	}
}

// Requeue queues the objects without a vector of the embedder's model
// (at most 2,000 at a time) and returns how many.
func (k *KB) Requeue(ctx context.Context) int {
	objs, err := k.st.KBWithoutVectors(ctx, k.emb.Model(), backlog)
	if err != nil {
		k.log.Warn("kb: objects without vectors not read", "error", err.Error())
		return 0
	}
	for _, o := range objs {
		k.enqueue(o.Object, o.Text)
	}
	k.queue.Flush()
	return len(objs)
}

func (k *KB) enqueue(object, text string) {
	if err := k.queue.Enqueue(object, text); err != nil {
		k.log.Warn("kb: object not queued for embedding; text search finds it", "object", object, "error", err.Error())
	}
}

// deliver stores a vector the queue computed; a failed batch is logged
// once and its objects stay without vectors, found by text and queued
// again later.
func (k *KB) deliver(object string, vec []float32, err error) {
	if err != nil {
		if err != k.lastErr {
			k.lastErr = err
			k.log.Warn("kb: objects stored without vectors; text search finds them, and they are queued again later", "error", err.Error())
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := k.st.KBSetVector(ctx, object, k.emb.Model(), vec); err != nil {
		k.log.Warn("kb: vector not stored", "object", object, "error", err.Error())
	}
}

// CatchUp indexes the receipts appended since the last call (or the last
// start), page by page, and returns how many objects were new. Notes and
// verifier results are stored in the object store first (Put is
// idempotent), so what is indexed can be cited.
func (k *KB) CatchUp(ctx context.Context) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	cursor, err := k.st.KBCursor(ctx)
	if err != nil {
		return 0, err
	}
	total := 0
	for {
		recs, err := k.st.KBReceipts(ctx, cursor, PageSize)
		if err != nil || len(recs) == 0 {
			return total, err
		}
		var objs []store.KBObject
		texts := map[string]string{}
		for _, r := range recs {
			for _, it := range Items(r.Receipt) {
				if it.Body != nil {
					h, err := k.objs.Put(it.Body)
					if err != nil {
						return total, fmt.Errorf("kb: store receipt %s in the object store: %w", r.Ref(), err)
					}
					it.Object = h
				}
				if _, dup := texts[it.Object]; dup {
					continue
				}
				texts[it.Object] = it.Text
				objs = append(objs, store.KBObject{Object: it.Object, Agent: r.Agent, Run: r.RunID, ReceiptID: r.ID, Kind: it.Kind, Text: it.Text})
			}
		}
		through := recs[len(recs)-1].ID
		added, err := k.st.KBIndex(ctx, through, objs)
		if err != nil {
			return total, err
		}
		for _, o := range added {
			k.enqueue(o, texts[o])
		}
		k.queue.Flush()
		total += len(added)
		cursor = through
	}
}

// Query is one search: Text, with an optional agent and kind, at most
// Limit pointers (0: 10, at most 100).
type Query struct {
	Text  string `json:"query"`
	Agent string `json:"agent,omitempty"`
	Kind  string `json:"kind,omitempty"`
	Limit int    `json:"limit,omitempty"`
}

// Found is a search's answer: pointers, and a note when the search fell
// back to text alone.
type Found struct {
	Pointers []headless.Pointer `json:"pointers"`
	Mode     string             `json:"mode"` // hybrid or text
	Note     string             `json:"note,omitempty"`
}

// Refusal is a query refused for what it is, not for a failure of the
// KB: the admin API answers it as 400.
type Refusal struct{ msg string }

func (e *Refusal) Error() string { return e.msg }

// Search finds objects by the query's words and by its embedding,
// fused by rank; when the embedder fails it searches by text alone and
// says so in Note. It returns pointers, never the objects' content.
func (k *KB) Search(ctx context.Context, q Query) (Found, error) {
	if strings.TrimSpace(q.Text) == "" {
		return Found{}, &Refusal{"kb search: give a query (words to look for)"}
	}
	if len(q.Text) > store.MaxQueryBytes {
		return Found{}, &Refusal{fmt.Sprintf("kb search: the query is %d bytes; at most %d", len(q.Text), store.MaxQueryBytes)}
	}
	if q.Kind != "" && !contains(Kinds, q.Kind) {
		return Found{}, &Refusal{fmt.Sprintf("kb search: kind %q is unknown; use one of %s", clip(q.Kind, 60), strings.Join(Kinds, ", "))}
	}
	if q.Agent != "" && !agentRE.MatchString(q.Agent) {
		return Found{}, &Refusal{fmt.Sprintf("kb search: agent %q is not an agent id; name one from config.json", clip(q.Agent, 60))}
	}
	if q.Limit < 0 || q.Limit > store.MaxSearchLimit {
		return Found{}, &Refusal{fmt.Sprintf("kb search: limit %d: want 1 to %d", q.Limit, store.MaxSearchLimit)}
	}
	req := store.KBSearchReq{Query: q.Text, Agent: q.Agent, Kind: q.Kind, Limit: q.Limit}
	found := Found{Mode: "hybrid"}
	ectx, cancel := context.WithTimeout(ctx, queryTimeout)
	vecs, err := k.emb.Embed(ectx, []string{q.Text})
	cancel()
	if err == nil {
		err = embed.CheckVectors(vecs, 1, k.emb.Dimensions())
	}
	if err != nil {
		found.Mode, found.Note = "text", "searched by text only: the query could not be embedded ("+clip(err.Error(), 200)+")"
	} else {
		req.Vector = vecs[0]
	}
	hits, err := k.st.KBSearch(ctx, req)
	if err != nil {
		return Found{}, err
	}
	found.Pointers = make([]headless.Pointer, len(hits))
	for i, h := range hits {
		found.Pointers[i] = headless.Pointer{Object: h.Object, Kind: h.Kind, Snippet: Snippet(h.Text), Score: h.Score}
	}
	return found, nil
}

// Evidence is Search for the context pack: an agent's pointers for a
// query (the runner's Evidence hook).
//
// A work item's text is long, and the text half of a search wants every
// word of its query: here the words (at most 32 distinct ones of three
// letters or more) are joined with "or", so an object that shares any of
// them is found and ranked by how many (the vector half embeds those
// words too).
func (k *KB) Evidence(ctx context.Context, agent, query string, limit int) ([]headless.Pointer, error) {
	f, err := k.Search(ctx, Query{Text: orQuery(query), Agent: agent, Limit: limit})
	return f.Pointers, err
}

// orQuery joins the distinct words of s with " or " for
// websearch_to_tsquery.
func orQuery(s string) string {
	seen := map[string]bool{}
	var words []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if utf8.RuneCountInString(w) < 3 || seen[w] || w == "or" {
			continue
		}
		seen[w] = true
		if words = append(words, w); len(words) == 32 {
			break
		}
	}
	return clip(strings.Join(words, " or "), store.MaxQueryBytes)
}

// agentRE is what config.json allows as an agent id.
var agentRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
