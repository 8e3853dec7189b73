package lane

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"choir/agent/arbiter"
	"choir/agent/memory"
	"choir/internal/config"
	"choir/internal/openai"
	"choir/testkit/openaitest"
)

// Malformed CoreJobStarts get structured errors naming what is wrong; no
// job starts and no budget is spent.
func TestMalformedCoreJobStart(t *testing.T) {
	e, s := coreEnv(t, envOptions{budgets: config1Job()})
	bad := []struct{ args, code, path string }{
		{`{"job_name":"bad name!","task_spec":"x"}`, "invalid_input", "/job_name"},
		{`{"job_name":"ok"}`, "invalid_input", "/task_spec"},
		{`{"job_name":"x","task_spec":"y","output_schema":{"type":"object","pattern":"a"}}`, "invalid_input", "/output_schema"},
		{`{"job_name":"x","task_spec":"y","tool_constraints":{"allowed_tools":["choir.core.spawn"]}}`, "invalid_input", "/tool_constraints/allowed_tools/0"},
		{`{"job_name":"x","task_spec":"y","job_id":"forged"}`, "invalid_input", ""},
		{`{"job_name":"x","task_spec":"y","verbosity":"chatty"}`, "invalid_input", "/verbosity"},
		{`{"job_name":"x","task_spec":`, "invalid_input", ""},
	}
	var pairs []string
	for _, b := range bad {
		pairs = append(pairs, SpawnTool, b.args)
	}
	s.on("edge", use(pairs...), check(func(req openai.ChatRequest) {
		for i, b := range bad {
			id := "choir_core_spawn_" + string(rune('0'+i))
			out := toolResult(t, req, id)
			if errCode(out) != b.code || !strings.Contains(toolMessage(out), b.path) {
				t.Errorf("spawn %s = %v; want %s at %q", b.args, out, b.code, b.path)
			}
		}
	}, say("I could not start it.")))
	if got := e.handle("start"); got != "I could not start it." {
		t.Errorf("reply = %q", got)
	}
	if js := e.lane.Jobs(); len(js) != 0 {
		t.Errorf("Jobs = %+v", js)
	}
	if rem := e.lane.Status()[0].BudgetRemaining[BudgetCoreJobs]; rem != 1 {
		t.Errorf("core jobs left = %d; want 1", rem)
	}
	e.idle()
	e.noLocks()
}

func config1Job() config.Budgets { return config.Budgets{MaxCoreJobs: 1} }

// toolMessage is an error result's message, failures included.
func toolMessage(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	var b strings.Builder
	if m, ok := e["message"].(string); ok {
		b.WriteString(m)
	}
	fs, _ := e["failures"].([]any)
	for _, f := range fs {
		if p, ok := f.(map[string]any)["path"].(string); ok {
			b.WriteString(" " + p)
		}
	}
	return b.String()
}

// A name in use is refused while its job runs and free once it ended, with
// a new id; injecting into an ended job is refused: its id is void.
func TestJobNamesAndEndedJobs(t *testing.T) {
	e, s := coreEnv(t, envOptions{})
	gate := make(chan struct{})
	s.on("edge", use(SpawnTool, spawnArgs("fix", "fix it"), SpawnTool, spawnArgs("fix", "fix it again")),
		check(func(req openai.ChatRequest) {
			if out := toolResult(t, req, "choir_core_spawn_1"); errCode(out) != CodeJobNameInUse {
				t.Errorf("second spawn of fix = %v", out)
			}
		}, say("Started.")))
	s.on("fix", after(gate, use(FinishTool, finishArgs("fixed"))))
	e.handle("fix")
	first := e.lane.Jobs()[0].ID
	close(gate)
	e.nextReport()
	s.on("edge",
		use(InjectTool, `{"job_name":"fix","content":"more"}`,
			InjectTool, `{"job_name":"nope","content":"more"}`,
			InjectTool, `{"job_name":"fix","job_id":"`+first+`","content":"more"}`,
			CancelTool, `{"job_name":"fix"}`),
		check(func(req openai.ChatRequest) {
			for id, want := range map[string]string{"choir_core_inject_0": CodeJobEnded, "choir_core_inject_1": CodeUnknownJob,
				"choir_core_inject_2": CodeJobEnded, "choir_core_cancel_3": CodeJobEnded} {
				if out := toolResult(t, req, id); errCode(out) != want {
					t.Errorf("%s = %v; want %s", id, out, want)
				}
			}
		}, use(SpawnTool, spawnArgs("fix", "fix it again"))),
		say("Started again."))
	s.on("fix", use(FinishTool, finishArgs("fixed again")))
	e.handle("more")
	e.nextReport()
	js := e.lane.Jobs()
	if len(js) != 2 || js[0].ID == js[1].ID || js[1].ID != jobID("s-test", "fix", 2) {
		t.Errorf("Jobs = %+v; want two jobs called fix with different ids", js)
	}
	e.idle()
	e.noLocks()
}

