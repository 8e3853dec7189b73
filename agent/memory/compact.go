package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"choir/internal/logs"
	"choir/internal/openai"
)

// DeltaTool is the one function a compaction call offers and requires: its
// arguments are the memory delta.
const DeltaTool = "memory_delta"

// Bounds of a compaction prompt.
const (
	// maxEntryBytes is how much of one event a compaction prompt shows.
	maxEntryBytes = 2048
	// idLen is how many hex digits of an event hash identify it in a
	// compaction prompt; references may use them.
	idLen = 12
)

// Write is an applied compaction as the lane commits it
// (MemoryWriteCommitted): which revisions were folded, by which delta.
type Write struct {
	Delta   Delta   `json:"memory_delta"`
	Folded  []int64 `json:"folded"`
	Lane    string  `json:"lane"`
	Trigger string  `json:"trigger"` // automatic or manual
}

// compaction is one compaction in flight.
type compaction struct {
	sel     []Entry
	trigger string
	waiters []chan error
}

// start launches a compaction of sel, with mu held. The selection is cut to
// what one prompt may carry (half the context window).
func (m *Memory) start(ctx context.Context, sel []Entry, trigger string, done chan error) {
	budget := m.contextWindow() / 2 * 4 // bytes: half the window's tokens
	size := 0
	for i, e := range sel {
		size += min(len(e.Msg.Content), maxEntryBytes) + 64
		if size > budget && i > 0 {
			sel = sel[:i]
			break
		}
	}
	c := &compaction{sel: sel, trigger: trigger}
	if done != nil {
		c.waiters = append(c.waiters, done)
	}
	m.run = c
	base, writes := m.sum.Clone(), m.writes
	go m.compact(ctx, c, base, writes)
}

// compact runs in its own goroutine: the model call, then the atomic swap.
func (m *Memory) compact(ctx context.Context, c *compaction, base Summary, writes int) {
	err := m.fold1(ctx, c, base, writes)
	if err != nil {
		m.cfg.Log.Warn("compaction failed; the window is kept and compaction retries at the next trigger",
			logs.KeyLane, m.cfg.Lane, "trigger", c.trigger, logs.KeyError, err.Error())
	}
	m.mu.Lock()
	ws := c.waiters
	m.run = nil
	m.mu.Unlock()
	for _, w := range ws {
		w <- err
		close(w)
	}
}

func (m *Memory) fold1(ctx context.Context, c *compaction, base Summary, writes int) error {
	resp, err := m.cfg.Chat(ctx, m.request(base, c.sel))
	if err != nil {
		return fmt.Errorf("compaction call: %w", err)
	}
	var args string
	found := false
	for _, tc := range resp.ToolCalls {
		if tc.Name == DeltaTool {
			args, found = tc.Arguments, true
			break
		}
	}
	if !found {
		return errors.New("the compaction call did not call " + DeltaTool)
	}
	d, err := ParseDelta([]byte(args))
	if err != nil {
		return err
	}
	next, err := Apply(base, d, m.limits())
	if err != nil {
		return err
	}
	w := Write{Delta: d, Lane: m.cfg.Lane, Trigger: c.trigger}
	for _, e := range c.sel {
		w.Folded = append(w.Folded, e.Rev)
	}
	m.mu.Lock()
	stale := m.writes != writes
	m.mu.Unlock()
	if stale {
		return errors.New("the summary changed while the compaction ran")
	}
	if m.cfg.Commit != nil {
		if err := m.cfg.Commit(ctx, w); err != nil {
			return fmt.Errorf("commit the compaction: %w", err)
		}
	}
	m.mu.Lock()
	m.fold(c.sel, next)
	m.mu.Unlock()
	if m.cfg.Notify != nil {
		m.cfg.Notify(fmt.Sprintf("I compacted my working memory (%s lane): %d older events are now in my summary.", laneWord(m.cfg.Lane), len(c.sel)))
	}
	return nil
}

func laneWord(lane string) string {
	if strings.HasPrefix(lane, "core:") {
		return "core job " + strings.TrimPrefix(lane, "core:")
	}
	return lane
}

