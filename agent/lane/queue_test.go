package lane

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"choir/agent/arbiter"
	"choir/internal/openai"
	"choir/internal/rpc"
)

// Messages sent while the edge is busy wait in the queue and are answered
// after, in order, each in a cycle of its own (no batching).
func TestMessagesQueueWhileBusy(t *testing.T) {
	e, s := coreEnv(t, envOptions{})
	gate := make(chan struct{})
	s.on("edge", after(gate, say("one")),
		check(func(req openai.ChatRequest) {
			n := len(req.Messages)
			if req.Messages[n-1].Content != "second" || req.Messages[n-2].Content != "one" {
				t.Errorf("second cycle ends with %q, %q", req.Messages[n-2].Content, req.Messages[n-1].Content)
			}
		}, say("two")),
		check(func(req openai.ChatRequest) {
			n := len(req.Messages)
			if req.Messages[n-1].Content != "third" || req.Messages[n-2].Content != "two" {
				t.Errorf("third cycle ends with %q, %q", req.Messages[n-2].Content, req.Messages[n-1].Content)
			}
		}, say("three")))
	e.lane.Post(rpcMsg("m1", "first"))
	e.waitFor("the first model call", func() bool { return len(s.requests("edge")) == 1 })
	e.lane.Post(rpcMsg("m2", "second"))
	e.lane.Post(rpcMsg("m3", "third"))
	if e.lane.Post(rpcMsg("m2", "second")) {
		t.Error("a repeated message id was queued")
	}
	if st := e.lane.State(); st != EdgeReasoning {
		t.Errorf("State while the model thinks = %v", st)
	}
	close(gate)
	var got []string
	for range 3 {
		r := e.nextReply()
		got = append(got, r.ReplyTo+":"+r.Text)
	}
	if want := []string{"m1:one", "m2:two", "m3:three"}; !slices.Equal(got, want) {
		t.Errorf("replies = %v; want %v", got, want)
	}
}

// /inject text reaches the edge at its next safe point: mid-turn, after the
// tool results and before the next model call; when idle, at once.
func TestInjectIntoEdge(t *testing.T) {
	e, s := coreEnv(t, envOptions{})
	e.write("a.txt", "alpha\n")
	gate := make(chan struct{})
	s.on("edge",
		after(gate, use("choir.fs.read", `{"path":"a.txt"}`)),
		check(func(req openai.ChatRequest) {
			n := len(req.Messages)
			if req.Messages[n-2].Role != openai.RoleTool || req.Messages[n-1].Content != "[/inject] and b.txt too" {
				t.Errorf("request after the injection ends with %+v", req.Messages[n-2:])
			}
		}, say("Read a; there is no b.")))
	e.lane.Post(rpcMsg("m1", "read a.txt"))
	e.waitFor("the first model call", func() bool { return len(s.requests("edge")) == 1 })
	e.lane.Inject(rpc.Injection{ID: "i1", Text: "and b.txt too"})
	e.lane.Inject(rpc.Injection{ID: "i1", Text: "and b.txt too"}) // repeated: dropped
	close(gate)
	if r := e.nextReply(); r.Text != "Read a; there is no b." {
		t.Errorf("reply = %+v", r)
	}
	// Idle: appended at once, seen by the next cycle before its message.
	e.lane.Inject(rpc.Injection{ID: "i2", Text: "answer in French"})
	e.waitFor("the idle injection to be committed", func() bool { return len(e.events(arbiter.InjectedInstruction)) == 2 })
	s.on("edge", check(func(req openai.ChatRequest) {
		n := len(req.Messages)
		if req.Messages[n-2].Content != "[/inject] answer in French" || req.Messages[n-1].Content != "hello" {
			t.Errorf("next cycle ends with %+v", req.Messages[n-2:])
		}
	}, say("Bonjour.")))
	e.handle("hello")
	if n := len(e.events(arbiter.InjectedInstruction)); n != 2 {
		t.Errorf("%d InjectedInstruction events; want 2", n)
	}
}