// A model that never answers hits llm_call_timeout_ms: the edge tells the
// user and is idle again; a core job is terminated and reported.
func TestModelNeverAnswers(t *testing.T) {
	s := newScript(t)
	e := newEnv(t, envOptions{laneTools: true, model: s})
	e.mu.Lock()
	e.set.CallTimeout = 20 * time.Millisecond
	e.mu.Unlock()
	s.on("edge", hang())
	e.lane.Post(rpcMsg("m1", "hello?"))
	if r := e.nextReply(); !r.Error || !strings.Contains(r.Text, "timeout") {
		t.Errorf("reply = %+v", r)
	}
	e.idle()
	s.on("edge", use(SpawnTool, spawnArgs("slow", "x")), say("Started."))
	s.on("slow", hang())
	e.handle("again")
	if r := e.nextReport(); r.kind != ReportTerminated || !strings.Contains(r.text, "llm_timeout") {
		t.Errorf("report = %+v", r)
	}
	e.noLocks()
}

// Over HTTP, a core's model errors: a 429 is retried once after telling the
// user; a 500 terminates the job with an error event the edge reports.
func TestCoreModelErrors(t *testing.T) {
	coreSrv := openaitest.New(t)
	coreClient, err := openai.New(openai.Config{Endpoint: coreSrv.URL(), APIKey: "sk-core"})
	if err != nil {
		t.Fatal(err)
	}
	s := newScript(t)
	e := newEnv(t, envOptions{laneTools: true, model: s, coreModel: coreClient,
		coreSet: func() Settings { return Settings{Model: "core-model", RateLimitWait: time.Millisecond} }})
	coreSrv.Expect(
		openaitest.Chat().WantModel("core-model").ReplyRateLimited(""),
		openaitest.Chat().ReplyToolCalls(openaitest.ToolCall{ID: "f", Name: "choir_core_finish", Arguments: finishArgs("done")}),
		openaitest.Chat().ReplyError(500, "server_error", "", "the GPU caught fire"),
	)
	s.on("edge", use(SpawnTool, spawnArgs("one", "x")), say("Started."), use(SpawnTool, spawnArgs("two", "y")), say("Started."))
	e.handle("first")
	if r := e.nextReport(); r.kind != ReportCompleted {
		t.Errorf("report after a 429 = %+v", r)
	}
	if n := e.nextNotice(); !strings.Contains(n, "rate-limited") {
		t.Errorf("notice = %q", n)
	}
	e.handle("second")
	r := e.nextReport()
	if r.job != "two" || r.kind != ReportTerminated || !strings.Contains(r.text, "llm_error") || !strings.Contains(r.text, "the GPU caught fire") {
		t.Errorf("report after a 500 = %+v", r)
	}
	e.noLocks()
}

// A 500 on the edge goes to the user as an error reply; the edge is idle.
func TestEdgeServerErrorReported(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.model.Expect(openaitest.Chat().ReplyError(500, "server_error", "", "overloaded"))
	e.lane.Post(rpcMsg("m1", "hi"))
	r := e.nextReply()
	if r.ReplyTo != "m1" || !r.Error || !strings.Contains(r.Text, "overloaded") {
		t.Errorf("reply = %+v", r)
	}
	e.idle()
}

// A compaction whose delta fails validation changes nothing: the error is
// structured, the window and summary stay, nothing is committed.
func TestCompactionRefusesBadDelta(t *testing.T) {
	e := newEnv(t, envOptions{compactor: badDelta{}})
	e.model.Expect(
		openaitest.Chat().ReplyText("one"), openaitest.Chat().ReplyText("two"), openaitest.Chat().ReplyText("three"),
		openaitest.Chat().Check(conversation(sys(DefaultInstructions), user("1"), asst("one"), user("2"), asst("two"), user("3"), asst("three"), user("4"))).ReplyText("four"),
	)
	for _, m := range []string{"1", "2", "3"} {
		e.handle(m)
	}
	err := e.lane.Compact(context.Background())
	var de *memory.DeltaError
	if !errors.As(err, &de) || !slices.ContainsFunc(de.Failures, func(f memory.Failure) bool { return f.Path == "/memory_delta/mode" }) {
		t.Fatalf("Compact = %v; want a *memory.DeltaError at /memory_delta/mode", err)
	}
	e.handle("4")
	if n := len(e.events(arbiter.MemoryWriteCommitted)); n != 0 {
		t.Errorf("%d MemoryWriteCommitted events", n)
	}
	e.idle()
	e.noLocks()
}

// badDelta answers every compaction with a delta of an unknown mode.
type badDelta struct{}

func (badDelta) Chat(context.Context, openai.ChatRequest) (*openai.ChatResponse, error) {
	return &openai.ChatResponse{ToolCalls: []openai.ToolCall{{ID: "d", Name: memory.DeltaTool,
		Arguments: `{"memory_delta":{"mode":"rewrite","summary_update":"everything is fine"}}`}}}, nil
}

func (b badDelta) ChatWithRateLimitRetry(ctx context.Context, req openai.ChatRequest, _ openai.RateLimitRetry) (*openai.ChatResponse, error) {
	return b.Chat(ctx, req)
}
