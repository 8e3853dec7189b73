package lane

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"choir/agent/arbiter"
	"choir/internal/openai"
)

// An agent killed in the middle of a turn, while a core job runs a command,
// is resumed from choird's snapshot and stored tail (§13.2): the core job
// goes on with its history and is told its command was interrupted (never
// run again), the edge answers the user's unanswered message, and the
// session budgets spent before the crash still count.
func TestResumeGoesOnWhereTheSessionStopped(t *testing.T) {
	e, s := coreEnv(t, envOptions{})
	gate, _ := fifo(t) // never released: the agent dies while the command waits
	edgeBlocked := make(chan struct{})
	s.on("edge", use(SpawnTool, spawnArgs("brew", "make tea")), say("Brewing."),
		func(ctx context.Context, _ openai.ChatRequest) (*openai.ChatResponse, error) {
			close(edgeBlocked)
			<-ctx.Done()
			return nil, ctx.Err()
		},
		check(func(req openai.ChatRequest) {
			// The unanswered message, with no answer after it (a note of
			// the core job's end may follow it).
			at := -1
			for i, m := range req.Messages {
				if m.Role == openai.RoleUser && m.Content == "and biscuits?" {
					at = i
				}
			}
			if at < 0 {
				t.Errorf("the resumed turn's prompt lacks the unanswered user message: %+v", req.Messages)
				return
			}
			for _, m := range req.Messages[at+1:] {
				if m.Role == openai.RoleAssistant {
					t.Errorf("the resumed turn's prompt answers the message already: %+v", m)
				}
			}
		}, say("In the tin.")))
	s.on("brew", use("choir.exec", `{"command":"echo ran >> runs.txt; cat `+gate+`"}`),
		check(func(req openai.ChatRequest) {
			out := toolResult(t, req, "choir_exec_0")
			if errCode(out) != "interrupted" {
				t.Errorf("the resumed job's interrupted command = %v; want an interrupted error", out)
			}
			if !slices.ContainsFunc(req.Messages, func(m openai.Message) bool { return strings.Contains(m.Content, "make tea") }) {
				t.Error("the resumed job lost its CoreJobStart")
			}
		}, use(FinishTool, finishArgs("tea made"))))
	if got := e.handle("tea please"); got != "Brewing." {
		t.Fatalf("reply = %q", got)
	}
	e.lane.Post(rpcMsg("m2", "and biscuits?"))
	<-edgeBlocked
	e.waitFor("brew's command running", func() bool { return e.read("runs.txt") == "ran\n" })
	raw, err := e.lane.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var snap Snapshot
	json.Unmarshal(raw, &snap)
	snapRev, _ := e.a.Head()
	stored := e.a.Events(0) // what choird holds when the agent is killed
	usedBefore := e.lane.session.spentSoFar()
	e.stop() // the old lanes stop; what they commit now is lost with them

	from := TailFrom(raw, snapRev)
	if from >= snapRev && snapRev > 0 {
		t.Fatalf("TailFrom = %d; want before the snapshot's revision %d (the open job and the windows)", from, snapRev)
	}
	baseHash, _ := e.a.HashAt(from)
	b := arbiter.New(arbiter.Config{Tools: e.lane.cfg.Tools, Workspace: e.ws})
	intr, err := b.Restore(from, baseHash, stored[from:])
	if err != nil {
		t.Fatal(err)
	}
	if len(intr) != 1 || intr[0].Tool != "choir.exec" || !intr[0].Ran {
		t.Errorf("interrupted = %+v; want brew's running choir.exec", intr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go b.Run(ctx)
	cfg := e.lane.cfg
	cfg.Arbiter = b
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.Resume(Resume{Snapshot: raw, SnapshotRev: snapRev, Events: b.Events(0)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Jobs) != 1 || got.Jobs[0] != "brew" || !got.Turn {
		t.Fatalf("Resume = %+v; want brew going on and the edge's turn", got)
	}
	if u := l.session.spentSoFar(); u != usedBefore {
		t.Errorf("budgets spent after resuming = %+v; want %+v as before the crash", u, usedBefore)
	}
	ran := make(chan error, 1)
	go func() { ran <- l.Run(ctx) }()
	for {
		r := e.nextReply()
		if r.ReplyTo == "m2" {
			if r.Text != "In the tin." || r.Error {
				t.Errorf("the resumed turn's reply = %+v", r)
			}
			break
		}
	}
	for {
		r := e.nextReport()
		if r.job == "brew" && r.kind == ReportCompleted {
			if !strings.Contains(r.text, "tea made") {
				t.Errorf("brew's report = %+v", r)
			}
			break
		}
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, "runs.txt")); string(b) != "ran\n" {
		t.Errorf("runs.txt = %q; want the one run from before the crash", b)
	}
	cancel()
	<-ran
}
