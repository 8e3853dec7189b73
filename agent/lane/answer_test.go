package lane

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"choir/agent/arbiter"
	"choir/internal/openai"
)

// countSchema is an output_schema asking for {"count": integer}.
const countSchema = `"{\"type\":\"object\",\"required\":[\"count\"],\"properties\":{\"count\":{\"type\":\"integer\"}}}"`

// A core whose model answers in plain text, with no tool call, has given
// its final answer (§7.3 REASONING -> COMPLETED): the job ends after that
// one model call and the user's report carries the text. With an
// output_schema the text must be the result; an answer that is neither
// text nor a tool call terminates the job. Every case makes exactly one
// model call and is reported once.
func TestCoreTextAnswerEndsJob(t *testing.T) {
	tests := []struct {
		name     string
		schema   string // output_schema member of the CoreJobStart, JSON
		text     string // the core model's only answer
		kind     string // ReportCompleted or ReportTerminated
		state    string
		has      []string // in the report
		summary  string   // the final result's summary, when completed
		result   string   // the final result's result, compact JSON
		errCode  string   // the job's error code, when terminated
		edgeSees string   // in the edge's next prompt
	}{
		{name: "plain text", text: "The answer is 42: six times seven.\n",
			kind: ReportCompleted, state: "CORE_COMPLETED", has: []string{"finished: The answer is 42: six times seven."},
			summary: "The answer is 42: six times seven.", edgeSees: "[choir] Core job job completed: The answer is 42: six times seven."},
		{name: "markdown text is kept as written", text: "## Findings\n\n- a.go: ok\n- b.go: `nil` check missing",
			kind: ReportCompleted, state: "CORE_COMPLETED", has: []string{"## Findings\n\n- a.go: ok\n- b.go: `nil` check missing"},
			summary: "## Findings\n\n- a.go: ok\n- b.go: `nil` check missing"},
		{name: "text that looks like JSON, no schema", text: `{"count": 3}`,
			kind: ReportCompleted, state: "CORE_COMPLETED", has: []string{`finished: {"count": 3}`}, summary: `{"count": 3}`},
		{name: "schema, bare JSON result", schema: countSchema, text: ` {"count": 3} `,
			kind: ReportCompleted, state: "CORE_COMPLETED", has: []string{`"count": 3`}, summary: answeredWithResult, result: `{"count":3}`,
			edgeSees: `Result: {"count":3}`},
		{name: "schema, fenced JSON result", schema: countSchema, text: "```json\n{\"count\": 4}\n```",
			kind: ReportCompleted, state: "CORE_COMPLETED", has: []string{`"count": 4`}, summary: answeredWithResult, result: `{"count":4}`},
		{name: "schema, prose", schema: countSchema, text: "There are three files.",
			kind: ReportTerminated, state: "CORE_TERMINATED", errCode: CodeInvalidResult,
			has: []string{CodeInvalidResult, "output_schema", "not JSON", "There are three files."}},
		{name: "schema, JSON of the wrong shape", schema: countSchema, text: `{"count": "three"}`,
			kind: ReportTerminated, state: "CORE_TERMINATED", errCode: CodeInvalidResult,
			has: []string{CodeInvalidResult, "/count", `{"count": "three"}`}},
		{name: "schema, JSON then more text", schema: countSchema, text: "{\"count\": 3}\nThat is all.",
			kind: ReportTerminated, state: "CORE_TERMINATED", errCode: CodeInvalidResult, has: []string{"not JSON"}},
		{name: "schema, unclosed fence", schema: countSchema, text: "```json\n{\"count\": 3}",
			kind: ReportTerminated, state: "CORE_TERMINATED", errCode: CodeInvalidResult, has: []string{"not JSON"}},
		{name: "empty answer", text: "",
			kind: ReportTerminated, state: "CORE_TERMINATED", errCode: "llm_error", has: []string{"neither text nor a tool call"}},
		{name: "blank answer", text: " \n\t ",
			kind: ReportTerminated, state: "CORE_TERMINATED", errCode: "llm_error", has: []string{"neither text nor a tool call"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, s := coreEnv(t, envOptions{})
			spawn := `{"job_name":"job","task_spec":"count the files"}`
			if tt.schema != "" {
				spawn = `{"job_name":"job","task_spec":"count the files","output_schema":` + tt.schema + `}`
			}
			s.on("edge", use(SpawnTool, spawn), say("Started."))
			s.on("job", say(tt.text))
			e.handle("how many files?")

			r := e.nextReport()
			if r.job != "job" || r.kind != tt.kind {
				t.Fatalf("report = %+v; want %s", r, tt.kind)
			}
			for _, want := range tt.has {
				if !strings.Contains(r.text, want) {
					t.Errorf("report = %q; want it to contain %q", r.text, want)
				}
			}
			if n := len(s.requests("job")); n != 1 {
				t.Errorf("the job made %d model calls; want 1", n)
			}
			js := e.lane.Jobs()
			if len(js) != 1 || js[0].State != tt.state || js[0].Steps != 1 {
				t.Fatalf("Jobs = %+v; want one job in %s after 1 step", js, tt.state)
			}
			// What is committed (and replicated): CoreStopped with the
			// final result or the error.
			stopped := e.events(arbiter.CoreStopped)
			if len(stopped) != 1 {
				t.Fatalf("%d CoreStopped events; want 1", len(stopped))
			}
			var p stoppedPayload
			if err := json.Unmarshal(stopped[0].Payload, &p); err != nil {
				t.Fatal(err)
			}
			if p.State != tt.state {
				t.Errorf("CoreStopped state = %s; want %s", p.State, tt.state)
			}
			if tt.kind == ReportCompleted {
				if p.Final == nil || p.Final.Summary != tt.summary || string(compact(t, p.Final.Result)) != tt.result {
					t.Errorf("final result = %+v; want summary %q, result %s", p.Final, tt.summary, tt.result)
				}
			} else if p.Error == nil || p.Error.Code != tt.errCode || js[0].Error == nil || js[0].Error.Code != tt.errCode {
				t.Errorf("job error = %+v (status %+v); want code %s", p.Error, js[0].Error, tt.errCode)
			}
			if tt.edgeSees != "" {
				s.on("edge", check(func(req openai.ChatRequest) {
					if !anyContains(req.Messages, tt.edgeSees) {
						t.Errorf("the edge's next prompt lacks %q", tt.edgeSees)
					}
				}, say("ok")))
				e.handle("and?")
			}
			if n := len(s.requests("job")); n != 1 {
				t.Errorf("the job made %d model calls in the end; want 1", n)
			}
			e.noLocks()
		})
	}
}

