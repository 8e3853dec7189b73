package openai_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"choir/internal/openai"
	"choir/testkit/openaitest"
)

// BenchmarkChatRoundTrip measures one chat call with two tools offered and a
// tool call answered, against the fake on loopback: encoding, HTTP, the
// fake's own decoding and checks, and decoding the answer.
func BenchmarkChatRoundTrip(b *testing.B) {
	s := openaitest.New(b)
	c := newClient(b, s)
	req := userAsks("Read the readme.")
	params := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)
	req.Tools = []openai.Tool{{Name: "choir_fs_read", Parameters: params}, {Name: "choir_fs_write", Parameters: params}}
	call := openaitest.ToolCall{ID: "call_1", Name: "choir_fs_read", Arguments: `{"path":"README.md"}`}
	b.ReportAllocs()
	for b.Loop() {
		s.Expect(openaitest.Chat().ReplyToolCalls(call))
		resp, err := c.Chat(b.Context(), req)
		if err != nil || len(resp.ToolCalls) != 1 {
			b.Fatalf("Chat = %+v, %v", resp, err)
		}
	}
}

// BenchmarkChatRoundTripWithTemplate is BenchmarkChatRoundTrip with a
// model's request template on the request: two body members merged and
// two headers, the cost a template adds to every call.
func BenchmarkChatRoundTripWithTemplate(b *testing.B) {
	s := openaitest.New(b)
	c := newClient(b, s)
	req := userAsks("Read the readme.")
	params := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)
	req.Tools = []openai.Tool{{Name: "choir_fs_read", Parameters: params}, {Name: "choir_fs_write", Parameters: params}}
	req.Extra = map[string]json.RawMessage{"provider": json.RawMessage(`{"order": ["openai", "anthropic"]}`), "usage": json.RawMessage(`{"include": true}`)}
	req.Header = http.Header{"X-Title": {"choir"}, "X-Gateway-Key": {"Key gw-1234"}}
	call := openaitest.ToolCall{ID: "call_1", Name: "choir_fs_read", Arguments: `{"path":"README.md"}`}
	b.ReportAllocs()
	for b.Loop() {
		s.Expect(openaitest.Chat().ReplyToolCalls(call))
		resp, err := c.Chat(b.Context(), req)
		if err != nil || len(resp.ToolCalls) != 1 {
			b.Fatalf("Chat = %+v, %v", resp, err)
		}
	}
}