// The transition tables are §7.2 and §7.3; a move outside them is refused,
// logged, and leaves the state as it was.
func TestStateMachines(t *testing.T) {
	var logged bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logged, nil))
	for _, tr := range EdgeTransitions {
		m := newMachine(tr.From, EdgeTransitions, "edge", log)
		if err := m.to(tr.To, tr.On); err != nil || m.get() != tr.To {
			t.Errorf("edge %v -> %v on %s refused: %v", tr.From, tr.To, tr.On, err)
		}
	}
	for _, tr := range CoreTransitions {
		m := newMachine(tr.From, CoreTransitions, "core:x", log)
		if err := m.to(tr.To, tr.On); err != nil {
			t.Errorf("core %v -> %v on %s refused: %v", tr.From, tr.To, tr.On, err)
		}
	}
	if strings.Contains(logged.String(), "illegal") {
		t.Errorf("legal moves logged as illegal: %s", logged.String())
	}
	logged.Reset() // legal moves are logged as "lane transition" (§22.1)
	illegalEdge := [][2]EdgeState{{EdgeIdle, EdgeReasoning}, {EdgeFinalizing, EdgeReasoning}, {EdgeWaitingTool, EdgeFinalizing},
		{EdgeTerminated, EdgeIdle}, {EdgeContextReady, EdgeWaitingTool}, {EdgeTerminated, EdgeTerminated}}
	for _, mv := range illegalEdge {
		m := newMachine(mv[0], EdgeTransitions, "edge", log)
		if err := m.to(mv[1], "test"); err == nil || m.get() != mv[0] {
			t.Errorf("edge %v -> %v allowed", mv[0], mv[1])
		}
	}
	illegalCore := [][2]CoreState{{CoreIdle, CoreReasoning}, {CoreWaitingTool, CoreCompleted}, {CoreCompleted, CoreTerminated},
		{CoreTerminated, CoreReasoning}, {CoreCreated, CoreReasoning}, {CoreInitializing, CoreCompleted}}
	for _, mv := range illegalCore {
		m := newMachine(mv[0], CoreTransitions, "core:x", log)
		if err := m.to(mv[1], "test"); err == nil || m.get() != mv[0] {
			t.Errorf("core %v -> %v allowed", mv[0], mv[1])
		}
	}
	var first map[string]any
	json.Unmarshal(bytes.SplitN(logged.Bytes(), []byte("\n"), 2)[0], &first)
	if first["msg"] != "illegal state transition refused" || first["from"] != "EDGE_IDLE" || first["to"] != "EDGE_REASONING" || first["lane"] != "edge" {
		t.Errorf("log of an illegal move = %v", first)
	}
	for _, n := range edgeNames {
		if strings.Contains(n, "WAITING_CORE") {
			t.Errorf("the edge has %s", n)
		}
	}
}

// Status reports every lane for REPORT_STATUS; the snapshot carries the
// §13.4 working memory, and Restore puts the edge's back.
func TestStatusSnapshotRestore(t *testing.T) {
	c := &compactor{text: "Ada likes tea."}
	e, s := coreEnv(t, envOptions{compactor: c})
	s.on("edge", say("one"), say("two"), say("three"), use(SpawnTool, spawnArgs("brew", "make tea")), say("Brewing."))
	s.on("brew", hang())
	for _, m := range []string{"1", "2", "3"} {
		e.handle(m)
	}
	if err := e.lane.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.handle("tea please")
	e.waitFor("the core's first call", func() bool { return len(s.requests("brew")) == 1 })
	e.idle()
	st := e.lane.Status()
	if len(st) != 2 || st[0].Lane != "edge" || st[0].State != "EDGE_IDLE" || st[0].BudgetRemaining[BudgetCoreJobs] != 3 ||
		st[1].Lane != "core:brew" || st[1].State != "CORE_REASONING" || st[1].Step != 1 || st[1].BudgetRemaining[BudgetJobSteps] != 49 {
		t.Errorf("Status = %+v", st)
	}
	raw, err := e.lane.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var snap Snapshot
	if err := json.Unmarshal(raw, &snap); err != nil {
		t.Fatal(err)
	}
	if snap.ReferenceSummaryEdge.Summary != "Ada likes tea." || snap.EventWindowBoundary["edge"] == 0 ||
		len(snap.OpenJobs) != 1 || snap.OpenJobs[0].Name != "brew" || snap.OpenJobs[0].State != "CORE_REASONING" ||
		len(snap.LaneState.Lanes) != 2 || snap.LaneState.Used.CoreJobs != 1 || snap.LaneState.Memory["core:brew"].StartedRev == 0 {
		t.Errorf("snapshot = %s", raw)
	}
	if _, ok := snap.ReferenceSummaryCore["brew"]; !ok {
		t.Errorf("snapshot has no core summary: %s", raw)
	}
	if _, err := rpc.ParseSnapshot(raw); err != nil {
		t.Errorf("the snapshot is not §13.4's: %v", err)
	}

	// Resume is for a lane not yet running; a new one shows the summary
	// in its first prompt.
	if _, err := e.lane.Resume(Resume{Snapshot: raw}); err == nil {
		t.Error("Resume while running = nil")
	}
	l, err := New(e.lane.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Resume(Resume{Snapshot: raw, SnapshotRev: snap.Rev}); err != nil {
		t.Fatal(err)
	}
	req, _, err := l.edge.request(Settings{})
	if err != nil || len(req.Messages) < 2 || !strings.Contains(req.Messages[1].Content, "Ada likes tea.") {
		t.Errorf("restored lane's prompt = %+v, %v", req.Messages, err)
	}
}

// A message's attachments are named in the prompt; its id is in the log.
func TestMessageAttachments(t *testing.T) {
	e, s := coreEnv(t, envOptions{})
	s.on("edge", check(func(req openai.ChatRequest) {
		if got := req.Messages[len(req.Messages)-1].Content; got != "what is this?\n\n[Attached files in the workspace: .choirtmp/recv/a.jpg (removed once you have answered this message: copy elsewhere what must be kept)]" {
			t.Errorf("message = %q", got)
		}
	}, say("A cat.")))
	e.lane.Post(rpc.UserMessage{ID: "m9", Text: "what is this?", Attachments: []string{".choirtmp/recv/a.jpg"}})
	e.nextReply()
	if p := string(e.events(arbiter.UserMsg)[0].Payload); !strings.Contains(p, `"id":"m9"`) {
		t.Errorf("UserMsg payload = %s", p)
	}
}
