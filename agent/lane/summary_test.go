package lane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"choir/agent/memory"
	"choir/internal/config"
	"choir/internal/openai"
	"choir/testkit/demomodel"
	"choir/testkit/openaitest"
)

const goodSummary = `{"title":"Notes tidied","summary":"The user asked to tidy the notes; the agent renamed a.txt.",` +
	`"decisions":["Keep notes in notes/"],"open_items":[],"facts":["The user is Ada."]}`

// wantSummaryCall checks a session summary request: the one tool
// session_summary, required, and the session's events in the prompt.
func wantSummaryCall(has ...string) func(testing.TB, *openaitest.Request) {
	return func(t testing.TB, req *openaitest.Request) {
		t.Helper()
		choice, _ := json.Marshal(req.JSON["tool_choice"])
		if want := `{"function":{"name":"session_summary"},"type":"function"}`; string(choice) != want {
			t.Errorf("tool_choice = %s; want %s (the summary tool required)", choice, want)
		}
		msgs := req.Messages()
		if len(msgs) != 2 || msgs[0].Role != "system" || msgs[1].Role != "user" {
			t.Fatalf("summary request messages = %+v; want the instructions and the transcript", msgs)
		}
		for _, h := range has {
			if !strings.Contains(msgs[1].Content, h) {
				t.Errorf("the transcript lacks %q:\n%s", h, msgs[1].Content)
			}
		}
	}
}

// The session summary is one model call over the edge's transcript that
// must call session_summary; its arguments come back checked and
// normalised, and its tokens count against the session.
func TestSessionSummary(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.model.Expect(openaitest.Chat().ReplyText("Renamed it."))
	e.handle("Rename notes/a.txt, please.")
	e.model.Expect(openaitest.Chat().WantModel("test-model").WantTools("session_summary").
		Check(wantSummaryCall("user: Rename notes/a.txt, please.", "assistant: Renamed it.")).
		WithUsage(300, 50).
		ReplyToolCalls(tc("call_s", "session_summary",
			`{"title":"  Notes tidied ","summary":"The user asked to tidy the notes; the agent renamed a.txt.",`+
				`"decisions":["Keep notes in notes/"],"open_items":["  "],"facts":["The user is Ada."]}`)))
	before := e.lane.session.remaining()[BudgetSessionTokens]

	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	doc, err := e.lane.SessionSummary(ctx)
	if err != nil {
		t.Fatalf("SessionSummary = %v", err)
	}
	if string(doc) != goodSummary {
		t.Errorf("SessionSummary = %s\nwant %s", doc, goodSummary)
	}
	if after := e.lane.session.remaining()[BudgetSessionTokens]; before-after != 350 {
		t.Errorf("the summary call used %d tokens of the session budget; want 350, as the provider reported", before-after)
	}
}

// Whatever the model gets wrong, SessionSummary returns no summary and an
// error saying what (the caller logs it and goes on stopping).
func TestSessionSummaryRefusals(t *testing.T) {
	long := strings.Repeat("x", summaryTitleMax+1)
	huge := make([]string, 80)
	for i := range huge {
		huge[i] = strings.Repeat("f", summaryItemMax)
	}
	hugeFacts, _ := json.Marshal(huge)
	cases := []struct {
		name  string
		reply *openaitest.Step
		is    error
		has   string
	}{
		{"text, no tool call", openaitest.Chat().ReplyText("The session was about notes."), ErrNoSummaryCall, "without calling session_summary"},
		{"another tool", openaitest.Chat().ReplyToolCalls(tc("c", "choir_fs_read", `{"path":"a"}`)), ErrNoSummaryCall, ""},
		{"invalid JSON", openaitest.Chat().ReplyToolCalls(tc("c", "session_summary", `{"title":`)), ErrBadSummary, "invalid JSON"},
		{"title missing", openaitest.Chat().ReplyToolCalls(tc("c", "session_summary", `{"summary":"s","decisions":[],"open_items":[],"facts":[]}`)), ErrBadSummary, "/title: required"},
		{"unknown member", openaitest.Chat().ReplyToolCalls(tc("c", "session_summary", `{"title":"t","summary":"s","decisions":[],"open_items":[],"facts":[],"mood":"x"}`)), ErrBadSummary, "/mood"},
		{"list of numbers", openaitest.Chat().ReplyToolCalls(tc("c", "session_summary", `{"title":"t","summary":"s","decisions":[1],"open_items":[],"facts":[]}`)), ErrBadSummary, "/decisions/0"},
		{"title too long", openaitest.Chat().ReplyToolCalls(tc("c", "session_summary", `{"title":"`+long+`","summary":"s","decisions":[],"open_items":[],"facts":[]}`)), ErrBadSummary, "/title"},
		{"blank title", openaitest.Chat().ReplyToolCalls(tc("c", "session_summary", `{"title":"   ","summary":"s","decisions":[],"open_items":[],"facts":[]}`)), ErrBadSummary, "more than white space"},
		{"an array", openaitest.Chat().ReplyToolCalls(tc("c", "session_summary", `["title"]`)), ErrBadSummary, "want object"},
		{"over 64 KiB", openaitest.Chat().ReplyToolCalls(tc("c", "session_summary", `{"title":"t","summary":"s","decisions":[],"open_items":[],"facts":`+string(hugeFacts)+`}`)), ErrBadSummary, "the limit is 65536 bytes"},
		{"HTTP 500", openaitest.Chat().ReplyError(500, "server_error", "", "boom"), nil, "session summary call"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			e.model.Expect(openaitest.Chat().ReplyText("Hello."))
			e.handle("hi")
			e.model.Expect(tt.reply)
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			doc, err := e.lane.SessionSummary(ctx)
			if err == nil || doc != nil {
				t.Fatalf("SessionSummary = %s, %v; want no summary and an error", doc, err)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("SessionSummary error = %v; want %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.has) {
				t.Errorf("SessionSummary error = %v; want it to say %q", err, tt.has)
			}
		})
	}
}

