package demomodel

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"choir/internal/openai"
)

func TestDemoModel(t *testing.T) {
	srv := httptest.NewServer(&Server{})
	defer srv.Close()
	c, err := openai.New(openai.Config{Endpoint: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	tools := []openai.Tool{
		{Name: "choir_exec", Parameters: json.RawMessage(`{"type":"object"}`)},
		{Name: "choir_fs_read", Parameters: json.RawMessage(`{"type":"object"}`)},
		{Name: "choir_fs_write", Parameters: json.RawMessage(`{"type":"object"}`)},
	}
	ask := func(msgs ...openai.Message) *openai.ChatResponse {
		t.Helper()
		resp, err := c.Chat(context.Background(), openai.ChatRequest{Model: "demo", Messages: msgs, Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	tests := []struct {
		say, tool, arg string
	}{
		{"please list the files", "choir_exec", `"command":"ls -la"`},
		{"read notes.md", "choir_fs_read", `"path":"notes.md"`},
		{"note: buy milk", "choir_fs_write", `"content":"buy milk\n"`},
	}
	for _, tc := range tests {
		resp := ask(openai.UserMessage(tc.say))
		if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != tc.tool || !strings.Contains(resp.ToolCalls[0].Arguments, tc.arg) {
			t.Errorf("%q → %+v; want %s with %s", tc.say, resp.ToolCalls, tc.tool, tc.arg)
		}
	}
	resp := ask(openai.UserMessage("hello there"))
	if !strings.HasPrefix(resp.Content, Prefix) || !strings.Contains(resp.Content, "not a real model") {
		t.Errorf("chat reply = %q; want it to say it is the demo model", resp.Content)
	}
	// The summary of a graceful stop: session_summary called with what
	// its schema requires.
	sum, err := c.Chat(context.Background(), openai.ChatRequest{Model: "demo",
		Messages: []openai.Message{openai.SystemMessage("sum up"), openai.UserMessage("[ev 1a2b] user: hi\n[ev 3c4d] assistant: hello\n")},
		Tools:    []openai.Tool{{Name: "session_summary", Parameters: json.RawMessage(`{"type":"object"}`)}}, ToolChoice: &openai.ToolChoice{Function: "session_summary"}})
	if err != nil || len(sum.ToolCalls) != 1 || sum.ToolCalls[0].Name != "session_summary" || !strings.Contains(sum.ToolCalls[0].Arguments, "after 2 events") {
		t.Errorf("summary request → %+v, %v; want session_summary counting 2 events", sum, err)
	}
	call := openai.ToolCall{ID: "c1", Name: "choir_exec", Arguments: `{"command":"ls -la"}`}
	resp = ask(openai.UserMessage("list files"), openai.AssistantMessage("", call), openai.ToolMessage("c1", `{"status":"success","summary":"exit 0","stdout":"notes.md\n"}`))
	if !strings.HasPrefix(resp.Content, Prefix) || !strings.Contains(resp.Content, "notes.md") {
		t.Errorf("reply after a tool result = %q; want an account naming notes.md", resp.Content)
	}
}

func TestDemoModelMail(t *testing.T) {
	srv := httptest.NewServer(&Server{})
	defer srv.Close()
	c, err := openai.New(openai.Config{Endpoint: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	var tools []openai.Tool
	for _, n := range []string{"choir_fs_read", "choir_email_check", "choir_email_receive", "choir_email_send"} {
		tools = append(tools, openai.Tool{Name: n, Parameters: json.RawMessage(`{"type":"object"}`)})
	}
	for _, tc := range []struct{ say, tool, arg string }{
		{"check mail", "choir_email_check", `{}`},
		{"any new emails?", "choir_email_check", `{}`},
		{"read my mail", "choir_email_receive", `"mark_seen":true`},
		{"mail bob@example.com: lunch at noon?", "choir_email_send", `"subject":"lunch at noon?","to":["bob@example.com"]`},
		{"read notes.md", "choir_fs_read", `"path":"notes.md"`},
	} {
		resp, err := c.Chat(context.Background(), openai.ChatRequest{Model: "demo", Messages: []openai.Message{openai.UserMessage(tc.say)}, Tools: tools})
		if err != nil || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != tc.tool || !strings.Contains(resp.ToolCalls[0].Arguments, tc.arg) {
			t.Errorf("%q → %+v, %v; want %s with %s", tc.say, resp, err, tc.tool, tc.arg)
		}
	}
	call := openai.ToolCall{ID: "c1", Name: "choir_email_receive", Arguments: `{}`}
	resp, err := c.Chat(context.Background(), openai.ChatRequest{Model: "demo", Tools: tools, Messages: []openai.Message{
		openai.UserMessage("read mail"), openai.AssistantMessage("", call),
		openai.ToolMessage("c1", `{"status":"success","summary":"1 of 1 unseen messages in INBOX","messages":[{"from":["Zoë <z@x.org>"],"subject":"Hi","text":"See you.\n"}]}`)}})
	if err != nil || !strings.Contains(resp.Content, "from Zoë <z@x.org>: Hi\nSee you.") {
		t.Errorf("account of a receive = %q, %v; want the message shown", resp.Content, err)
	}
}
