package arbiter

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"choir/agent/lock"
	"choir/agent/tool"
	"choir/internal/chain"
	"choir/internal/rpc"
)

// A session resumed from its stored log (§13.2, §13.3): a call committed
// before the crash is answered from the log and never runs again; a call
// that was running or waiting for its locks gets an interrupted result and
// never runs; new events continue the chain; a tail that does not verify
// is refused.
func TestRestoreNeverRunsACallTwice(t *testing.T) {
	block := make(chan struct{})
	runs := 0
	appendTool := func(ws string) *fakeTool {
		return &fakeTool{name: "test.append", mode: "X", run: func(ctx context.Context, in fakeInput, env tool.Env) (tool.Result, error) {
			if in.Tag == "block" {
				<-block
			}
			runs++
			f, err := os.OpenFile(filepath.Join(env.Workspace, in.Path), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return tool.Result{}, err
			}
			defer f.Close()
			f.WriteString(in.Tag + "\n")
			return tool.Success("appended", nil), nil
		}}
	}
	h := newHarness(t, Config{}, appendTool(""))
	// block is never closed: the call it holds and the one waiting for its
	// lock stay pending, as in an agent that died, and write nothing.
	ctx := context.Background()
	done := Proposal{ID: "edge/1/0", Lane: lock.Edge, Tool: "test.append", Input: json.RawMessage(`{"path":"runs.txt","tag":"done"}`)}
	h.submit(ctx, done)
	go h.a.Submit(ctx, Proposal{ID: "edge/3/0", Lane: lock.Edge, Tool: "test.append", Input: json.RawMessage(`{"path":"runs.txt","tag":"block"}`)})
	h.waitEvent("the blocking call running", isEvent(ToolCallCommitted, "edge/3/0"))
	go h.a.Submit(ctx, Proposal{ID: "core:j/5/0", Lane: mustCore("j"), Tool: "test.append", Input: json.RawMessage(`{"path":"runs.txt","tag":"waits"}`)})
	h.waitEvent("the waiting call requested", isEvent(ToolCallRequested, "core:j/5/0"))
	stored := h.a.Events(0) // what choird holds when the agent dies

	// The tail after revision 2 on a snapshot there; the log before it is
	// not held again.
	const base = 2
	baseHash, _ := h.a.HashAt(base)
	reg, err := tool.Load([]tool.Tool{appendTool("")}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	b := New(Config{Tools: reg, Workspace: h.ws})
	if _, err := b.Restore(base, "forged", stored[base:]); err == nil || !strings.Contains(err.Error(), "hash") {
		t.Fatalf("Restore from a wrong hash = %v; want a chain error", err)
	}
	if _, err := b.Restore(base, baseHash, stored[base+1:]); err == nil {
		t.Fatal("Restore of a tail with a gap succeeded")
	}
	// The whole log, so that the finished call's result is known.
	intr, err := b.Restore(0, "", stored)
	if err != nil {
		t.Fatal(err)
	}
	if len(intr) != 2 || intr[0].ID != "edge/3/0" || !intr[0].Ran || intr[1].ID != "core:j/5/0" || intr[1].Ran || intr[1].Job != "j" {
		t.Fatalf("interrupted = %+v; want edge/3/0 (ran) then core:j/5/0 (never started)", intr)
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go b.Run(runCtx)

	again, err := b.Submit(ctx, done)
	if err != nil || !again.Replayed || again.Status != tool.StatusSuccess {
		t.Errorf("resubmitting the finished call = %+v, %v; want its stored result, replayed", again, err)
	}
	for _, id := range []string{"edge/3/0", "core:j/5/0"} {
		out, err := b.Submit(ctx, Proposal{ID: id, Lane: lock.Edge, Tool: "test.append", Input: json.RawMessage(`{"path":"runs.txt","tag":"again"}`)})
		if err != nil || !out.Replayed || !strings.Contains(string(out.Output), tool.CodeInterrupted) {
			t.Errorf("resubmitting the interrupted %s = %+v, %v; want its interrupted result", id, out, err)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(h.ws, "runs.txt")); string(got) != "done\n" || runs != 1 {
		t.Errorf("runs.txt = %q after %d runs; want the one run from before the crash", got, runs)
	}
	fresh, err := b.Submit(ctx, Proposal{ID: "edge/9/0", Lane: lock.Edge, Tool: "test.append", Input: json.RawMessage(`{"path":"new.txt","tag":"new"}`)})
	if err != nil || fresh.Replayed || fresh.Status != tool.StatusSuccess {
		t.Fatalf("a new call = %+v, %v; want it run", fresh, err)
	}
	all := b.Events(0)
	evs := make([]chain.Event, len(all))
	for i, e := range all {
		evs[i] = chain.Event(e)
	}
	if err := chain.Verify("", evs); err != nil || all[0].Rev != 1 || all[len(all)-1].Rev != fresh.Rev {
		t.Errorf("the resumed log does not verify from genesis through the new call: %v", err)
	}

	// Restored on a base: the events before it are not held, their hash is.
	c := New(Config{Tools: reg, Workspace: h.ws})
	if _, err := c.Restore(base, baseHash, stored[base:]); err != nil {
		t.Fatal(err)
	}
	if got := c.Events(0); len(got) == 0 || got[0].Rev != base+1 {
		t.Errorf("Events(0) of a log restored on revision %d starts at %v; want %d", base, revs(got), base+1)
	}
	if h, ok := c.HashAt(base); !ok || h != baseHash {
		t.Errorf("HashAt(base) = %q, %v; want the base hash", h, ok)
	}
	if _, ok := c.HashAt(1); ok {
		t.Error("HashAt of a revision before the base is known")
	}
}

func revs(evs []rpc.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Rev
	}
	return out
}
