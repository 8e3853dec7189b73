package openai_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"testing"

	"choir/internal/openai"
	"choir/testkit/openaitest"
)

// testKey looks like a real key so that a leak would be noticed; the fakes
// echo it back in error bodies to check it is redacted.
const testKey = "sk-or-v1-0123456789abcdef-TESTSECRET"

func newClient(t testing.TB, s *openaitest.Server, opts ...func(*openai.Config)) *openai.Client {
	t.Helper()
	cfg := openai.Config{Endpoint: s.URL(), APIKey: testKey}
	for _, o := range opts {
		o(&cfg)
	}
	c, err := openai.New(cfg)
	if err != nil {
		t.Fatalf("New(%s) = %v", cfg.Endpoint, err)
	}
	return c
}

func userAsks(text string) openai.ChatRequest {
	return openai.ChatRequest{Model: "test/model", Messages: []openai.Message{
		openai.SystemMessage("You are terse."),
		openai.UserMessage(text),
	}}
}

func TestChatText(t *testing.T) {
	s := openaitest.New(t)
	c := newClient(t, s)
	s.Expect(openaitest.Chat().
		WantModel("test/model").
		WantMessages(openaitest.Message{Role: "system", Content: "You are terse."}, openaitest.Message{Role: "user", Content: "Hi?"}).
		WantAbsent("tools").
		WantAbsent("tool_choice").
		WantAbsent("max_tokens").
		WantAbsent("stream").
		WithUsage(12, 3).
		ReplyText("Hello."))

	resp, err := c.Chat(t.Context(), userAsks("Hi?"))
	if err != nil {
		t.Fatalf("Chat = %v", err)
	}
	if resp.Content != "Hello." || resp.FinishReason != "stop" || len(resp.ToolCalls) != 0 {
		t.Errorf("Chat = %+v; want text Hello., finish_reason stop, no tool calls", resp)
	}
	if want := (openai.Usage{PromptTokens: 12, CompletionTokens: 3, TotalTokens: 15}); resp.Usage != want {
		t.Errorf("Usage = %+v; want %+v", resp.Usage, want)
	}
	if resp.Model != "test/model" || resp.ID == "" {
		t.Errorf("Model, ID = %q, %q; want the echoed model and an id", resp.Model, resp.ID)
	}
}

