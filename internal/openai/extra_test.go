package openai_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"testing"

	"choir/internal/openai"
	"choir/testkit/openaitest"
)

// A request template's body fields and headers arrive on the wire, under
// the client's own members and headers (the documented precedence).
func TestChatExtraFieldsAndHeaders(t *testing.T) {
	s := openaitest.New(t)
	c := newClient(t, s, func(cfg *openai.Config) {
		cfg.Header = http.Header{"X-Title": {"from-config"}, "Http-Referer": {"https://choir.example"}}
	})
	s.Expect(openaitest.Chat().ReplyText("ok"))
	temp := 0.2
	req := userAsks("Hi?")
	req.Temperature = &temp
	req.Extra = map[string]json.RawMessage{
		"provider":    json.RawMessage(`{"order": ["anthropic", "openai"], "allow_fallbacks": false}`),
		"usage":       json.RawMessage(`{"include":true}`),
		"max_tokens":  json.RawMessage(`512`),
		"temperature": json.RawMessage(`1.5`), // the request's own wins
	}
	req.Header = http.Header{"X-Title": {"from-template"}, "X-Extra": {"yes"}, "Authorization": {"Bearer not-the-key"}, "Content-Type": {"text/plain"}}
	if _, err := c.Chat(t.Context(), req); err != nil {
		t.Fatalf("Chat = %v", err)
	}
	got := s.Requests()[0]
	var provider map[string]any
	json.Unmarshal(mustJSON(t, got.JSON["provider"]), &provider)
	if want := map[string]any{"order": []any{"anthropic", "openai"}, "allow_fallbacks": false}; !reflect.DeepEqual(provider, want) {
		t.Errorf("provider = %v; want %v", provider, want)
	}
	if u, _ := got.JSON["usage"].(map[string]any); u["include"] != true {
		t.Errorf("usage = %v; want {include: true}", got.JSON["usage"])
	}
	if got.JSON["max_tokens"] != float64(512) {
		t.Errorf("max_tokens = %v; want 512 from the template", got.JSON["max_tokens"])
	}
	if v, _ := got.Temperature(); v != 0.2 {
		t.Errorf("temperature = %v; want the request's 0.2 over the template's 1.5", v)
	}
	for name, want := range map[string]string{
		"X-Title":       "from-template", // the request's over Config.Header's
		"Http-Referer":  "https://choir.example",
		"X-Extra":       "yes",
		"Authorization": "Bearer " + testKey, // the client's key wins
		"Content-Type":  "application/json",
	} {
		if vs := got.Header.Values(name); len(vs) != 1 || vs[0] != want {
			t.Errorf("header %s = %q; want exactly %q", name, vs, want)
		}
	}
}

// A template's max_tokens does not replace the request's own.
func TestChatExtraDoesNotReplaceSetFields(t *testing.T) {
	s := openaitest.New(t)
	c := newClient(t, s)
	s.Expect(openaitest.Chat().ReplyText("ok"))
	n := 64
	req := userAsks("Hi?")
	req.MaxTokens = &n
	req.Extra = map[string]json.RawMessage{"max_tokens": json.RawMessage(`4096`)}
	if _, err := c.Chat(t.Context(), req); err != nil {
		t.Fatalf("Chat = %v", err)
	}
	if got := s.Requests()[0].JSON["max_tokens"]; got != float64(64) {
		t.Errorf("max_tokens = %v; want the request's 64", got)
	}
}

// Hostile extras are refused before anything is sent: members the client
// owns and values that are not JSON.
func TestChatExtraRefused(t *testing.T) {
	for _, tt := range []struct {
		name  string
		extra map[string]json.RawMessage
		owned bool
	}{
		{"model", map[string]json.RawMessage{"model": json.RawMessage(`"other/model"`)}, true},
		{"messages", map[string]json.RawMessage{"messages": json.RawMessage(`[]`)}, true},
		{"tools", map[string]json.RawMessage{"tools": json.RawMessage(`[]`)}, true},
		{"tool_choice", map[string]json.RawMessage{"tool_choice": json.RawMessage(`"none"`)}, true},
		{"stream", map[string]json.RawMessage{"stream": json.RawMessage(`true`)}, true},
		{"stream_options", map[string]json.RawMessage{"stream_options": json.RawMessage(`{}`)}, true},
		{"n", map[string]json.RawMessage{"n": json.RawMessage(`3`)}, true},
		{"not JSON", map[string]json.RawMessage{"provider": json.RawMessage(`{"order":`)}, false},
		{"injection", map[string]json.RawMessage{"x": json.RawMessage(`1,"model":"evil"`)}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := openaitest.New(t)
			c := newClient(t, s)
			req := userAsks("Hi?")
			req.Extra = tt.extra
			_, err := c.Chat(t.Context(), req)
			if err == nil {
				t.Fatal("Chat = nil error; want the extra refused")
			}
			if e, ok := errors.AsType[*openai.APIError](err); !ok || e.Kind != openai.KindBadRequest {
				t.Errorf("Chat = %v; want a KindBadRequest *APIError", err)
			}
			if got := errors.Is(err, openai.ErrReservedField); got != tt.owned {
				t.Errorf("errors.Is(%v, ErrReservedField) = %v; want %v", err, got, tt.owned)
			}
			if n := len(s.Requests()); n != 0 {
				t.Errorf("%d requests sent; want none", n)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
