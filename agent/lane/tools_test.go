package lane

import (
	"strings"
	"testing"

	"choir/agent/arbiter"
	"choir/internal/openai"
)

// choir.memory.query searches this session's log (store "working") by
// keyword or event id; a core job never finds the user's words; the other
// stores are not available yet.
func TestMemoryQueryWorkingStore(t *testing.T) {
	e, s := coreEnv(t, envOptions{})
	s.on("edge", say("Noted."))
	e.handle("my locker code is 4711")
	userEv := e.events(arbiter.UserMsg)[0]
	s.on("edge",
		use(QueryTool, `{"store":"working","query":"LOCKER code"}`,
			QueryTool, `{"store":"working","mode":"hash","query":"`+userEv.Hash[:12]+`"}`,
			QueryTool, `{"store":"session","mode":"semantic","query":"locker"}`,
			QueryTool, `{"store":"working","mode":"hash","query":"zz"}`),
		check(func(req openai.ChatRequest) {
			kw := toolResult(t, req, "choir_memory_query_0")
			hits, _ := kw["hits"].([]any)
			if len(hits) != 1 || !strings.Contains(hits[0].(map[string]any)["excerpt"].(string), "4711") {
				t.Errorf("keyword query = %v", kw)
			}
			byHash := toolResult(t, req, "choir_memory_query_1")
			hits, _ = byHash["hits"].([]any)
			if len(hits) != 1 || hits[0].(map[string]any)["hash"] != userEv.Hash {
				t.Errorf("hash query = %v", byHash)
			}
			if out := toolResult(t, req, "choir_memory_query_2"); errCode(out) != CodeNotAvailable {
				t.Errorf("session store = %v", out)
			}
			if out := toolResult(t, req, "choir_memory_query_3"); errCode(out) != "invalid_input" {
				t.Errorf("bad hash = %v", out)
			}
		}, use(SpawnTool, spawnArgs("look", "find the code"))),
		say("Started."))
	s.on("look", use(QueryTool, `{"store":"working","query":"4711"}`),
		check(func(req openai.ChatRequest) {
			out := toolResult(t, req, "choir_memory_query_0")
			if hits, _ := out["hits"].([]any); len(hits) != 0 {
				t.Errorf("a core job found the user's words: %v", out)
			}
		}, use(FinishTool, finishArgs("not found"))))
	e.handle("what was my code?")
	if r := e.nextReport(); r.kind != ReportCompleted {
		t.Errorf("report = %+v", r)
	}
}

// A core's reports reach the user as its verbosity says, and a question
// (need_info) reaches the edge's context too.
func TestCoreEventsRelayed(t *testing.T) {
	e, s := coreEnv(t, envOptions{})
	s.on("edge", use(SpawnTool, `{"job_name":"v","task_spec":"x","verbosity":"verbose"}`, SpawnTool, `{"job_name":"q","task_spec":"y","verbosity":"quiet"}`), say("Started."))
	for _, name := range []string{"v", "q"} {
		s.on(name,
			use(ReportTool, `{"type":"plan","text":"read, then write"}`, ReportTool, `{"type":"need_info","text":"which branch?"}`),
			use(FinishTool, finishArgs(name+" done")))
	}
	e.handle("go")
	got := map[string][]string{}
	for len(got["v"]) < 3 || len(got["q"]) < 1 {
		r := e.nextReport()
		got[r.job] = append(got[r.job], r.kind)
	}
	if strings.Join(got["v"], ",") != "plan,need_info,completed" || strings.Join(got["q"], ",") != "completed" {
		t.Errorf("reports = %v", got)
	}
	s.on("edge", check(func(req openai.ChatRequest) {
		var asked int
		for _, m := range req.Messages {
			if strings.Contains(m.Content, "needs information (the user was asked too): which branch?") {
				asked++
			}
		}
		if asked != 2 {
			t.Errorf("the edge saw %d questions; want 2", asked)
		}
	}, say("ok")))
	e.handle("status?")
	js := e.lane.Jobs()
	if js[0].Last == nil || js[0].Last.Type != EventNeedInfo {
		t.Errorf("last event of %s = %+v", js[0].Name, js[0].Last)
	}
}

// A final result must match the job's output_schema; a mismatch is a
// structured error the core can correct.
func TestFinishChecksOutputSchema(t *testing.T) {
	e, s := coreEnv(t, envOptions{})
	s.on("edge", use(SpawnTool, `{"job_name":"count","task_spec":"count the files","output_schema":"{\"type\":\"object\",\"required\":[\"count\"],\"properties\":{\"count\":{\"type\":\"integer\"}}}"}`), say("Counting."))
	s.on("count",
		use(FinishTool, `{"summary":"many","result":{"count":"many"}}`),
		check(func(req openai.ChatRequest) {
			out := toolResult(t, req, "choir_core_finish_0")
			if errCode(out) != CodeInvalidResult || !strings.Contains(toolMessage(out), "/result/count") {
				t.Errorf("finish with a bad result = %v", out)
			}
		}, use(FinishTool, `{"summary":"no result"}`)),
		check(func(req openai.ChatRequest) {
			last := req.Messages[len(req.Messages)-1]
			if last.Role != openai.RoleTool || !strings.Contains(last.Content, CodeInvalidResult) || !strings.Contains(last.Content, "/result") {
				t.Errorf("finish without a result = %+v", last)
			}
		}, use(FinishTool, `{"summary":"3 files","result":{"count":3}}`)))
	e.handle("how many files?")
	r := e.nextReport()
	if r.kind != ReportCompleted || !strings.Contains(r.text, "3 files") || !strings.Contains(r.text, `"count": 3`) {
		t.Errorf("report = %+v", r)
	}
}
