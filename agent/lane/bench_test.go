package lane

import (
	"context"
	"testing"

	"choir/internal/openai"
	"choir/testkit/openaitest"
)

// instantModel answers at once, in process: a tool call (fs.read of a.txt)
// when the last message is the user's and tools are wanted, text otherwise.
type instantModel struct{ useTool bool }

var _ ModelClient = (*instantModel)(nil)

func (m *instantModel) Chat(_ context.Context, req openai.ChatRequest) (*openai.ChatResponse, error) {
	last := req.Messages[len(req.Messages)-1]
	if m.useTool && last.Role == openai.RoleUser {
		return &openai.ChatResponse{ToolCalls: []openai.ToolCall{{ID: "call_1", Name: "choir_fs_read", Arguments: `{"path":"a.txt"}`}}}, nil
	}
	return &openai.ChatResponse{Content: "done"}, nil
}

func (m *instantModel) ChatWithRateLimitRetry(ctx context.Context, req openai.ChatRequest, _ openai.RateLimitRetry) (*openai.ChatResponse, error) {
	return m.Chat(ctx, req)
}

// The lane's own cost of a turn: commit the message, build the prompt over
// a full event window, one model call answered at once, commit the reply.
func BenchmarkTurnText(b *testing.B) {
	benchTurn(b, &instantModel{})
}

// A turn with one tool call: two model calls, the arbiter's pipeline and a
// real choir.fs.read of a small file.
func BenchmarkTurnOneTool(b *testing.B) {
	benchTurn(b, &instantModel{useTool: true})
}

func benchTurn(b *testing.B, m ModelClient) {
	e := newEnv(b, envOptions{model: m, ident: Identity{UserMD: "Name: Ada.", SoulMD: "Be brief."}})
	e.write("a.txt", "hello\n")
	ctx := context.Background()
	for range DefaultEventWindow { // fill the window
		e.lane.Handle(ctx, "warm up")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if reply, err := e.lane.Handle(ctx, "go"); err != nil || reply != "done" {
			b.Fatalf("Handle = %q, %v", reply, err)
		}
	}
}

// The same turn against the fake server through the real HTTP client, for
// comparison: the difference is HTTP and JSON on both sides.
func BenchmarkTurnOneToolHTTP(b *testing.B) {
	e := newEnv(b, envOptions{})
	e.write("a.txt", "hello\n")
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		e.model.Expect(
			openaitest.Chat().ReplyToolCalls(openaitest.ToolCall{ID: "call_1", Name: "choir_fs_read", Arguments: `{"path":"a.txt"}`}),
			openaitest.Chat().ReplyText("done"))
		if reply, err := e.lane.Handle(ctx, "go"); err != nil || reply != "done" {
			b.Fatalf("Handle = %q, %v", reply, err)
		}
	}
}
