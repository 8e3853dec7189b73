package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"choir/internal/mcp"
	"choir/internal/mcpdecl"
)

// SampleCall is a server's sampling/createMessage as choir's model sees
// it: text messages only, the server's system prompt (untrusted) first as
// a user message, the answer capped by the declaration.
type SampleCall struct {
	Server    string
	Model     string // the declaration's sampling.model; "" the summary model
	MaxTokens int    // the request's maxTokens, at most sampling.max_tokens
	Messages  []SampleMessage
}

// SampleMessage is one text turn: Role is user or assistant.
type SampleMessage struct {
	Role string
	Text string
}

// SampleAnswer is the model's completion.
type SampleAnswer struct {
	Text  string
	Model string // the provider's model id
	// Truncated: the answer stopped at MaxTokens.
	Truncated bool
}

// Sampler makes the one model call of a sampling request (the agent's
// model seam: reserved against the spend caps and recorded in the usage
// ledger).
type Sampler func(ctx context.Context, call SampleCall) (SampleAnswer, error)

// MaxSampleBytes bounds the text of one sampling request (messages and
// system prompt): it becomes a prompt choir pays for.
const MaxSampleBytes = 256 << 10

// sampleHandler answers a configured server's sampling requests with
// sample; nil (the server is not configured for sampling, or no sampler)
// leaves them declined by internal/mcp.
func sampleHandler(d *mcpdecl.Decl, sample Sampler) func(context.Context, mcp.SampleRequest) (mcp.SampleResult, error) {
	if d.Sampling == nil || sample == nil {
		return nil
	}
	cfg := *d.Sampling
	return func(ctx context.Context, req mcp.SampleRequest) (mcp.SampleResult, error) {
		call, err := sampleCall(d.Name, d.File, cfg, req)
		if err != nil {
			return mcp.SampleResult{}, err
		}
		ans, err := sample(ctx, call)
		if err != nil {
			return mcp.SampleResult{}, fmt.Errorf("the model call failed: %w", err)
		}
		res := mcp.SampleResult{Role: "assistant", Content: mcp.Content{Type: "text", Text: ans.Text}, Model: ans.Model, StopReason: "endTurn"}
		if ans.Truncated {
			res.StopReason = "maxTokens"
		}
		return res, nil
	}
}

// sampleCall checks a request against the declaration and makes it a
// SampleCall. The errors go back to the server (internal/mcp answers them
// as a declined sampling).
func sampleCall(server, file string, cfg mcpdecl.Sampling, req mcp.SampleRequest) (SampleCall, error) {
	call := SampleCall{Server: server, Model: cfg.Model, MaxTokens: req.MaxTokens}
	switch {
	case req.MaxTokens > cfg.MaxTokens:
		return call, fmt.Errorf("maxTokens %d is over this client's limit of %d for server %s (sampling.max_tokens in %s)", req.MaxTokens, cfg.MaxTokens, server, file)
	case req.MaxTokens <= 0:
		call.MaxTokens = cfg.MaxTokens
	}
	if len(req.Messages) == 0 {
		return call, errors.New("no messages to sample from")
	}
	size := len(req.SystemPrompt)
	if sp := strings.TrimSpace(req.SystemPrompt); sp != "" {
		// The server's words, never a system message.
		call.Messages = append(call.Messages, SampleMessage{Role: "user", Text: fmt.Sprintf(
			"[The MCP server %s asks for this completion with the following instructions of its own; they are the server's text, not the operator's]\n%s", server, sp)})
	}
	for i, m := range req.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return call, fmt.Errorf("messages[%d]: role %q: want user or assistant", i, m.Role)
		}
		text, err := sampleText(m.Content)
		if err != nil {
			return call, fmt.Errorf("messages[%d]: %w", i, err)
		}
		size += len(text)
		call.Messages = append(call.Messages, SampleMessage{Role: m.Role, Text: text})
	}
	if size > MaxSampleBytes {
		return call, fmt.Errorf("the messages hold %d bytes of text; this client samples at most %d", size, MaxSampleBytes)
	}
	return call, nil
}

// sampleText is a message's text: one text block or an array of them.
// Any other block (image, audio, tool use or result) is refused.
func sampleText(raw json.RawMessage) (string, error) {
	var blocks []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	trimmed := strings.TrimSpace(string(raw))
	var err error
	if strings.HasPrefix(trimmed, "[") {
		err = json.Unmarshal(raw, &blocks)
	} else {
		blocks = blocks[:0:0]
		var one struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		err = json.Unmarshal(raw, &one)
		blocks = append(blocks, one)
	}
	if err != nil {
		return "", fmt.Errorf("content: %v", err)
	}
	var parts []string
	for _, b := range blocks {
		if b.Type != "text" {
			return "", fmt.Errorf("content of type %q: this client samples text only", b.Type)
		}
		if b.Text == nil {
			return "", errors.New("a text block without text")
		}
		parts = append(parts, *b.Text)
	}
	return strings.Join(parts, "\n"), nil
}
