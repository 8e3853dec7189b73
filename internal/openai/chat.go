package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
)

// ChatRequest is one call to POST <endpoint>/chat/completions. Pointer fields
// are left out of the body entirely when nil, never sent as null.
type ChatRequest struct {
	Model    string
	Messages []Message
	Tools    []Tool
	// ToolChoice nil leaves the choice to the provider ("auto" when tools
	// are offered).
	ToolChoice *ToolChoice
	// Temperature nil is the configured null: reasoning models reject it.
	Temperature *float64
	// ReasoningEffort is passed as-is ("low", "medium", "high"…).
	ReasoningEffort *string
	// MaxTokens is max_tokens, which OpenRouter, vLLM and Ollama honour;
	// OpenAI's reasoning models want MaxCompletionTokens instead.
	MaxTokens           *int
	MaxCompletionTokens *int
	// Extra holds body members added to this request (a model's request
	// template, §6.3), each a JSON value. A member the request sets itself
	// wins: model, messages, tools, tool_choice, stream, stream_options and
	// n are refused here (ErrReservedField), and temperature,
	// reasoning_effort, max_tokens and max_completion_tokens are taken from
	// Extra only when their field above is nil.
	Extra map[string]json.RawMessage
	// Header holds headers sent with this request only. They go over
	// Config.Header's (a name given in both is sent with this value), and
	// under the client's own: Content-Type, Accept and, when a key is
	// configured, Authorization are always the client's.
	Header http.Header
}

// ReservedFields are the body members Extra may never set: they make the
// call what it is, or would change how its answer is read.
var ReservedFields = []string{"model", "messages", "tools", "tool_choice", "stream", "stream_options", "n"}

// ChatResponse is the first choice of an answer.
type ChatResponse struct {
	ID string
	// Model is the model the provider says answered (OpenRouter names the
	// routed model here).
	Model   string
	Content string
	// Refusal is OpenAI's structured refusal text, if any.
	Refusal string
	// ToolCalls may hold several calls. Look at them, not FinishReason, to
	// know whether the model called tools: servers disagree on the reason.
	ToolCalls    []ToolCall
	FinishReason string
	Usage        Usage
}

// Message returns the assistant turn to append to the conversation.
func (r *ChatResponse) Message() Message {
	return AssistantMessage(r.Content, r.ToolCalls...)
}

// Usage counts the tokens of one call as the provider reported them (zero
// when it did not).
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// PromptTokensDetails.CachedTokens counts the prompt tokens the
	// provider served from its prefix cache (0 when not reported).
	PromptTokensDetails TokenDetails `json:"prompt_tokens_details"`
	// Cost is the provider's own price of the call in the account's
	// currency (OpenRouter's usage.cost); nil when it gave none.
	Cost *float64 `json:"cost,omitempty"`
}

// TokenDetails is usage.prompt_tokens_details.
type TokenDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

