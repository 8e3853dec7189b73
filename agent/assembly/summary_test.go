package assembly

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"choir/internal/config"
	"choir/internal/rpc"
	"choir/testkit/openaitest"
)

// stopAfterATurn runs a runtime against c, has one turn answered "Hello.",
// then stops the session as choird's agent stop does (the shutdown push)
// and waits for the stop to complete. It returns the final heartbeat and
// the agent's log.
func stopAfterATurn(t *testing.T, c *lanesChoird) (rpc.HeartbeatReq, string) {
	t.Helper()
	srv, sess, logs := runtimeFor(t, c)
	done := make(chan error, 1)
	go func() { done <- sess.Run(context.Background()) }()

	srv.Publish("s-1", rpc.EventUserMessage, rpc.UserMessage{ID: "m1", From: "console", Text: "Tidy my notes, please."})
	if r := c.waitDM(t, rpc.DMReply); r.Text != "Hello." {
		t.Errorf("reply = %+v", r)
	}
	srv.Publish("s-1", rpc.EventShutdown, map[string]string{"reason": "agent stop"})
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("session Run = %v; want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the session did not stop")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.terminate) != 1 {
		t.Errorf("TERMINATE_SELF sent %d times; want once", len(c.terminate))
	}
	// A heartbeat the stop cancelled in flight may still reach choird
	// after the final one: the final one is the last marked Final.
	for i := len(c.heartbeats) - 1; i >= 0; i-- {
		if c.heartbeats[i].Final {
			return c.heartbeats[i], logs.String()
		}
	}
	t.Fatalf("no final heartbeat among %d", len(c.heartbeats))
	return rpc.HeartbeatReq{}, ""
}

func summaryChoird(model *openaitest.Server) *lanesChoird {
	return newLanesChoird(map[string]config.Model{"m": {Provider: "openai", Model: "test-model", Endpoint: model.URL(), Secret: "k"}},
		"m", "", map[string]string{"k": "sk-test-5555"})
}

// agent stop: the lanes stop, the edge's model writes the session summary
// through session_summary, and the final heartbeat carries it (§11.8).
func TestGracefulStopSendsTheSessionSummary(t *testing.T) {
	model := openaitest.New(t)
	c := summaryChoird(model)
	model.Expect(
		openaitest.Chat().ReplyText("Hello."),
		openaitest.Chat().WantModel("test-model").WantTools("session_summary").
			Check(func(t testing.TB, req *openaitest.Request) {
				if msgs := req.Messages(); len(msgs) != 2 || !strings.Contains(msgs[1].Content, "Tidy my notes, please.") {
					t.Errorf("summary request messages = %+v; want the transcript with the user's message", msgs)
				}
			}).
			ReplyToolCalls(openaitest.ToolCall{ID: "s1", Name: "session_summary",
				Arguments: `{"title":"Notes","summary":"The user asked to tidy the notes.","decisions":[],"open_items":["Tidy the notes"],"facts":[]}`}),
	)
	final, log := stopAfterATurn(t, c)
	var got map[string]any
	if err := json.Unmarshal(final.Summary, &got); err != nil || got["title"] != "Notes" || got["summary"] != "The user asked to tidy the notes." {
		t.Errorf("final heartbeat summary = %s; want the model's", final.Summary)
	}
	if !strings.Contains(log, `"msg":"session summary made"`) {
		t.Errorf("the log does not say the summary was made")
	}
}

// A model that does not answer within session_summary_timeout_ms, or
// answers without the tool: the stop completes without a summary, and one
// log line says why.
func TestGracefulStopWithoutASummary(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply *openaitest.Step
		why   string
	}{
		{"model times out", openaitest.Chat().Hang(), "session summary skipped: the model did not answer within session_summary_timeout_ms (300 ms)"},
		{"no tool call", openaitest.Chat().ReplyText("It went well."), "session summary skipped: the model answered without calling session_summary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := openaitest.New(t)
			c := summaryChoird(model)
			c.dyn.Tunables.SessionSummaryTimeoutMS = 300
			model.Expect(openaitest.Chat().ReplyText("Hello."), tc.reply)
			final, log := stopAfterATurn(t, c)
			if len(final.Summary) != 0 {
				t.Errorf("final heartbeat summary = %s; want none", final.Summary)
			}
			if n := strings.Count(log, "session summary skipped"); n != 1 || !strings.Contains(log, tc.why) {
				t.Errorf("the log says %d times that the summary was skipped; want once: %q", n, tc.why)
			}
		})
	}
}
