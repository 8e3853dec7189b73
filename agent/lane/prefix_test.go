package lane

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"choir/internal/openai"
	"choir/testkit/openaitest"
)

// prefixSession is a session of turns over the real client and two
// pretend providers with the prefix cache on: edge answers the edge, core
// the core jobs (one stream per job, keyed by its CoreJobStart). Every
// fourth turn from the second spawns a core job, which reads a file and
// finishes while the edge answers; the turn at skillTurn runs the review
// skill through its states (start, read, transition, write, transition);
// the other turns read a file and answer.
type prefixSession struct {
	e          *env
	edge, core *openaitest.Server
}

const skillTurn = 10

func newPrefixSession(tb testing.TB) *prefixSession {
	core := openaitest.New(tb)
	coreClient, err := openai.New(openai.Config{Endpoint: core.URL(), APIKey: "sk-core"})
	if err != nil {
		tb.Fatal(err)
	}
	e := newEnv(tb, envOptions{skills: true, laneTools: true, coreModel: coreClient, budgets: unlimited, compactor: &compactor{},
		ident: Identity{UserMD: "Name: Ada. Lives in Lyon.", SoulMD: "Be brief and exact.", SoulCoreMD: "Check your work."}})
	e.model.PrefixCache(nil) // the edge is one stream
	core.PrefixCache(func(r *openaitest.Request) string {
		for _, m := range r.Messages() {
			if m.Role != "system" {
				return m.Content // the job's CoreJobStart
			}
		}
		return ""
	})
	for i := range 20 {
		e.write(fmt.Sprintf("notes/%d.txt", i), fmt.Sprintf("note %d: %s\n", i, strings.Repeat("some text ", 20)))
	}
	e.write("a.txt", "the file under review\n")
	return &prefixSession{e: e, edge: e.model, core: core}
}

// turn runs turn i and waits for what it started to end.
func (p *prefixSession) turn(tb testing.TB, i int) {
	e := p.e
	id := func(s string) string { return fmt.Sprintf("t%d-%s", i, s) }
	switch {
	case i == skillTurn:
		e.model.Expect(
			openaitest.Chat().ReplyToolCalls(tc(id("s"), "choir_skill_start", `{"skill":"review"}`)),
			openaitest.Chat().ReplyToolCalls(tc(id("r"), "choir_fs_read", `{"path":"a.txt"}`)),
			openaitest.Chat().ReplyToolCalls(tc(id("c"), "choir_skill_transition", `{"on":"complete"}`)),
			openaitest.Chat().ReplyToolCalls(tc(id("w"), "choir_fs_write", `{"path":"review.txt","op":"create","content":"Fine.\n"}`)),
			openaitest.Chat().ReplyToolCalls(tc(id("d"), "choir_skill_transition", `{"on":"done"}`)),
			openaitest.Chat().ReplyText("Reviewed a.txt: see review.txt."))
		if got := e.handle("Review a.txt, please."); !strings.HasPrefix(got, "Reviewed") {
			tb.Fatalf("turn %d: reply = %q", i, got)
		}
	case i%4 == 1:
		job := fmt.Sprintf("job-%d", i)
		p.core.Expect(
			openaitest.Chat().ReplyToolCalls(tc(id("cr"), "choir_fs_read", fmt.Sprintf(`{"path":"notes/%d.txt"}`, i))),
			openaitest.Chat().ReplyToolCalls(tc(id("cf"), "choir_core_finish", finishArgs(fmt.Sprintf("note %d read", i)))))
		e.model.Expect(
			openaitest.Chat().ReplyToolCalls(tc(id("sp"), "choir_core_spawn", spawnArgs(job, fmt.Sprintf("Read notes/%d.txt and summarise it.", i)))),
			openaitest.Chat().ReplyText("Started "+job+"."))
		if got := e.handle(fmt.Sprintf("Summarise note %d in the background.", i)); !strings.HasPrefix(got, "Started") {
			tb.Fatalf("turn %d: reply = %q", i, got)
		}
		if r := e.nextReport(); r.kind != ReportCompleted {
			tb.Fatalf("turn %d: report = %+v", i, r)
		}
		e.waitFor("the job to end", func() bool { return e.lane.coresRunning() == 0 })
	default:
		e.model.Expect(
			openaitest.Chat().ReplyToolCalls(tc(id("r"), "choir_fs_read", fmt.Sprintf(`{"path":"notes/%d.txt"}`, i))),
			openaitest.Chat().ReplyText(fmt.Sprintf("Note %d says some text.", i)))
		if got := e.handle(fmt.Sprintf("What does note %d say?", i)); !strings.HasPrefix(got, "Note") {
			tb.Fatalf("turn %d: reply = %q", i, got)
		}
	}
}

// cacheShare is the share of prompt tokens the pretend caches served.
func (p *prefixSession) cacheShare() (share float64, cached, prompt int) {
	for _, s := range []*openaitest.Server{p.edge, p.core} {
		for _, r := range s.Requests() {
			c, t := r.CacheTokens()
			cached += c
			prompt += t
		}
	}
	return float64(cached) / float64(prompt), cached, prompt
}

// The first message, and the tools offered, are byte-for-byte the same at
// every call of a session whose turns spawn core jobs (the edge talks while
// they run) and move a skill through its states; what changes (the running
// jobs, the skill's state) is in the state note that ends the request. Each
// core job's prompt, likewise, only grows at its end.
func TestStablePrefix(t *testing.T) {
	p := newPrefixSession(t)
	for i := range 12 {
		p.turn(t, i)
	}
	edge := p.edge.Requests()
	first, tools := edge[0].Messages()[0], edge[0].ToolNames()
	notes := map[string]bool{}
	for _, r := range edge {
		if m := r.Messages()[0]; m.Role != first.Role || m.Content != first.Content {
			t.Errorf("edge request %d: first message changed:\n%q\nwant\n%q", r.Number, m.Content, first.Content)
		}
		if got := r.ToolNames(); !slices.Equal(got, tools) {
			t.Errorf("edge request %d: tools = %v; want %v", r.Number, got, tools)
		}
		ms := r.Messages()
		if last := ms[len(ms)-1]; strings.HasPrefix(last.Content, "[choir] Now: ") {
			for _, k := range []string{"Core jobs running now: job-", "The skill review is running, in the state read", "in the state write"} {
				if strings.Contains(last.Content, k) {
					notes[k] = true
				}
			}
		}
	}
	if len(notes) != 3 {
		t.Errorf("state notes seen = %v; want the running jobs and both skill states", notes)
	}
	// Every core request extends the previous one of its job.
	var prev []openaitest.Message
	for _, r := range p.core.Requests() {
		ms := r.Messages()
		if len(prev) > 0 && ms[2].Content == prev[2].Content { // system, SOUL-CORE.md, CoreJobStart
			for k := range prev {
				if ms[k].Content != prev[k].Content || ms[k].Role != prev[k].Role {
					t.Errorf("core request %d: message %d changed from the job's previous request", r.Number, k)
					break
				}
			}
		}
		if ms[0].Content != p.core.Requests()[0].Messages()[0].Content {
			t.Errorf("core request %d: first message differs from the first job's", r.Number)
		}
		prev = ms
	}
	if share, _, _ := p.cacheShare(); share < 0.5 {
		t.Errorf("prefix-cache share = %.2f; want most of the prompt served from the cache", share)
	}
}