// TestChatToolLoop runs one tool round as the agent will: offer tools under
// wire names, get several calls (one with broken arguments), map them back,
// and answer each with a tool message.
func TestChatToolLoop(t *testing.T) {
	s := openaitest.New(t)
	c := newClient(t, s)
	names, err := openai.NewNameMap([]string{"choir.fs.read", "choir.memory.search"})
	if err != nil {
		t.Fatal(err)
	}
	var tools []openai.Tool
	for _, canonical := range []string{"choir.fs.read", "choir.memory.search"} {
		wire, err := names.Wire(canonical)
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, openai.Tool{Name: wire, Description: "d", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)})
	}
	s.Expect(openaitest.Chat().
		WantTools("choir_fs_read", "choir_memory_search").
		Check(func(t testing.TB, req *openaitest.Request) {
			if req.JSON["tool_choice"] != "auto" {
				t.Errorf("tool_choice = %v; want auto", req.JSON["tool_choice"])
			}
		}).
		ReplyToolCalls(
			openaitest.ToolCall{ID: "call_a", Name: "choir_fs_read", Arguments: `{"path":"README.md"}`},
			openaitest.ToolCall{ID: "call_b", Name: "choir_memory_search", Arguments: `{"query": "deploy`},
		))

	req := userAsks("Read the readme and search memory.")
	req.Tools = tools
	req.ToolChoice = &openai.ToolChoice{Mode: "auto"}
	resp, err := c.Chat(t.Context(), req)
	if err != nil {
		t.Fatalf("Chat = %v", err)
	}
	if len(resp.ToolCalls) != 2 || resp.FinishReason != "tool_calls" || resp.Content != "" {
		t.Fatalf("Chat = %+v; want 2 tool calls, finish_reason tool_calls, no text", resp)
	}

	var results []openai.Message
	for _, call := range resp.ToolCalls {
		canonical, err := names.Canonical(call.Name)
		if err != nil {
			t.Fatalf("Canonical(%q) = %v", call.Name, err)
		}
		args, err := call.JSONArguments()
		switch call.ID {
		case "call_a":
			if canonical != "choir.fs.read" || err != nil || string(args) != `{"path":"README.md"}` {
				t.Errorf("call_a = %s %s, %v; want choir.fs.read with its arguments", canonical, args, err)
			}
			results = append(results, openai.ToolMessage(call.ID, `{"status":"success"}`))
		case "call_b":
			if canonical != "choir.memory.search" || !errors.Is(err, openai.ErrInvalidArguments) {
				t.Errorf("call_b = %s, %v; want choir.memory.search with ErrInvalidArguments", canonical, err)
			}
			if call.Arguments != `{"query": "deploy` {
				t.Errorf("call_b.Arguments = %q; want the raw string as sent", call.Arguments)
			}
			results = append(results, openai.ToolMessage(call.ID, `{"status":"error","error":"`+err.Error()+`"}`))
		}
	}

	s.Expect(openaitest.Chat().
		WantRoles("system", "user", "assistant", "tool", "tool").
		Check(func(t testing.TB, req *openaitest.Request) {
			assistant := req.Messages()[2]
			want := []openaitest.ToolCall{
				{ID: "call_a", Name: "choir_fs_read", Arguments: `{"path":"README.md"}`},
				{ID: "call_b", Name: "choir_memory_search", Arguments: `{"query": "deploy`},
			}
			if !assistant.ContentNull || !slices.Equal(assistant.ToolCalls, want) {
				t.Errorf("assistant turn = %+v; want content null and the calls as the model sent them", assistant)
			}
		}).
		ReplyText("Done."))
	req.Messages = append(req.Messages, resp.Message())
	req.Messages = append(req.Messages, results...)
	if resp, err := c.Chat(t.Context(), req); err != nil || resp.Content != "Done." {
		t.Fatalf("second Chat = %+v, %v; want Done.", resp, err)
	}
}

func TestChatSamplingFieldsOmittedWhenNil(t *testing.T) {
	tests := []struct {
		name   string
		temp   *float64
		effort *string
		want   func(*openaitest.Step) *openaitest.Step
	}{
		{"both null", nil, nil, func(s *openaitest.Step) *openaitest.Step {
			return s.WantNoTemperature().WantNoReasoningEffort()
		}},
		{"temperature only", new(0.7), nil, func(s *openaitest.Step) *openaitest.Step {
			return s.WantTemperature(0.7).WantNoReasoningEffort()
		}},
		{"zero temperature is sent", new(0.0), nil, func(s *openaitest.Step) *openaitest.Step {
			return s.WantTemperature(0).WantNoReasoningEffort()
		}},
		{"reasoning model", nil, new("medium"), func(s *openaitest.Step) *openaitest.Step {
			return s.WantNoTemperature().WantReasoningEffort("medium")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openaitest.New(t)
			c := newClient(t, s)
			s.Expect(tt.want(openaitest.Chat()).ReplyText("ok"))
			req := userAsks("x")
			req.Temperature, req.ReasoningEffort = tt.temp, tt.effort
			if _, err := c.Chat(t.Context(), req); err != nil {
				t.Fatalf("Chat = %v", err)
			}
		})
	}
}

func TestChatHeaders(t *testing.T) {
	s := openaitest.New(t)
	keyed := newClient(t, s, func(c *openai.Config) {
		c.Header = http.Header{"X-Title": {"choir"}, "Http-Referer": {"https://example.invalid"}}
	})
	keyless := newClient(t, s, func(c *openai.Config) { c.APIKey = ""; c.Endpoint += "/" })
	s.Expect(
		openaitest.Chat().WantHeader("Authorization", "Bearer "+testKey).WantHeader("X-Title", "choir").WantHeader("HTTP-Referer", "https://example.invalid"),
		openaitest.Chat().WantHeader("Authorization", ""),
	)
	if _, err := keyed.Chat(t.Context(), userAsks("x")); err != nil {
		t.Fatalf("keyed Chat = %v", err)
	}
	if _, err := keyless.Chat(t.Context(), userAsks("x")); err != nil {
		t.Fatalf("keyless Chat (endpoint with a trailing slash) = %v", err)
	}
}

