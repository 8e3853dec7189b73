package demomodel

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"choir/internal/openai"
)

// The lane offers every tool at every call and ends the request with a
// state note while a skill or core jobs run: the demo model does what the
// note allows, as it did when the lane offered only that.
func TestStateNote(t *testing.T) {
	srv := httptest.NewServer(&Server{})
	defer srv.Close()
	c, err := openai.New(openai.Config{Endpoint: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	var tools []openai.Tool
	for _, n := range []string{"choir_core_spawn", "choir_exec", "choir_fs_read", "choir_fs_write", "choir_propose_skill", "choir_skill_start", "choir_skill_transition", "choir_skill_finish"} {
		tools = append(tools, openai.Tool{Name: n, Parameters: json.RawMessage(`{"type":"object"}`)})
	}
	ask := func(msgs ...openai.Message) *openai.ChatResponse {
		t.Helper()
		resp, err := c.Chat(context.Background(), openai.ChatRequest{Model: "demo", Messages: msgs, Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	name := func(r *openai.ChatResponse) string {
		if len(r.ToolCalls) != 1 {
			return ""
		}
		return r.ToolCalls[0].Name
	}
	for _, tc := range []struct {
		name string
		msgs []openai.Message
		want string
	}{
		{"no skill: no transition", []openai.Message{openai.UserMessage("note: milk")}, "choir_fs_write"},
		{"a skill state", []openai.Message{openai.UserMessage("build skill x"),
			openai.UserMessage(notePrefix + "The skill skill-builder is running, in the state understand.\nObjective: o\nTools allowed in this state: choir.memory.query, choir.fs.read.\nWhen the objective is met, call choir.skill.transition with one of: complete.")},
			"choir_skill_transition"},
		{"the propose state", []openai.Message{openai.UserMessage("build skill x"),
			openai.UserMessage(notePrefix + "The skill skill-builder is running, in the state propose.\nObjective: o\nTools allowed in this state: choir.propose.skill.\nWhen the objective is met, call choir.skill.transition with one of: complete.")},
			"choir_propose_skill"},
		{"cores running: no write", []openai.Message{openai.UserMessage("note: milk"),
			openai.UserMessage(notePrefix + "Core jobs running now: j. Until they end you may use only read-only tools (choir.fs.read) and the core job tools.")},
			""},
		{"cores running: read", []openai.Message{openai.UserMessage("read a.txt"),
			openai.UserMessage(notePrefix + "Core jobs running now: j. Until they end you may use only read-only tools (choir.fs.read) and the core job tools.")},
			"choir_fs_read"},
	} {
		if got := name(ask(tc.msgs...)); got != tc.want {
			t.Errorf("%s: called %q; want %q", tc.name, got, tc.want)
		}
	}
}
