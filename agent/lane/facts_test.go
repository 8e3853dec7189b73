package lane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"choir/agent/arbiter"
	"choir/agent/memory"
	"choir/internal/openai"
)

// factCompactor is a compaction model that records a fact at its first
// call and afterwards condenses the summary (overwrite) without repeating
// it, as a model squeezing a long session would.
type factCompactor struct {
	mu    sync.Mutex
	calls int
}

func (c *factCompactor) Chat(ctx context.Context, req openai.ChatRequest) (*openai.ChatResponse, error) {
	c.mu.Lock()
	c.calls++
	n := c.calls
	c.mu.Unlock()
	delta := map[string]any{"mode": "overwrite", "summary_update": fmt.Sprintf("condensed, round %d", n)}
	if n == 1 {
		delta["add_fact"] = []map[string]string{{"key": "cat_name", "value": "Ada"}}
	}
	b, _ := json.Marshal(map[string]any{"memory_delta": delta})
	return &openai.ChatResponse{ToolCalls: []openai.ToolCall{{ID: "d", Name: memory.DeltaTool, Arguments: string(b)}}}, nil
}

func (c *factCompactor) ChatWithRateLimitRetry(ctx context.Context, req openai.ChatRequest, _ openai.RateLimitRetry) (*openai.ChatResponse, error) {
	return c.Chat(ctx, req)
}

// A fact stated at the start of a long session is still answerable after
// many compactions (issue 14, item 5): it stays in the reference summary's
// facts however often the summary is condensed, and the working store
// still finds the message that stated it; the user is told each time
// working memory was compacted.
func TestFactsSurviveManyCompactions(t *testing.T) {
	e, s := coreEnv(t, envOptions{window: 4, compactor: &factCompactor{}})
	for range 14 {
		s.on("edge", say("ok"))
	}
	e.handle("My cat is called Ada.")
	for i := range 13 {
		e.handle(fmt.Sprintf("Unrelated chat number %d.", i))
		// Join the compaction the turn started, or fold what it left: no
		// compaction is in flight when the next turn begins.
		if err := e.lane.Compact(context.Background()); err != nil && !errors.Is(err, memory.ErrNothingToCompact) {
			t.Fatal(err)
		}
	}
	if n := len(e.events(arbiter.MemoryWriteCommitted)); n < 10 {
		t.Fatalf("%d compactions in 14 turns over a window of 4; want at least 10", n)
	}
	notices := 0
	for range 4 {
		if n := e.nextNotice(); strings.Contains(n, "compacted my working memory") {
			notices++
		}
	}
	if notices != 4 {
		t.Errorf("%d of the first 4 notices say working memory was compacted; want all", notices)
	}

	s.on("edge", use(QueryTool, `{"store":"working","query":"cat Ada"}`), say("Your cat is Ada."))
	if got := e.handle("What is my cat called?"); got != "Your cat is Ada." {
		t.Fatalf("reply = %q", got)
	}
	reqs := s.requests("edge")
	last := reqs[len(reqs)-2] // the request that called the query tool
	inSummary := false
	for _, m := range last.Messages {
		if m.Role == openai.RoleSystem && strings.Contains(m.Content, "# Reference summary") {
			inSummary = strings.Contains(m.Content, `"cat_name"`) && strings.Contains(m.Content, `"Ada"`)
		}
		if m.Role == openai.RoleUser && m.Content == "My cat is called Ada." {
			t.Error("the first message is still in the window: no compaction folded it")
		}
	}
	if !inSummary {
		t.Errorf("after %d compactions the reference summary lost the fact; the request was %+v", len(e.events(arbiter.MemoryWriteCommitted)), last.Messages)
	}
	out := toolResult(t, reqs[len(reqs)-1], openai.WireName(QueryTool)+"_0")
	if raw, _ := json.Marshal(out); !strings.Contains(string(raw), "My cat is called Ada.") {
		t.Errorf("the working store does not find the message that stated the fact: %s", raw)
	}
}
