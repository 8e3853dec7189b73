package openaitest

import (
	"fmt"
	"mime"
	"net/http"
	"regexp"
)

// Request is one request as the server received it, decoded from raw JSON.
type Request struct {
	Number int // 1 for the first request the server received
	Method string
	Path   string
	Header http.Header
	Body   []byte
	// JSON is the body decoded generically; nil when it is not a JSON object.
	JSON map[string]any

	cached       int // cached_tokens to report; -1 without PrefixCache (cache.go)
	promptSerial int // bytes of the prompt in cache order
}

// Message is a chat message as sent, in this package's own terms.
type Message struct {
	Role    string
	Content string // text parts joined; "" for null
	// ContentNull reports "content": null (or no content at all).
	ContentNull bool
	ToolCallID  string
	ToolCalls   []ToolCall
}

// ToolCall is a function call, as sent in an assistant message or as answered
// by ReplyToolCalls. Arguments is a string and may be any text.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Has reports whether the body has the top-level field, even as null.
func (r *Request) Has(field string) bool {
	_, ok := r.JSON[field]
	return ok
}

// Model is the model field.
func (r *Request) Model() string {
	s, _ := r.JSON["model"].(string)
	return s
}

// Temperature is the temperature field and whether it is a number.
func (r *Request) Temperature() (float64, bool) {
	v, ok := r.JSON["temperature"].(float64)
	return v, ok
}

// ReasoningEffort is the reasoning_effort field and whether it is a string.
func (r *Request) ReasoningEffort() (string, bool) {
	v, ok := r.JSON["reasoning_effort"].(string)
	return v, ok
}

// Messages decodes the messages field.
func (r *Request) Messages() []Message {
	raw, _ := r.JSON["messages"].([]any)
	var out []Message
	for _, item := range raw {
		m, _ := item.(map[string]any)
		msg := Message{}
		msg.Role, _ = m["role"].(string)
		msg.ToolCallID, _ = m["tool_call_id"].(string)
		msg.Content, msg.ContentNull = content(m["content"])
		calls, _ := m["tool_calls"].([]any)
		for _, c := range calls {
			cm, _ := c.(map[string]any)
			fn, _ := cm["function"].(map[string]any)
			tc := ToolCall{}
			tc.ID, _ = cm["id"].(string)
			tc.Name, _ = fn["name"].(string)
			tc.Arguments, _ = fn["arguments"].(string)
			msg.ToolCalls = append(msg.ToolCalls, tc)
		}
		out = append(out, msg)
	}
	return out
}

func content(v any) (text string, null bool) {
	switch c := v.(type) {
	case nil:
		return "", true
	case string:
		return c, false
	case []any:
		for _, p := range c {
			part, _ := p.(map[string]any)
			if s, ok := part["text"].(string); ok && part["type"] == "text" {
				text += s
			}
		}
	}
	return text, false
}

// ToolNames lists tools[].function.name in order.
func (r *Request) ToolNames() []string {
	tools, _ := r.JSON["tools"].([]any)
	names := []string{}
	for _, t := range tools {
		tm, _ := t.(map[string]any)
		fn, _ := tm["function"].(map[string]any)
		name, _ := fn["name"].(string)
		names = append(names, name)
	}
	return names
}

// Inputs decodes an embeddings request's input: a string or an array of them.
func (r *Request) Inputs() []string {
	switch in := r.JSON["input"].(type) {
	case string:
		return []string{in}
	case []any:
		out := make([]string, 0, len(in))
		for _, v := range in {
			s, _ := v.(string)
			out = append(out, s)
		}
		return out
	}
	return nil
}

// wireNameRE is what OpenAI and Anthropic accept as a function name.
var wireNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// wireProblems lists the ways req breaks rules a real provider enforces with
// a 400.
func wireProblems(req *Request) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if req.Method != http.MethodPost {
		add("method %s, want POST", req.Method)
	}
	if mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type")); mt != "application/json" {
		add("Content-Type %q, want application/json", req.Header.Get("Content-Type"))
	}
	if req.JSON == nil {
		add("body is not a JSON object: %.80q", req.Body)
		return problems
	}
	if req.Model() == "" {
		add("no model")
	}
	if req.Path != "/v1/chat/completions" {
		return problems
	}
	tools, _ := req.JSON["tools"].([]any)
	for i, name := range req.ToolNames() {
		if !wireNameRE.MatchString(name) {
			add("tools[%d].function.name %q does not match %s", i, name, wireNameRE)
		}
		if tm, _ := tools[i].(map[string]any); tm["type"] != "function" {
			add("tools[%d].type is %v, want \"function\"", i, tm["type"])
		}
	}
	if choice, ok := req.JSON["tool_choice"].(map[string]any); ok {
		fn, _ := choice["function"].(map[string]any)
		if name, _ := fn["name"].(string); !wireNameRE.MatchString(name) {
			add("tool_choice.function.name %q does not match %s", name, wireNameRE)
		}
	}
	if _, ok := req.JSON["messages"].([]any); !ok {
		add("messages is not an array")
	}
	rawMessages, _ := req.JSON["messages"].([]any)
	for i, m := range rawMessages {
		mm, _ := m.(map[string]any)
		calls, _ := mm["tool_calls"].([]any)
		for j, c := range calls {
			cm, _ := c.(map[string]any)
			fn, _ := cm["function"].(map[string]any)
			if _, ok := fn["arguments"].(string); !ok {
				add("messages[%d].tool_calls[%d].function.arguments is %T, want a string", i, j, fn["arguments"])
			}
		}
	}
	called := map[string]bool{}
	for i, m := range req.Messages() {
		for j, tc := range m.ToolCalls {
			if !wireNameRE.MatchString(tc.Name) {
				add("messages[%d].tool_calls[%d].function.name %q does not match %s", i, j, tc.Name, wireNameRE)
			}
			called[tc.ID] = true
		}
		if m.Role == "tool" && !called[m.ToolCallID] {
			add("messages[%d] (tool) answers tool_call_id %q, which no earlier assistant message called", i, m.ToolCallID)
		}
	}
	return problems
}
