package headless

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// MemStore is a Store in memory, for tests and tools; choird keeps its
// rows in Postgres (choird/store). It keeps the same promises.
type MemStore struct {
	mu       sync.Mutex
	items    []WorkItem
	runs     []Run
	receipts []memReceipt // in append order
	Now      func() time.Time
}

type memReceipt struct {
	Receipt
	key, hash string
}

var _ Store = (*MemStore)(nil)

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore { return &MemStore{} }

func (m *MemStore) now() time.Time {
	if m.Now != nil {
		return m.Now().UTC()
	}
	return time.Now().UTC()
}

func clone(it WorkItem) WorkItem {
	it.Acceptance, it.Verifiers, it.DependsOn = slices.Clone(it.Acceptance), slices.Clone(it.Verifiers), slices.Clone(it.DependsOn)
	return it
}

func (m *MemStore) item(id string) int {
	return slices.IndexFunc(m.items, func(it WorkItem) bool { return it.ID == id })
}

func (m *MemStore) run(id string) int {
	return slices.IndexFunc(m.runs, func(r Run) bool { return r.ID == id })
}

func (m *MemStore) InsertWorkItems(ctx context.Context, items []WorkItem, splitParent string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := -1
	if splitParent != "" {
		if p = m.item(splitParent); p < 0 {
			return fmt.Errorf("work item %s: %w", splitParent, ErrNotFound)
		}
	}
	for _, it := range items {
		if m.item(it.ID) >= 0 {
			return fmt.Errorf("work item %s: %w", it.ID, ErrExists)
		}
	}
	for _, it := range items {
		m.items = append(m.items, clone(it))
	}
	if p >= 0 {
		m.items[p].Status, m.items[p].Updated = WorkSplit, m.now()
	}
	return nil
}

func (m *MemStore) UpdateWorkItem(ctx context.Context, it WorkItem) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := m.item(it.ID)
	if i < 0 {
		return fmt.Errorf("work item %s: %w", it.ID, ErrNotFound)
	}
	it.Created, it.Agent, it.Parent = m.items[i].Created, m.items[i].Agent, m.items[i].Parent
	m.items[i] = clone(it)
	return nil
}

func (m *MemStore) WorkItem(ctx context.Context, id string) (WorkItem, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := m.item(id)
	if i < 0 {
		return WorkItem{}, fmt.Errorf("work item %s: %w", id, ErrNotFound)
	}
	return clone(m.items[i]), nil
}

func (m *MemStore) WorkItems(ctx context.Context) ([]WorkItem, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]WorkItem, len(m.items))
	for i, it := range m.items {
		out[i] = clone(it)
	}
	return out, nil
}

func (m *MemStore) InsertRun(ctx context.Context, r Run) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := m.item(r.WorkItem)
	if i < 0 {
		return fmt.Errorf("work item %s: %w", r.WorkItem, ErrNotFound)
	}
	if m.run(r.ID) >= 0 {
		return fmt.Errorf("run %s: %w", r.ID, ErrExists)
	}
	for _, o := range m.runs {
		if o.WorkItem == r.WorkItem && !o.Status.Ended() {
			return fmt.Errorf("work item %s: run %s: it %w", r.WorkItem, o.ID, ErrActiveRun)
		}
	}
	m.runs = append(m.runs, r)
	m.items[i].Status, m.items[i].Updated = WorkRunning, m.now()
	return nil
}

func (m *MemStore) Run(ctx context.Context, id string) (Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := m.run(id)
	if i < 0 {
		return Run{}, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	return m.runs[i], nil
}

func (m *MemStore) Runs(ctx context.Context, agent, workItem string) ([]Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []Run{}
	for i := len(m.runs) - 1; i >= 0; i-- {
		r := m.runs[i]
		if (agent == "" || r.Agent == agent) && (workItem == "" || r.WorkItem == workItem) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (m *MemStore) RunsIn(ctx context.Context, statuses ...RunStatus) ([]Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []Run{}
	for _, r := range m.runs {
		if slices.Contains(statuses, r.Status) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (m *MemStore) Append(ctx context.Context, a Append) (Receipt, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if a.Key != "" {
		for _, rec := range m.receipts {
			if rec.RunID == a.RunID && rec.key == a.Key {
				if rec.hash != a.KeyHash {
					return Receipt{}, false, fmt.Errorf("key %q: %w", a.Key, ErrKeyReused)
				}
				return rec.Receipt, false, nil
			}
		}
	}
	i := m.run(a.RunID)
	if i < 0 {
		return Receipt{}, false, fmt.Errorf("run %s: %w", a.RunID, ErrNotFound)
	}
	r := &m.runs[i]
	if r.Status != a.From {
		return Receipt{}, false, fmt.Errorf("run %s is %s, not %s: %w", r.ID, r.Status, a.From, ErrConflict)
	}
	var seq int64 = 1
	for _, rec := range m.receipts {
		if rec.RunID == a.RunID {
			seq = rec.Seq + 1
		}
	}
	rec := Receipt{Seq: seq, RunID: a.RunID, Kind: a.Kind, Body: slices.Clone(a.Body), Objects: slices.Clone(a.Objects), At: m.now()}
	m.receipts = append(m.receipts, memReceipt{Receipt: rec, key: a.Key, hash: a.KeyHash})
	if a.To != "" {
		r.Status = a.To
		if a.To.Ended() {
			r.Ended = rec.At
		}
	}
	if a.Base != "" {
		r.Base, r.Worktree = a.Base, a.Worktree
	}
	if a.WorkItem != "" {
		if j := m.item(r.WorkItem); j >= 0 {
			m.items[j].Status, m.items[j].Updated = a.WorkItem, rec.At
		}
	}
	return rec, true, nil
}

func (m *MemStore) ReceiptByKey(ctx context.Context, runID, key string) (Receipt, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, rec := range m.receipts {
		if rec.RunID == runID && rec.key == key {
			return rec.Receipt, rec.hash, nil
		}
	}
	return Receipt{}, "", fmt.Errorf("run %s key %q: %w", runID, key, ErrNotFound)
}

func (m *MemStore) Receipts(ctx context.Context, runID string, after int64) ([]Receipt, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []Receipt{}
	for _, rec := range m.receipts {
		if rec.RunID == runID && rec.Seq > after {
			out = append(out, rec.Receipt)
		}
	}
	return out, nil
}

func (m *MemStore) AllReceipts(ctx context.Context, agent string) ([]Receipt, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	agentOf := map[string]string{}
	for _, r := range m.runs {
		agentOf[r.ID] = r.Agent
	}
	out := []Receipt{}
	for _, rec := range m.receipts {
		if agent == "" || agentOf[rec.RunID] == agent {
			out = append(out, rec.Receipt)
		}
	}
	return out, nil
}
