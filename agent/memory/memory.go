package memory

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"

	"choir/internal/openai"
)

// Defaults of Config.
const (
	DefaultWindow           = 50
	DefaultThresholdPercent = 80
	DefaultContextWindow    = 128000
	// ManualKeep is how many of the newest entries a manual compaction
	// leaves in the window.
	ManualKeep = 4
)

// Errors of compaction.
var (
	// ErrNothingToCompact: the window holds nothing that may be folded.
	ErrNothingToCompact = errors.New("memory: nothing to compact")
	// ErrNoModel: the memory was built without a model to compact with.
	ErrNoModel = errors.New("memory: no model to compact with")
)

// Entry is one committed event of a lane as the lane's prompts show it.
type Entry struct {
	Rev  int64
	Hash string
	Type string
	Msg  openai.Message
}

// Tokens estimates the entry's size in the prompt: bytes / 4 (see the
// package comment).
func (e Entry) Tokens() int { return MessageTokens(e.Msg) }

// MessageTokens estimates a message's tokens as its bytes / 4, rounded up,
// plus 4 for the message's framing.
func MessageTokens(m openai.Message) int {
	n := len(m.Content) + len(m.ToolCallID)
	for _, c := range m.ToolCalls {
		n += len(c.ID) + len(c.Name) + len(c.Arguments)
	}
	return Tokens(n) + 4
}

// Tokens estimates the tokens of n bytes: n / 4, rounded up.
func Tokens(n int) int { return (n + 3) / 4 }

// Config is what a Memory works with.
type Config struct {
	// Lane names the lane ("edge" or "core:<job>") in compaction prompts,
	// commits and notices.
	Lane string
	// Window is N, the events a prompt shows before the pinned entry
	// (all after it are shown); default DefaultWindow.
	Window int
	// ThresholdPercent of the context window minus the fixed content is
	// the compactable content that triggers compaction; default
	// DefaultThresholdPercent.
	ThresholdPercent int
	// ContextWindow returns the lane model's context window in tokens,
	// read at each measure; nil or 0 means DefaultContextWindow.
	ContextWindow func() int
	// Chat makes the compaction model call: the lane's call, which applies
	// its model settings, timeout and token budget. nil disables
	// compaction.
	Chat func(ctx context.Context, req openai.ChatRequest) (*openai.ChatResponse, error)
	// Resolve maps an event reference (a hash or a prefix of at least 8
	// hex digits) to the full hash of an event of the session.
	Resolve func(ref string) (hash string, ok bool)
	// Commit records an applied compaction (MemoryWriteCommitted); an error
	// keeps the old summary. nil commits nothing.
	Commit func(ctx context.Context, w Write) error
	// Notify tells the user that compaction happened; nil tells no one.
	Notify func(msg string)
	// Log receives failures; nil discards them.
	Log *slog.Logger
}

// Memory is the working memory of one lane: its event window and its
// reference summary. It is safe for concurrent use.
type Memory struct {
	cfg Config

	mu      sync.Mutex
	entries []Entry        // not folded, in revision order
	pin     int64          // the pinned entry's revision, 0 for none
	folded  int64          // the newest revision ever folded
	kept    map[int64]bool // revisions at or below folded still unfolded (restored)
	sum     Summary
	writes  int // applied deltas
	run     *compaction
}

// New returns an empty memory.
func New(cfg Config) *Memory {
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.ThresholdPercent <= 0 || cfg.ThresholdPercent > 100 {
		cfg.ThresholdPercent = DefaultThresholdPercent
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Memory{cfg: cfg}
}

// Add appends a committed event of the lane. pin marks the entry never
// compacted (the user message being answered); it unpins the one before,
// which becomes compactable. Entries come in revision order; one at or
// below a revision already added is ignored.
func (m *Memory) Add(e Entry, pin bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := len(m.entries); n > 0 && e.Rev <= m.entries[n-1].Rev {
		return
	}
	if e.Rev <= m.folded && !pin && !m.kept[e.Rev] {
		return // folded before a restart; the summary holds it
	}
	m.entries = append(m.entries, e)
	if pin {
		m.pin = e.Rev
	}
}

// Pinned returns the pinned entry's revision, 0 for none.
func (m *Memory) Pinned() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pin
}

// View returns the summary and the event window: the last Window entries
// before the pinned one, the pinned one, and every entry after it; with no
// pin, the last Window entries. Entries that rolled out of the window
// without being folded yet are folded by the next compaction.
func (m *Memory) View() (Summary, []Entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sum.Clone(), slices.Clone(m.window())
}

// window is View's entries, with mu held; it aliases m.entries.
func (m *Memory) window() []Entry {
	at := len(m.entries)
	if m.pin != 0 {
		if i := m.index(m.pin); i >= 0 {
			at = i
		}
	}
	return m.entries[max(0, at-m.cfg.Window):]
}

