package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"choir/choird/lifecycle"
)

// An agent's MCP notice is bounded: its text, its members and how many a
// session may send.
func TestMCPNoticeBounds(t *testing.T) {
	h := mcpNoticeTool(nil, &lifecycle.Manager{}, slog.New(slog.DiscardHandler))
	for _, c := range []struct{ input, want string }{
		{`{"text":""}`, "empty"},
		{`{"text":"` + strings.Repeat("a", maxMCPNoticeBytes+1) + `"}`, "at most"},
		{`{"text":"x","dm":"admin"}`, "input"},
		{`[]`, "input"},
	} {
		if _, err := h(context.Background(), "agent-1", "s-1", json.RawMessage(c.input)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("notice %.60s = %v; want an error with %q", c.input, err, c.want)
		}
	}
	for i := range maxMCPNoticesInSession {
		if _, err := h(context.Background(), "agent-1", "s-1", json.RawMessage(`{"text":"tools changed"}`)); err != nil {
			t.Fatalf("notice %d = %v", i+1, err)
		}
	}
	if _, err := h(context.Background(), "agent-1", "s-1", json.RawMessage(`{"text":"tools changed"}`)); err == nil || !strings.Contains(err.Error(), "no more") {
		t.Errorf("notice past the session's bound = %v; want refused", err)
	}
	if _, err := h(context.Background(), "agent-1", "s-2", json.RawMessage(`{"text":"tools changed"}`)); err != nil {
		t.Errorf("another session's notice = %v; want sent", err)
	}
}
