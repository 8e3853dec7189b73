// Package lease grants choird's exclusive resources (§6.4): workspaces, git
// identities, Notion integrations, email accounts shared exclusively, DMs
// and browser contexts. A start takes every lease it needs at once or none
// of them; a refusal names the resource and the agent holding it. One agent
// runs at most once (Design Invariant 11). Leases end with the session:
// stop, crash or terminate.
//
// The table lives in memory; choird rebuilds it at start from the sessions
// Postgres records as active, after marking those whose containers are gone
// as crashed.
package lease

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Kind is a class of exclusive resource.
type Kind string

// The exclusive kinds of §6.4.
const (
	Workspace   Kind = "workspace"
	GitIdentity Kind = "git_identity"
	Notion      Kind = "notion"
	Email       Kind = "email"
	DM          Kind = "dm"
	Browser     Kind = "browser_context"
)

// Resource is one named exclusive resource.
type Resource struct {
	Kind Kind
	Name string
}

func (r Resource) String() string {
	return fmt.Sprintf("%s %q", strings.ReplaceAll(string(r.Kind), "_", " "), r.Name)
}

// ErrAlreadyRunning refuses a second start of a running agent.
var ErrAlreadyRunning = errors.New("agent is already running")

// ConflictError refuses a start because another agent holds a resource.
type ConflictError struct {
	Resource Resource
	Holder   string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s is leased to agent %q; stop it or choose another %s", e.Resource, e.Holder, strings.ReplaceAll(string(e.Resource.Kind), "_", " "))
}

// Table holds the current leases. It is safe for concurrent use.
type Table struct {
	mu      sync.Mutex
	holders map[Resource]string   // resource → agent
	held    map[string][]Resource // agent → its resources
}

// NewTable returns an empty table.
func NewTable() *Table {
	return &Table{holders: map[Resource]string{}, held: map[string][]Resource{}}
}

// Acquire leases every resource to agent, or none: it refuses when the agent
// already holds leases (it is running) or when any resource is held by
// another agent, naming the first such resource in a stable order.
func (t *Table) Acquire(agent string, rs []Resource) error {
	rs = canonical(rs)
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, running := t.held[agent]; running {
		return fmt.Errorf("agent %q: %w", agent, ErrAlreadyRunning)
	}
	for _, r := range rs {
		if h, ok := t.holders[r]; ok {
			return &ConflictError{Resource: r, Holder: h}
		}
	}
	for _, r := range rs {
		t.holders[r] = agent
	}
	t.held[agent] = rs
	return nil
}

// Release ends every lease the agent holds; releasing twice is harmless.
func (t *Table) Release(agent string) []Resource {
	t.mu.Lock()
	defer t.mu.Unlock()
	rs := t.held[agent]
	for _, r := range rs {
		delete(t.holders, r)
	}
	delete(t.held, agent)
	return rs
}

// Holder returns the agent leasing r, if any.
func (t *Table) Holder(r Resource) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h, ok := t.holders[r]
	return h, ok
}

// Held returns the resources an agent holds, sorted.
func (t *Table) Held(agent string) []Resource {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Resource(nil), t.held[agent]...)
}

// canonical sorts and deduplicates a resource list.
func canonical(rs []Resource) []Resource {
	out := append([]Resource(nil), rs...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Name < out[j].Name
	})
	k := 0
	for i, r := range out {
		if i == 0 || r != out[k-1] {
			out[k] = r
			k++
		}
	}
	return out[:k]
}
