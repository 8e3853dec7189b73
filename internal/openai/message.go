package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Roles of chat messages.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one turn of a conversation.
type Message struct {
	Role    string
	Content string
	// ToolCalls are the calls an assistant turn made; send them back as the
	// model produced them (ChatResponse.Message does this).
	ToolCalls []ToolCall
	// ToolCallID names the call a tool turn answers.
	ToolCallID string
}

// SystemMessage returns a system turn.
func SystemMessage(text string) Message { return Message{Role: RoleSystem, Content: text} }

// UserMessage returns a user turn.
func UserMessage(text string) Message { return Message{Role: RoleUser, Content: text} }

// AssistantMessage returns an assistant turn: text, tool calls, or both.
func AssistantMessage(text string, calls ...ToolCall) Message {
	return Message{Role: RoleAssistant, Content: text, ToolCalls: calls}
}

// ToolMessage returns the turn that answers tool call callID with content
// (the tool's result, or its structured error).
func ToolMessage(callID, content string) Message {
	return Message{Role: RoleTool, Content: content, ToolCallID: callID}
}

// ToolCall is one function call the model asked for.
type ToolCall struct {
	// ID is the model's id for the call; a tool turn names it. When a
	// provider sends none, or repeats one within a reply, the client makes
	// one up ("call_0", "call_1"…, never one the reply already uses) so that
	// every call in a reply has a distinct id.
	ID string
	// Name is the wire name of the function; NameMap.Canonical maps it back.
	Name string
	// Arguments is exactly what the model sent: a JSON object encoded as a
	// string, but models do send invalid JSON. See JSONArguments.
	Arguments string
}

// ErrInvalidArguments marks a tool call whose arguments are not a JSON object.
var ErrInvalidArguments = errors.New("invalid tool call arguments")

// JSONArguments returns the arguments as JSON ready for schema validation,
// or an error wrapping ErrInvalidArguments that says what is wrong and where,
// worded to be sent back to the model as the tool's error. Empty arguments
// (some servers send "" for a function without parameters) read as {}.
func (tc ToolCall) JSONArguments() (json.RawMessage, error) {
	s := strings.TrimSpace(tc.Arguments)
	if s == "" {
		return json.RawMessage("{}"), nil
	}
	var raw json.RawMessage
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		where := ""
		if se, ok := errors.AsType[*json.SyntaxError](err); ok {
			where = fmt.Sprintf(" at byte %d", se.Offset)
		}
		return nil, fmt.Errorf("%w: call %s to %s: not valid JSON (%v%s); send them as one JSON object", ErrInvalidArguments, tc.ID, tc.Name, err, where)
	}
	if s[0] != '{' {
		return nil, fmt.Errorf("%w: call %s to %s: JSON but not an object; send them as one JSON object", ErrInvalidArguments, tc.ID, tc.Name)
	}
	return raw, nil
}

// Tool is a function offered to the model.
type Tool struct {
	// Name is the wire name (NameMap.Wire), matching ^[a-zA-Z0-9_-]{1,64}$.
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments object. Empty sends
	// {"type":"object","properties":{}}, which every provider accepts for a
	// function without parameters.
	Parameters json.RawMessage
}

// ToolChoice constrains which tool the model calls.
type ToolChoice struct {
	// Mode is "auto", "none" or "required"; it is ignored when Function is set.
	Mode string
	// Function, when set, is the wire name of the one function the model
	// must call.
	Function string
}

// The wire forms, shared by requests and answers.

type wireMessage struct {
	Role string `json:"role"`
	// Content is null for an assistant turn that only calls tools: some
	// providers (Anthropic behind OpenRouter) refuse an empty text.
	Content    *string        `json:"content"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name string `json:"name"`
	// Arguments is a JSON string on the wire. Answers are read as raw JSON
	// because some servers put the arguments object there unquoted.
	Arguments json.RawMessage `json:"arguments"`
}

type wireTool struct {
	Type     string          `json:"type"`
	Function wireToolFuncDef `json:"function"`
}

type wireToolFuncDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

var emptyParameters = json.RawMessage(`{"type":"object","properties":{}}`)

func (m Message) wire() (wireMessage, error) {
	w := wireMessage{Role: m.Role, ToolCallID: m.ToolCallID}
	if m.Content != "" || len(m.ToolCalls) == 0 {
		w.Content = &m.Content
	}
	if m.Role == RoleTool && m.ToolCallID == "" {
		return w, errors.New("a tool message needs the tool_call_id of the call it answers")
	}
	for i, tc := range m.ToolCalls {
		if !ValidWireName(tc.Name) {
			return w, fmt.Errorf("tool_calls[%d] name %q is not a wire name (want %s)", i, tc.Name, wireNamePattern)
		}
		args, err := json.Marshal(tc.Arguments)
		if err != nil {
			return w, err
		}
		w.ToolCalls = append(w.ToolCalls, wireToolCall{ID: tc.ID, Type: "function", Function: wireFunction{Name: tc.Name, Arguments: args}})
	}
	return w, nil
}

func (t Tool) wire() (wireTool, error) {
	if !ValidWireName(t.Name) {
		return wireTool{}, fmt.Errorf("name %q is not a wire name (want %s); build tools with a NameMap", t.Name, wireNamePattern)
	}
	params := t.Parameters
	if len(params) == 0 {
		params = emptyParameters
	} else if !json.Valid(params) {
		return wireTool{}, fmt.Errorf("parameters of %q are not valid JSON", t.Name)
	}
	return wireTool{Type: "function", Function: wireToolFuncDef{Name: t.Name, Description: t.Description, Parameters: params}}, nil
}

func (c ToolChoice) wire() (any, error) {
	if c.Function != "" {
		if !ValidWireName(c.Function) {
			return nil, fmt.Errorf("tool_choice function %q is not a wire name (want %s)", c.Function, wireNamePattern)
		}
		type name struct {
			Name string `json:"name"`
		}
		return struct {
			Type     string `json:"type"`
			Function name   `json:"function"`
		}{"function", name{c.Function}}, nil
	}
	switch c.Mode {
	case "auto", "none", "required":
		return c.Mode, nil
	}
	return nil, fmt.Errorf("tool_choice mode %q is none of auto, none, required", c.Mode)
}

// readToolCalls turns an answer's tool_calls into ToolCalls, tolerating
// arguments sent as an object and missing ids. A call without an id, or
// with one an earlier call of the reply already has, gets an id of its own
// that no other call of the reply has, since a tool turn names its call by
// id.
func readToolCalls(ws []wireToolCall) []ToolCall {
	var calls []ToolCall
	taken := make(map[string]bool, len(ws))
	for _, w := range ws {
		taken[w.ID] = true
	}
	used := make(map[string]bool, len(ws))
	for i, w := range ws {
		tc := ToolCall{ID: w.ID, Name: w.Function.Name}
		raw := w.Function.Arguments
		var s string
		switch {
		case json.Unmarshal(raw, &s) == nil:
			tc.Arguments = s
		case len(raw) > 0 && string(raw) != "null":
			tc.Arguments = string(raw)
		}
		if tc.ID == "" || used[tc.ID] {
			tc.ID = fmt.Sprintf("call_%d", i)
			for n := 1; taken[tc.ID]; n++ {
				tc.ID = fmt.Sprintf("call_%d_%d", i, n)
			}
			taken[tc.ID] = true
		}
		used[tc.ID] = true
		calls = append(calls, tc)
	}
	return calls
}

// readContent reads message content: a string, null, or (from some servers)
// an array of parts whose text parts are joined.
func readContent(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), true
}