func TestChatTolerantAnswers(t *testing.T) {
	s := openaitest.New(t)
	c := newClient(t, s)
	// Arguments as a bare object and no call ids, as some vLLM parsers and
	// Ollama send; content as parts.
	s.Expect(openaitest.Chat().ReplyRaw(200, `{"id":"x","choices":[{"index":0,"finish_reason":"tool_calls",
		"message":{"role":"assistant","content":[{"type":"text","text":"Let me "},{"type":"text","text":"look."}],
		"tool_calls":[{"type":"function","function":{"name":"f","arguments":{"path":"a"}}},
		              {"type":"function","function":{"name":"g","arguments":""}}]}}]}`))
	resp, err := c.Chat(t.Context(), userAsks("x"))
	if err != nil {
		t.Fatalf("Chat = %v", err)
	}
	want := []openai.ToolCall{{ID: "call_0", Name: "f", Arguments: `{"path":"a"}`}, {ID: "call_1", Name: "g"}}
	if !slices.Equal(resp.ToolCalls, want) || resp.Content != "Let me look." {
		t.Errorf("Chat = %+v; want content %q and calls %+v", resp, "Let me look.", want)
	}
	if args, err := resp.ToolCalls[1].JSONArguments(); err != nil || string(args) != "{}" {
		t.Errorf("empty arguments = %s, %v; want {}", args, err)
	}
}

func TestChatRefusesBeforeSending(t *testing.T) {
	tests := []struct {
		name string
		edit func(*openai.ChatRequest)
	}{
		{"dotted tool name", func(r *openai.ChatRequest) { r.Tools = []openai.Tool{{Name: "choir.fs.read"}} }},
		{"tool parameters not JSON", func(r *openai.ChatRequest) { r.Tools = []openai.Tool{{Name: "f", Parameters: json.RawMessage("{")}} }},
		{"tool message without call id", func(r *openai.ChatRequest) { r.Messages = append(r.Messages, openai.ToolMessage("", "x")) }},
		{"tool choice mode", func(r *openai.ChatRequest) { r.ToolChoice = &openai.ToolChoice{Mode: "always"} }},
		{"no model", func(r *openai.ChatRequest) { r.Model = "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openaitest.New(t)
			c := newClient(t, s)
			req := userAsks("x")
			tt.edit(&req)
			_, err := c.Chat(t.Context(), req)
			if e, ok := errors.AsType[*openai.APIError](err); !ok || e.Kind != openai.KindBadRequest || e.Status != 0 {
				t.Errorf("Chat = %v; want a KindBadRequest *APIError with no status", err)
			}
			if n := len(s.Requests()); n != 0 {
				t.Errorf("%d requests reached the server; want none", n)
			}
		})
	}
}

func TestJSONArguments(t *testing.T) {
	tests := []struct {
		args    string
		want    string
		wantErr string
	}{
		{"", "{}", ""},
		{"  ", "{}", ""},
		{`{"a":1}`, `{"a":1}`, ""},
		{` {"a": [1, 2]} `, `{"a": [1, 2]}`, ""},
		{`{"a":`, "", "unexpected end of JSON input"},
		{`{'a':1}`, "", "at byte 2"},
		{`[1]`, "", "not an object"},
		{`null`, "", "not an object"},
	}
	for _, tt := range tests {
		got, err := openai.ToolCall{ID: "c1", Name: "f", Arguments: tt.args}.JSONArguments()
		switch {
		case tt.wantErr == "" && (err != nil || string(got) != tt.want):
			t.Errorf("JSONArguments(%q) = %s, %v; want %s", tt.args, got, err, tt.want)
		case tt.wantErr != "" && (!errors.Is(err, openai.ErrInvalidArguments) || !contains(err.Error(), tt.wantErr, "c1", "f")):
			t.Errorf("JSONArguments(%q) = %v; want ErrInvalidArguments mentioning %q, the call id and the tool", tt.args, err, tt.wantErr)
		}
	}
}