type wireChatRequest struct {
	Model               string        `json:"model"`
	Messages            []wireMessage `json:"messages"`
	Tools               []wireTool    `json:"tools,omitempty"`
	ToolChoice          any           `json:"tool_choice,omitempty"`
	Temperature         *float64      `json:"temperature,omitempty"`
	ReasoningEffort     *string       `json:"reasoning_effort,omitempty"`
	MaxTokens           *int          `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int          `json:"max_completion_tokens,omitempty"`
}

type wireChatResponse struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content   json.RawMessage `json:"content"`
			Refusal   *string         `json:"refusal"`
			ToolCalls []wireToolCall  `json:"tool_calls"`
		} `json:"message"`
		FinishReason string          `json:"finish_reason"`
		Error        json.RawMessage `json:"error"` // OpenRouter, with finish_reason "error"
	} `json:"choices"`
	Usage Usage           `json:"usage"`
	Error json.RawMessage `json:"error"` // OpenRouter: an error raised after the 200 status
}

// encode checks req and renders its JSON body.
func (req ChatRequest) encode() ([]byte, error) {
	if req.Model == "" {
		return nil, errors.New("no model named")
	}
	if len(req.Messages) == 0 {
		return nil, errors.New("no messages")
	}
	w := wireChatRequest{
		Model:               req.Model,
		Temperature:         req.Temperature,
		ReasoningEffort:     req.ReasoningEffort,
		MaxTokens:           req.MaxTokens,
		MaxCompletionTokens: req.MaxCompletionTokens,
	}
	for i, m := range req.Messages {
		wm, err := m.wire()
		if err != nil {
			return nil, fmt.Errorf("messages[%d] (%s): %w", i, m.Role, err)
		}
		w.Messages = append(w.Messages, wm)
	}
	for i, t := range req.Tools {
		wt, err := t.wire()
		if err != nil {
			return nil, fmt.Errorf("tools[%d]: %w", i, err)
		}
		w.Tools = append(w.Tools, wt)
	}
	if req.ToolChoice != nil {
		choice, err := req.ToolChoice.wire()
		if err != nil {
			return nil, err
		}
		w.ToolChoice = choice
	}
	body, err := json.Marshal(w)
	if err != nil || len(req.Extra) == 0 {
		return body, err
	}
	return mergeExtra(body, req.Extra, map[string]bool{
		"temperature": w.Temperature != nil, "reasoning_effort": w.ReasoningEffort != nil,
		"max_tokens": w.MaxTokens != nil, "max_completion_tokens": w.MaxCompletionTokens != nil,
	})
}

// mergeExtra appends extra's members, in name order, to the JSON object
// body, leaving out those the request already set.
func mergeExtra(body []byte, extra map[string]json.RawMessage, set map[string]bool) ([]byte, error) {
	names := make([]string, 0, len(extra))
	for name := range extra {
		if slices.Contains(ReservedFields, name) {
			return nil, fmt.Errorf("extra body field %q: %w", name, ErrReservedField)
		}
		if !json.Valid(extra[name]) {
			return nil, fmt.Errorf("extra body field %q is not a JSON value", name)
		}
		if !set[name] {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	out := bytes.NewBuffer(body[:len(body)-1]) // without the closing brace
	for _, name := range names {
		key, _ := json.Marshal(name)
		out.WriteByte(',')
		out.Write(key)
		out.WriteByte(':')
		if err := json.Compact(out, extra[name]); err != nil {
			return nil, fmt.Errorf("extra body field %q: %w", name, err)
		}
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// ErrReservedField is the cause of a request whose Extra sets a member the
// client owns.
var ErrReservedField = errors.New("the client sets this member itself")

// Chat sends req to POST <endpoint>/chat/completions and returns the first
// choice. Every error is an *APIError; a reply stopped by a content filter is
// an error of KindContentFilter, not a response.
func (c *Client) Chat(ctx context.Context, req ChatRequest) (*ChatResponse, error) {
	k := c.call("chat/completions", req.Model)
	body, err := req.encode()
	if err != nil {
		return nil, k.fail(KindBadRequest, 0, "not sent: "+err.Error(), err)
	}
	data, err := c.postAs(ctx, k, "application/json", body, req.Header)
	if err != nil {
		return nil, err
	}
	return decodeChat(k, data)
}

func decodeChat(k call, data []byte) (*ChatResponse, error) {
	var w wireChatResponse
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, k.fail(KindMalformed, http.StatusOK, fmt.Sprintf("answer is not a chat completion (%v); %s", err, k.excerpt(data)), err)
	}
	if present(w.Error) {
		return nil, errorInBody(k, data)
	}
	if len(w.Choices) == 0 {
		return nil, k.fail(KindMalformed, http.StatusOK, "answer has no choices; "+k.excerpt(data), nil)
	}
	ch := w.Choices[0]
	switch ch.FinishReason {
	case "content_filter":
		return nil, k.fail(KindContentFilter, http.StatusOK, `the provider's content filter stopped the reply (finish_reason "content_filter")`, nil)
	case "error":
		if present(ch.Error) {
			return nil, errorInBody(k, []byte(`{"error":`+string(ch.Error)+`}`))
		}
		return nil, k.fail(KindServerError, http.StatusOK, `the reply ended with finish_reason "error"`, nil)
	}
	content, ok := readContent(ch.Message.Content)
	if !ok {
		return nil, k.fail(KindMalformed, http.StatusOK, "choices[0].message.content is neither text nor content parts", nil)
	}
	resp := &ChatResponse{
		ID:           w.ID,
		Model:        w.Model,
		Content:      content,
		ToolCalls:    readToolCalls(ch.Message.ToolCalls),
		FinishReason: ch.FinishReason,
		Usage:        w.Usage,
	}
	if ch.Message.Refusal != nil {
		resp.Refusal = *ch.Message.Refusal
	}
	return resp, nil
}

// errorInBody reports an error object found in a 200 answer.
func errorInBody(k call, data []byte) error {
	b := parseErrorBody(data)
	msg := b.Message
	if msg == "" {
		msg = "the answer carries an error object; " + k.excerpt(data)
	}
	e := k.fail(classifyInBody(b), http.StatusOK, msg, nil)
	e.Type, e.Code = k.redact(b.Type), k.redact(b.Code)
	return e
}

func present(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}