// limits are the bounds every delta of this memory is checked against.
func (m *Memory) limits() Limits {
	return Limits{MaxBytes: max(4096, m.threshold(0)*4/8), Resolve: m.cfg.Resolve}
}

// Validate checks a delta against the current summary without applying it.
func (m *Memory) Validate(d Delta) error {
	_, err := Apply(m.Summary(), d, m.limits())
	return err
}

// ApplyDelta validates d and swaps in the summary it makes, atomically; a
// refused delta changes nothing.
func (m *Memory) ApplyDelta(d Delta) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	next, err := Apply(m.sum, d, m.limits())
	if err != nil {
		return err
	}
	m.sum = next
	m.writes++
	return nil
}

// compactionInstructions is the system prompt of a compaction call.
const compactionInstructions = `You maintain the reference summary of one lane of a personal agent: a structured document of what has left the lane's context window. ` +
	`The events below are about to leave it. Fold what the lane will still need from them (names, paths, decisions, results, open questions, the user's preferences) into the summary by calling ` + DeltaTool + ` exactly once. ` +
	`Use mode "append" to add a paragraph to the summary text, or "overwrite" to rewrite the whole text when it grows long (keep everything still relevant). ` +
	`Put durable facts in add_fact as {"key","value","source_event"} and cite events in add_references by the ids shown in brackets. Do not invent events.`

// deltaParameters is the JSON Schema of DeltaTool's arguments.
const deltaParameters = `{"type":"object","additionalProperties":false,"required":["memory_delta"],"properties":{"memory_delta":{"type":"object","additionalProperties":false,"required":["mode"],"properties":{` +
	`"mode":{"type":"string","enum":["append","overwrite"]},` +
	`"summary_update":{"type":"string","description":"text appended to the summary, or the whole new summary with overwrite"},` +
	`"add_references":{"type":"array","items":{"type":"string"},"description":"event ids to remember, or session:<id>"},` +
	`"remove_references":{"type":"array","items":{"type":"string"}},` +
	`"add_fact":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["key","value"],"properties":{"key":{"type":"string"},"value":{"type":"string"},"source_event":{"type":"string"}}}},` +
	`"remove_fact":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["key"],"properties":{"key":{"type":"string"}}}}}}}}`

// request is the compaction call: instructions, the current summary and
// the events to fold, with DeltaTool required.
func (m *Memory) request(base Summary, sel []Entry) openai.ChatRequest {
	var b strings.Builder
	fmt.Fprintf(&b, "Lane: %s\n\nCurrent reference summary (%d bytes of at most %d):\n%s\n\nEvents to fold, oldest first:\n",
		m.cfg.Lane, len(base.JSON()), m.limits().MaxBytes, base.JSON())
	for _, e := range sel {
		b.WriteString(EntryText(e, maxEntryBytes))
		b.WriteByte('\n')
	}
	return openai.ChatRequest{
		Messages: []openai.Message{
			openai.SystemMessage(compactionInstructions),
			openai.UserMessage(b.String()),
		},
		Tools: []openai.Tool{{
			Name:        DeltaTool,
			Description: "Apply one memory delta to the reference summary.",
			Parameters:  json.RawMessage(deltaParameters),
		}},
		ToolChoice: &openai.ToolChoice{Function: DeltaTool},
	}
}

// EntryText renders an entry as one line of text for a compaction prompt:
// "[ev <id>] <who>: <content>", content cut at limit bytes.
func EntryText(e Entry, limit int) string {
	id := e.Hash
	if len(id) > idLen {
		id = id[:idLen]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[ev %s] ", id)
	switch e.Msg.Role {
	case openai.RoleTool:
		fmt.Fprintf(&b, "tool result for %s: ", e.Msg.ToolCallID)
	default:
		b.WriteString(e.Msg.Role + ": ")
	}
	b.WriteString(cut(e.Msg.Content, limit))
	for _, c := range e.Msg.ToolCalls {
		fmt.Fprintf(&b, " [calls %s %s (id %s)]", c.Name, cut(c.Arguments, limit/4), c.ID)
	}
	return b.String()
}

// cut keeps at most n bytes of s, on a rune boundary, marking what it left
// out.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return fmt.Sprintf("%s[… %d bytes left out]", s[:i], len(s)-i)
}