func (m *Memory) index(rev int64) int {
	i, ok := slices.BinarySearchFunc(m.entries, rev, func(e Entry, r int64) int {
		switch {
		case e.Rev < r:
			return -1
		case e.Rev > r:
			return 1
		}
		return 0
	})
	if !ok {
		return -1
	}
	return i
}

// Summary returns the reference summary.
func (m *Memory) Summary() Summary {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sum.Clone()
}

// Usage describes the window's size against its threshold.
type Usage struct {
	// Compactable is the estimated tokens of the window's compactable
	// entries (all but the pinned one).
	Compactable int
	// Threshold is ThresholdPercent of (context window - fixed).
	Threshold int
	// Entries is how many entries are not folded; RolledOff how many of
	// them are older than the window shows.
	Entries, RolledOff int
}

// Measure sizes the window against the threshold given the tokens of the
// lane's fixed, never-compacted content (system prompt, identity files,
// the pinned message, CoreJobStart, tool schemas).
func (m *Memory) Measure(fixed int) Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.measure(fixed)
}

func (m *Memory) measure(fixed int) Usage {
	u := Usage{Entries: len(m.entries), Threshold: m.threshold(fixed)}
	win := m.window()
	u.RolledOff = len(m.entries) - len(win)
	for _, e := range win {
		if e.Rev != m.pin {
			u.Compactable += e.Tokens()
		}
	}
	return u
}

func (m *Memory) threshold(fixed int) int {
	return max(0, m.contextWindow()-fixed) * m.cfg.ThresholdPercent / 100
}

func (m *Memory) contextWindow() int {
	if m.cfg.ContextWindow != nil {
		if n := m.cfg.ContextWindow(); n > 0 {
			return n
		}
	}
	return DefaultContextWindow
}

// Compacting reports whether a compaction call is in flight.
func (m *Memory) Compacting() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.run != nil
}

// Maybe starts an automatic compaction when the window's compactable
// content passes the threshold or entries have rolled out of the window
// unfolded, and none is in flight. It returns at once: the lane goes on
// while the model folds. ctx bounds the compaction (the lane's lifetime).
func (m *Memory) Maybe(ctx context.Context, fixed int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.run != nil || m.cfg.Chat == nil {
		return false
	}
	u := m.measure(fixed)
	if u.Compactable <= u.Threshold && u.RolledOff == 0 {
		return false
	}
	// Fold down to half the window and half the threshold, so that the
	// next compaction is some way off.
	sel := m.selectAuto(u.Threshold/2, m.cfg.Window/2)
	if len(sel) == 0 {
		return false
	}
	m.start(ctx, sel, "automatic", nil)
	return true
}

// Compact starts a manual compaction (choir.memory.compact, /compact,
// choirctl session compact) that folds every entry but the pinned one and
// the newest ManualKeep; it joins one in flight. The channel receives the
// outcome once and is closed. ErrNothingToCompact comes at once when there
// is nothing to fold.
func (m *Memory) Compact(ctx context.Context) <-chan error {
	done := make(chan error, 1)
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.cfg.Chat == nil:
		done <- ErrNoModel
	case m.run != nil:
		m.run.waiters = append(m.run.waiters, done)
		return done
	default:
		var sel []Entry
		for i, e := range m.entries {
			if i >= len(m.entries)-ManualKeep {
				break
			}
			if e.Rev != m.pin {
				sel = append(sel, e)
			}
		}
		if len(sel) == 0 {
			done <- ErrNothingToCompact
			break
		}
		m.start(ctx, sel, "manual", done)
		return done
	}
	close(done)
	return done
}

// selectAuto picks the oldest unpinned entries to fold so that what stays
// has at most keepTokens compactable tokens and keepCount entries before
// the pin, with mu held.
func (m *Memory) selectAuto(keepTokens, keepCount int) []Entry {
	total, before := 0, 0
	for _, e := range m.entries {
		if e.Rev == m.pin {
			continue
		}
		total += e.Tokens()
		if m.pin == 0 || e.Rev < m.pin {
			before++
		}
	}
	var sel []Entry
	for _, e := range m.entries {
		if total <= keepTokens && before <= keepCount {
			break
		}
		if e.Rev == m.pin {
			continue
		}
		sel = append(sel, e)
		total -= e.Tokens()
		if m.pin == 0 || e.Rev < m.pin {
			before--
		}
	}
	return sel
}

// fold removes the folded entries and swaps in the new summary, with mu
// held.
func (m *Memory) fold(sel []Entry, sum Summary) {
	gone := make(map[int64]bool, len(sel))
	for _, e := range sel {
		gone[e.Rev] = true
		m.folded = max(m.folded, e.Rev)
	}
	m.entries = slices.DeleteFunc(m.entries, func(e Entry) bool { return gone[e.Rev] })
	m.sum = sum
	m.writes++
}
