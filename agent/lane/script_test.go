package lane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"choir/agent/memory"
	"choir/internal/openai"
	"choir/internal/rpc"
)

// script is an in-process model for tests with several lanes at once: each
// request goes to the queue of its lane ("edge", or the core job's name,
// read from the CoreJobStart that opens every core prompt's conversation), whose next
// answer is taken in order. An answer may block (on a channel, or until
// the call's context ends) to hold a lane at a point of the test.
type script struct {
	t      testing.TB
	mu     sync.Mutex
	queues map[string][]answer
	reqs   map[string][]openai.ChatRequest
	seen   chan string // the lane of each request, as it arrives
}

// answer is one scripted answer to a request.
type answer func(ctx context.Context, req openai.ChatRequest) (*openai.ChatResponse, error)

var _ ModelClient = (*script)(nil)

func newScript(t testing.TB) *script {
	return &script{t: t, queues: map[string][]answer{}, reqs: map[string][]openai.ChatRequest{}, seen: make(chan string, 256)}
}

// on queues answers for a lane.
func (s *script) on(lane string, as ...answer) *script {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queues[lane] = append(s.queues[lane], as...)
	return s
}

// requests returns what a lane was sent, in order.
func (s *script) requests(lane string) []openai.ChatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]openai.ChatRequest(nil), s.reqs[lane]...)
}

// laneOf names the lane of a request: a core job's by the CoreJobStart
// that follows its system messages.
func laneOf(req openai.ChatRequest) string {
	for _, m := range req.Messages {
		if m.Role == openai.RoleSystem {
			continue
		}
		if rest, ok := strings.CutPrefix(m.Content, "# CoreJobStart\n\n"); ok && m.Role == openai.RoleUser {
			var s CoreJobStart
			dec := json.NewDecoder(strings.NewReader(rest))
			if dec.Decode(&s) == nil {
				return s.JobName
			}
		}
		break
	}
	return "edge"
}

func (s *script) Chat(ctx context.Context, req openai.ChatRequest) (*openai.ChatResponse, error) {
	lane := laneOf(req)
	s.mu.Lock()
	s.reqs[lane] = append(s.reqs[lane], req)
	q := s.queues[lane]
	var a answer
	if len(q) > 0 {
		a, s.queues[lane] = q[0], q[1:]
	}
	n := len(s.reqs[lane])
	s.mu.Unlock()
	s.seen <- lane
	if a == nil {
		s.t.Errorf("script: request %d of lane %s has no answer queued; last message: %q", n, lane, req.Messages[len(req.Messages)-1].Content)
		return nil, errors.New("script: no answer queued")
	}
	return a(ctx, req)
}

func (s *script) ChatWithRateLimitRetry(ctx context.Context, req openai.ChatRequest, _ openai.RateLimitRetry) (*openai.ChatResponse, error) {
	return s.Chat(ctx, req)
}

// Answers.

func say(text string) answer {
	return func(context.Context, openai.ChatRequest) (*openai.ChatResponse, error) {
		return &openai.ChatResponse{Content: text}, nil
	}
}

// use answers with tool calls given as canonical name and arguments pairs;
// ids are the name's wire form and its position.
func use(pairs ...string) answer {
	return func(context.Context, openai.ChatRequest) (*openai.ChatResponse, error) {
		var calls []openai.ToolCall
		for i := 0; i+1 < len(pairs); i += 2 {
			w := openai.WireName(pairs[i])
			calls = append(calls, openai.ToolCall{ID: fmt.Sprintf("%s_%d", w, i/2), Name: w, Arguments: pairs[i+1]})
		}
		return &openai.ChatResponse{ToolCalls: calls}, nil
	}
}

// after answers with next once ch is closed (or the call ends).
func after(ch <-chan struct{}, next answer) answer {
	return func(ctx context.Context, req openai.ChatRequest) (*openai.ChatResponse, error) {
		select {
		case <-ch:
			return next(ctx, req)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// hang answers only when the call ends: a model that never answers.
func hang() answer {
	return func(ctx context.Context, _ openai.ChatRequest) (*openai.ChatResponse, error) {
		<-ctx.Done()
		return nil, &openai.APIError{Kind: openai.KindTimeout, Message: "no answer", Err: ctx.Err()}
	}
}

// check runs f on the request, then answers with next.
func check(f func(req openai.ChatRequest), next answer) answer {
	return func(ctx context.Context, req openai.ChatRequest) (*openai.ChatResponse, error) {
		f(req)
		return next(ctx, req)
	}
}

func fail(err error) answer {
	return func(context.Context, openai.ChatRequest) (*openai.ChatResponse, error) { return nil, err }
}

// spawnArgs is a CoreJobStart for choir.core.spawn.
func spawnArgs(name, task string) string {
	b, _ := json.Marshal(map[string]any{"job_name": name, "task_spec": task})
	return string(b)
}

func finishArgs(summary string) string {
	b, _ := json.Marshal(map[string]any{"summary": summary})
	return string(b)
}

// compactor answers every compaction call with a valid delta that says
// how many events it folded.
type compactor struct {
	mu   sync.Mutex
	reqs []openai.ChatRequest
	text string // the summary_update; default "folded N events"
	hold chan struct{}
}

func (c *compactor) Chat(ctx context.Context, req openai.ChatRequest) (*openai.ChatResponse, error) {
	c.mu.Lock()
	c.reqs = append(c.reqs, req)
	text, hold := c.text, c.hold
	c.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if text == "" {
		text = fmt.Sprintf("folded %d events", strings.Count(req.Messages[1].Content, "[ev "))
	}
	b, _ := json.Marshal(map[string]any{"memory_delta": map[string]any{"mode": "append", "summary_update": text}})
	return &openai.ChatResponse{ToolCalls: []openai.ToolCall{{ID: "d", Name: memory.DeltaTool, Arguments: string(b)}}}, nil
}

func (c *compactor) ChatWithRateLimitRetry(ctx context.Context, req openai.ChatRequest, _ openai.RateLimitRetry) (*openai.ChatResponse, error) {
	return c.Chat(ctx, req)
}

func rpcMsg(id, text string) rpc.UserMessage { return rpc.UserMessage{ID: id, Text: text} }