// A model that does not answer in time gives no summary: the caller's
// deadline ends the call.
func TestSessionSummaryTimeout(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.model.Expect(openaitest.Chat().ReplyText("Hello."), openaitest.Chat().Hang())
	e.handle("hi")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	doc, err := e.lane.SessionSummary(ctx)
	if err == nil || doc != nil {
		t.Fatalf("SessionSummary = %s, %v; want no summary and the timeout", doc, err)
	}
	var api *openai.APIError
	if !errors.Is(err, context.DeadlineExceeded) && !(errors.As(err, &api) && api.Kind == openai.KindTimeout) {
		t.Errorf("SessionSummary error = %v; want a timeout", err)
	}
}

// A session whose token budget is spent, and one where nothing happened,
// make no model call (the fake fails on any request it does not expect).
func TestSessionSummaryWithoutACall(t *testing.T) {
	t.Run("budget spent", func(t *testing.T) {
		e := newEnv(t, envOptions{budgets: config.Budgets{TotalSessionTokens: 50}})
		e.model.Expect(openaitest.Chat().WithUsage(40, 20).ReplyText("Hello."))
		e.handle("hi")
		doc, err := e.lane.SessionSummary(context.Background())
		var be *BudgetError
		if doc != nil || !errors.As(err, &be) || be.Budget != BudgetSessionTokens {
			t.Errorf("SessionSummary = %s, %v; want the spent total_session_tokens budget", doc, err)
		}
	})
	t.Run("nothing happened", func(t *testing.T) {
		e := newEnv(t, envOptions{})
		if doc, err := e.lane.SessionSummary(context.Background()); doc != nil || !errors.Is(err, ErrNothingToSummarize) {
			t.Errorf("SessionSummary = %s, %v; want ErrNothingToSummarize", doc, err)
		}
	})
}

// The transcript a summary call carries is bounded by half the model's
// context window: the newest events are kept, and the prompt says how many
// older ones were left out.
func TestSummaryRequestIsBounded(t *testing.T) {
	var window []memory.Entry
	for i := range 200 {
		window = append(window, memory.Entry{Rev: int64(i + 1), Hash: fmt.Sprintf("%064x", i+1), Type: "UserMsg",
			Msg: openai.UserMessage(fmt.Sprintf("message %d %s", i+1, strings.Repeat("z", 400)))})
	}
	req := summaryRequest(memory.Summary{Summary: "Earlier: the user set up notes."}, window, Settings{Model: "m", ContextWindow: 2000})
	text := req.Messages[1].Content
	if n := len(text); n > 2000/2*4+200 {
		t.Errorf("the transcript is %d bytes; want about half the 2000-token window (4000 bytes)", n)
	}
	for _, want := range []string{"Earlier: the user set up notes.", "message 200 ", "older events are left out"} {
		if !strings.Contains(text, want) {
			t.Errorf("the transcript lacks %q", want)
		}
	}
	if strings.Contains(text, "message 1 ") {
		t.Error("the transcript kept the oldest event and dropped newer ones")
	}
	if req.ToolChoice == nil || req.ToolChoice.Function != SummaryTool || len(req.Tools) != 1 {
		t.Errorf("tools = %+v, choice %+v; want session_summary alone, required", req.Tools, req.ToolChoice)
	}
}

// The demo model (make demo) answers the summary call with a summary the
// schema takes, so `choirctl session show` has one after a demo's stop.
func TestDemoModelWritesAValidSummary(t *testing.T) {
	srv := httptest.NewServer(&demomodel.Server{})
	defer srv.Close()
	c, err := openai.New(openai.Config{Endpoint: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOptions{model: c})
	e.handle("hello")
	doc, err := e.lane.SessionSummary(context.Background())
	if err != nil || !strings.Contains(string(doc), "a demo session") {
		t.Errorf("SessionSummary with the demo model = %s, %v; want its summary", doc, err)
	}
}
