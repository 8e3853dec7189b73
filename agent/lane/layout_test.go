package lane

import (
	"context"
	"strings"
	"testing"

	"choir/agent/arbiter"
	"choir/internal/openai"
	"choir/testkit/openaitest"
)

// The edge's prompt in its exact §11.3 order once compaction has folded old
// events: system, USER.md, SOUL.md, reference summary, event window, the
// current message, this turn. Rolled-off events start a compaction in the
// background; the next request carries the summary.
func TestEdgeLayoutWithCompaction(t *testing.T) {
	c := &compactor{}
	e := newEnv(t, envOptions{window: 4, compactor: c, ident: Identity{UserMD: "Name: Ada.", SoulMD: "Be brief.", SoulCoreMD: "unused here"}})
	e.write("a.txt", "alpha\n")
	ident := []want{sys(DefaultInstructions), sys("# USER.md\n\nName: Ada."), sys("# SOUL.md\n\nBe brief.")}
	summary := want{role: "system", has: []string{"# Reference summary", `{"summary":"folded 4 events","facts":[],`}}
	for _, w := range []string{"one", "two", "three", "four"} {
		e.model.Expect(openaitest.Chat().ReplyText(w))
	}
	e.model.Expect(
		openaitest.Chat().Check(conversation(append(ident, summary, user("3"), asst("three"), user("4"), asst("four"), user("5"))...)).
			ReplyToolCalls(tc("r1", "choir_fs_read", `{"path":"a.txt"}`)),
		openaitest.Chat().Check(conversation(append(ident, summary, user("3"), asst("three"), user("4"), asst("four"), user("5"),
			calls("choir_fs_read"), result("r1", "alpha"))...)).ReplyText("five"),
	)
	for _, m := range []string{"1", "2", "3"} {
		e.handle(m)
	}
	if len(c.reqs) != 0 {
		t.Fatalf("compaction before the window filled")
	}
	e.handle("4") // 6 events before it: 2 rolled off; compaction folds down to 2
	if n := e.nextNotice(); !strings.Contains(n, "compacted my working memory (edge lane): 4 older events") {
		t.Errorf("notice = %q", n)
	}
	if got := e.handle("5"); got != "five" {
		t.Errorf("reply = %q", got)
	}
	writes := e.events(arbiter.MemoryWriteCommitted)
	if len(writes) != 1 || !strings.Contains(string(writes[0].Payload), `"folded":[1,2,3,4]`) || writes[0].Lane != arbiter.LaneEdge {
		t.Errorf("MemoryWriteCommitted = %v", writes)
	}
	// The compaction call saw the folded events with their ids.
	if got := c.reqs[0].Messages[1].Content; !strings.Contains(got, "user: 1") || !strings.Contains(got, "assistant: two") || strings.Contains(got, "user: 3") {
		t.Errorf("compaction prompt = %q", got)
	}
}

// A core job's prompt in its exact order, over HTTP: system (core
// instructions), SOUL-CORE.md, reference summary, the CoreJobStart, then the
// event window (§11.3 puts the CoreJobStart last; before the window, a job's
// steps share their whole prefix); never USER.md or SOUL.md. The core's own compaction
// (choir.memory.compact) runs while it works; the request after it carries
// the summary.
func TestCoreLayout(t *testing.T) {
	coreSrv := openaitest.New(t)
	coreClient, err := openai.New(openai.Config{Endpoint: coreSrv.URL(), APIKey: "sk-core"})
	if err != nil {
		t.Fatal(err)
	}
	c := &compactor{hold: make(chan struct{})}
	s := newScript(t)
	e := newEnv(t, envOptions{laneTools: true, model: s, coreModel: coreClient, compactor: c,
		ident: Identity{UserMD: "Name: Ada.", SoulMD: "Be brief.", SoulCoreMD: "Be exact."}})
	e.write("a.txt", "alpha\n")
	e.write("b.txt", "beta\n")
	head := []want{sys(DefaultCoreInstructions), sys("# SOUL-CORE.md\n\nBe exact.")}
	job := want{role: "user", has: []string{"# CoreJobStart\n\n{", `"job_name": "read"`, `"task_spec": "Read a.txt and b.txt."`, "call " + FinishTool}}
	compacted := make(chan struct{})
	coreSrv.Expect(
		openaitest.Chat().WantModel("test-model").Check(conversation(append(head, job)...)).
			ReplyToolCalls(tc("c1", "choir_fs_read", `{"path":"a.txt"}`)),
		openaitest.Chat().Check(conversation(append(head, job, calls("choir_fs_read"), result("c1", "alpha"))...)).
			ReplyToolCalls(tc("c2", "choir_fs_read", `{"path":"b.txt"}`)),
		openaitest.Chat().Check(conversation(append(head, job, calls("choir_fs_read"), result("c1", "alpha"), calls("choir_fs_read"), result("c2", "beta"))...)).
			ReplyToolCalls(tc("c3", "choir_memory_compact", `{}`)),
		// The compaction is held: this request is built before it ends;
		// the reply waits for it.
		openaitest.Chat().Check(conversation(append(head, job, calls("choir_fs_read"), result("c1", "alpha"), calls("choir_fs_read"), result("c2", "beta"),
			calls("choir_memory_compact"), result("c3", "compaction started"))...)).
			Check(func(testing.TB, *openaitest.Request) { close(c.hold); <-compacted }).
			ReplyToolCalls(tc("c4", "choir_fs_read", `{"path":"a.txt"}`)),
		// c1's call was folded, so its result goes too.
		openaitest.Chat().Check(conversation(append(head, want{role: "system", has: []string{"# Reference summary", "folded 1 events"}}, job,
			calls("choir_fs_read"), result("c2", "beta"), calls("choir_memory_compact"), result("c3", "compaction started"), calls("choir_fs_read"), result("c4", "alpha"))...)).
			ReplyToolCalls(tc("f", "choir_core_finish", finishArgs("a says alpha, b says beta"))),
	)
	s.on("edge", use(SpawnTool, `{"job_name":"read","task_spec":"Read a.txt and b.txt."}`), say("Reading."))
	e.handle("read my files")
	if n := e.nextNotice(); !strings.Contains(n, "core job read") {
		t.Errorf("notice = %q", n)
	}
	close(compacted)
	if r := e.nextReport(); r.kind != ReportCompleted {
		t.Errorf("report = %+v", r)
	}
	for _, req := range coreSrv.Requests() {
		for _, m := range req.Messages() {
			if strings.Contains(m.Content, "Name: Ada.") || strings.Contains(m.Content, "Be brief.") || strings.Contains(m.Content, "read my files") {
				t.Errorf("request %d to the core carries the edge's context: %q", req.Number, m.Content)
			}
		}
	}
}

// Manual compaction (/compact, choirctl session compact) folds all but the
// newest four events (and the current message); the lane keeps answering.
func TestManualCompaction(t *testing.T) {
	c := &compactor{text: "Ada asked about 1."}
	e := newEnv(t, envOptions{compactor: c})
	e.model.Expect(openaitest.Chat().ReplyText("one"), openaitest.Chat().ReplyText("two"), openaitest.Chat().ReplyText("three"),
		openaitest.Chat().Check(conversation(sys(DefaultInstructions), want{role: "system", has: []string{"Ada asked about 1."}},
			user("2"), asst("two"), user("3"), asst("three"), user("4"))).ReplyText("four"))
	for _, m := range []string{"1", "2", "3"} {
		e.handle(m)
	}
	if err := e.lane.Compact(context.Background()); err != nil {
		t.Fatalf("Compact = %v", err)
	}
	e.nextNotice()
	e.handle("4")
}