// A reply with text and tool calls is not an answer: the calls run and
// the job goes on; its later text-only reply ends it.
func TestCoreTextWithToolCallsGoesOn(t *testing.T) {
	e, s := coreEnv(t, envOptions{})
	e.write("a.txt", "alpha\n")
	s.on("edge", use(SpawnTool, spawnArgs("job", "read a.txt")), say("Started."))
	s.on("job",
		withText("Let me read it first.", use("choir.fs.read", `{"path":"a.txt"}`)),
		check(func(req openai.ChatRequest) {
			if out := toolResult(t, req, "choir_fs_read_0"); !strings.Contains(fmt.Sprint(out), "alpha") {
				t.Errorf("read = %v", out)
			}
		}, say("a.txt says alpha.")))
	e.handle("what does a.txt say?")
	r := e.nextReport()
	if r.kind != ReportCompleted || !strings.Contains(r.text, "a.txt says alpha.") || strings.Contains(r.text, "Let me read it first.") {
		t.Errorf("report = %+v", r)
	}
	if n := len(s.requests("job")); n != 2 {
		t.Errorf("the job made %d model calls; want 2", n)
	}
}

// withText adds text to the tool calls of next's answer.
func withText(text string, next answer) answer {
	return func(ctx context.Context, req openai.ChatRequest) (*openai.ChatResponse, error) {
		resp, err := next(ctx, req)
		if resp != nil {
			resp.Content = text
		}
		return resp, err
	}
}

func anyContains(ms []openai.Message, s string) bool {
	for _, m := range ms {
		if strings.Contains(m.Content, s) {
			return true
		}
	}
	return false
}

// compact is raw JSON without insignificant space ("" for none).
func compact(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	if len(raw) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("result %q: %v", raw, err)
	}
	out, _ := json.Marshal(v)
	return out
}
