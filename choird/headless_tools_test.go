package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"choir/choird/headless"
	"choir/choird/headless/objects"
	"choir/choird/store"
	"choir/internal/rpc"
)

type fakeSessions map[string]store.Session

func (f fakeSessions) GetSession(_ context.Context, id string) (store.Session, error) {
	s, ok := f[id]
	if !ok {
		return store.Session{}, store.ErrNotFound
	}
	return s, nil
}

var _ sessionRuns = fakeSessions(nil)

// The run tools act on the run of the calling session only, refuse any
// other session, and answer the director's refusals so the model can mend
// its call.
func TestRunHostTools(t *testing.T) {
	ctx := context.Background()
	d := headless.New(headless.NewMemStore())
	item, err := d.AddWorkItem(ctx, headless.NewWorkItem{Agent: "alpha", Description: "big job", Acceptance: []string{"it works"}})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := d.StartRun(ctx, headless.NewRun{WorkItem: item.ID})
	if _, _, err := d.MarkRunning(ctx, r.ID, strings.Repeat("a", 40), "/wt/x", ""); err != nil {
		t.Fatal(err)
	}
	other, _ := d.AddWorkItem(ctx, headless.NewWorkItem{Agent: "alpha", Description: "other", Acceptance: []string{"x"}})
	r2, _ := d.StartRun(ctx, headless.NewRun{WorkItem: other.ID})
	sessions := fakeSessions{
		"run-s":   {SessionID: "run-s", AgentID: "alpha", Kind: store.SessionRun, RunID: r.ID, Status: store.SessionActive},
		"inter-s": {SessionID: "inter-s", AgentID: "alpha", Kind: store.SessionInteractive, Status: store.SessionActive},
		"ended-s": {SessionID: "ended-s", AgentID: "alpha", Kind: store.SessionRun, RunID: r.ID, Status: store.SessionStopped},
	}
	objs, err := objects.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var told []string
	tools := runHostTools(sessions, d, objs, func(agentID, text string) { told = append(told, agentID+": "+text) })
	call := func(name, agent, session, input string) (json.RawMessage, error) {
		return tools[name](ctx, agent, session, json.RawMessage(input))
	}
	code := func(err error) string {
		var c interface{ ToolCode() string }
		if errors.As(err, &c) {
			return c.ToolCode()
		}
		return ""
	}

	// Refused outside the run's own session.
	for _, tc := range []struct{ agent, session string }{{"alpha", "inter-s"}, {"alpha", "ended-s"}, {"beta", "run-s"}, {"alpha", "nobody"}} {
		if _, err := call(rpc.HostToolRunNote, tc.agent, tc.session, `{"type":"OBSERVATION","text":"x"}`); code(err) != "forbidden" {
			t.Errorf("note from agent %s session %s = %v; want forbidden", tc.agent, tc.session, err)
		}
	}
	// The run comes from the session, never the input.
	if _, err := call(rpc.HostToolRunNote, "alpha", "run-s", `{"type":"OBSERVATION","text":"x","run_id":"`+r2.ID+`"}`); code(err) != "invalid_input" || !strings.Contains(err.Error(), "run_id") {
		t.Errorf("note naming another run = %v; want invalid_input naming run_id", err)
	}
	// A hypothesis without its test: the director's words come back.
	_, err = call(rpc.HostToolRunNote, "alpha", "run-s", `{"type":"HYPOTHESIS","text":"the cache is stale","budget":{"tool_calls":3}}`)
	if code(err) != "invalid_input" || !strings.Contains(err.Error(), "test: a HYPOTHESIS note needs test") {
		t.Errorf("hypothesis without a test = %v; want refused naming test", err)
	}
	out, err := call(rpc.HostToolRunNote, "alpha", "run-s", `{"type":"HYPOTHESIS","text":"the cache is stale","test":"clear it and rerun","budget":{"tool_calls":3}}`)
	if err != nil || !strings.Contains(string(out), r.ID+"#") {
		t.Errorf("hypothesis = %s, %v; want its receipt", out, err)
	}
	// REQUEST_HELP reaches the DM.
	if _, err := call(rpc.HostToolRunNote, "alpha", "run-s", `{"type":"REQUEST_HELP","text":"which database should I use?"}`); err != nil {
		t.Fatal(err)
	}
	if len(told) != 1 || !strings.HasPrefix(told[0], "alpha: Run "+r.ID) || !strings.Contains(told[0], "which database should I use?") {
		t.Errorf("DM told %q; want the request for help", told)
	}
	// A spec change whose evidence does not check out is refused; one
	// citing an object the store holds is merged.
	if _, err := call(rpc.HostToolRunSpecChange, "alpha", "run-s", `{"paths":["SPECS/a.md"],"change":"x","evidence":["sha256:`+strings.Repeat("c", 64)+`"]}`); code(err) != "invalid_input" || !strings.Contains(err.Error(), "evidence[0]") {
		t.Errorf("spec change citing a missing object = %v; want refused at evidence[0]", err)
	}
	h, _ := objs.Put([]byte("benchmark: p50 12ms"))
	if out, err := call(rpc.HostToolRunSpecChange, "alpha", "run-s", `{"paths":["SPECS/a.md"],"change":"x","evidence":["sha256:`+h+`"]}`); err != nil || !strings.Contains(string(out), "merged") {
		t.Errorf("spec change citing an object = %s, %v; want merged", out, err)
	}
	if _, err := call(rpc.HostToolRunSpecChange, "alpha", "run-s", `{"paths":["SPECS/a.md"],"change":"x","evidence":["sha256:`+h+`"],"merged":true}`); code(err) != "invalid_input" {
		t.Errorf("spec change claiming merged = %v; want the field refused", err)
	}
	// A split with a cycle is refused; a good one recorded.
	if _, err := call(rpc.HostToolRunSplit, "alpha", "run-s", `{"reason":"too big","children":[{"description":"a","acceptance":["a"],"after":[1]},{"description":"b","acceptance":["b"],"after":[0]}]}`); code(err) != "invalid_input" || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("split with a cycle = %v; want refused", err)
	}
	if out, err := call(rpc.HostToolRunSplit, "alpha", "run-s", `{"reason":"too big","children":[{"description":"a","acceptance":["a"]},{"description":"b","acceptance":["b"],"after":[0]}]}`); err != nil || !strings.Contains(string(out), "split request recorded") {
		t.Errorf("split = %s, %v", out, err)
	}
	// Once the run ended, its session's calls are conflicts.
	d.EndRun(ctx, r.ID, headless.RunFailed, "test", "")
	if _, err := call(rpc.HostToolRunNote, "alpha", "run-s", `{"type":"OBSERVATION","text":"late"}`); code(err) != "conflict" {
		t.Errorf("note after the run ended = %v; want conflict", err)
	}
}
