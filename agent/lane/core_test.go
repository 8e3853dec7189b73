package lane

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"choir/agent/arbiter"
	"choir/agent/lock"
	"choir/internal/openai"
	"choir/internal/rpc"
)

// coreEnv is an env with the lanes' own tools and the script model.
func coreEnv(t *testing.T, o envOptions) (*env, *script) {
	t.Helper()
	s := newScript(t)
	o.model, o.laneTools = s, true
	return newEnv(t, o), s
}

// toolResult finds the tool message answering id in a request.
func toolResult(t *testing.T, req openai.ChatRequest, id string) map[string]any {
	t.Helper()
	for _, m := range req.Messages {
		if m.Role == openai.RoleTool && m.ToolCallID == id {
			var v map[string]any
			if err := json.Unmarshal([]byte(m.Content), &v); err != nil {
				t.Fatalf("tool message %s = %q: %v", id, m.Content, err)
			}
			return v
		}
	}
	t.Fatalf("no tool message answers %s in %v", id, req.Messages)
	return nil
}

func errCode(v map[string]any) string {
	e, _ := v["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// fifo makes a named pipe outside the workspace: a choir.exec that reads it
// holds workspace X until the test releases it.
func fifo(t *testing.T) (path string, release func()) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "gate")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	// Opening without a reader fails at once rather than blocking: release
	// waits for the command to open the pipe; the cleanup only tries.
	try := func() bool {
		fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return false
		}
		syscall.Write(fd, []byte("go\n"))
		syscall.Close(fd)
		return true
	}
	done := false
	release = func() {
		t.Helper()
		end := time.Now().Add(deadline)
		for !try() {
			if time.Now().After(end) {
				t.Fatal("nobody reads the pipe")
			}
			time.Sleep(time.Millisecond)
		}
		done = true
	}
	t.Cleanup(func() {
		if !done {
			try()
		}
	})
	return path, release
}

// holds reports whether owner holds key.
func holds(e *env, key string, owner lock.Owner) bool {
	for _, h := range e.a.Locks().Snapshot().Held {
		if string(h.Key) == key && slices.Contains(h.Owners, owner) {
			return true
		}
	}
	return false
}

func waits(e *env, owner lock.Owner) bool {
	for _, w := range e.a.Locks().Snapshot().Waiting {
		if w.Owner == owner {
			return true
		}
	}
	return false
}

func coreOwner(name string) lock.Owner { o, _ := lock.Core(name); return o }

// A core job from spawn to report: edge curates the task, the core works
// with tools and finishes, the user gets the report, and the edge's next
// prompt knows the job ended. The core never sees the user's words.
func TestCoreJobEndToEnd(t *testing.T) {
	e, s := coreEnv(t, envOptions{ident: Identity{SoulCoreMD: "Be precise."}})
	s.on("edge",
		use(SpawnTool, `{"job_name":"notes","task_spec":"Write hello to notes.txt.","context_bundle":{"facts":["the user likes greetings"]},"verbosity":"normal"}`),
		say("I started a core job for that."))
	s.on("notes",
		use("choir.fs.write", `{"path":"notes.txt","op":"create","content":"hello\n"}`),
		use(FinishTool, `{"summary":"notes.txt says hello","result":{"path":"notes.txt"}}`))
	if !e.lane.Post(rpc.UserMessage{ID: "m1", Text: "hey can u pls put hello in notes.txt thx"}) {
		t.Fatal("Post = false")
	}
	r := e.nextReply()
	if r.ReplyTo != "m1" || r.Text != "I started a core job for that." || r.Error || !slices.Equal(r.Cores, []string{"notes"}) {
		t.Errorf("reply = %+v", r)
	}
	rep := e.nextReport()
	if rep.job != "notes" || rep.kind != ReportCompleted || !strings.Contains(rep.text, "notes.txt says hello") || !strings.Contains(rep.text, `"path": "notes.txt"`) {
		t.Errorf("report = %+v", rep)
	}
	if got := e.read("notes.txt"); got != "hello\n" {
		t.Errorf("notes.txt = %q", got)
	}
	for _, req := range s.requests("notes") {
		for _, m := range req.Messages {
			if strings.Contains(m.Content, "pls put hello") {
				t.Errorf("a core request carries the user's message: %q", m.Content)
			}
		}
	}
	// The job's id is its token: derived from the session and the name.
	started := e.events(arbiter.CoreStarted)
	var sp startedPayload
	json.Unmarshal(started[0].Payload, &sp)
	if sp.JobID != jobID("s-test", "notes", 1) || sp.Start.ContextBundle.Facts[0] != "the user likes greetings" {
		t.Errorf("CoreStarted = %+v", sp)
	}
	stopped := e.events(arbiter.CoreStopped)
	if len(stopped) != 1 || stopped[0].Lane != arbiter.LaneCore {
		t.Fatalf("CoreStopped events = %v", stopped)
	}
	// The edge is told, in its next prompt.
	s.on("edge", check(func(req openai.ChatRequest) {
		var notes []string
		for _, m := range req.Messages {
			if strings.HasPrefix(m.Content, "[choir] Core job notes completed: notes.txt says hello") {
				notes = append(notes, m.Content)
			}
		}
		if len(notes) != 1 {
			t.Errorf("edge prompt after the job: %d notes of its end", len(notes))
		}
	}, say("It is done.")))
	if got := e.handle("is it done?"); got != "It is done." {
		t.Errorf("reply = %q", got)
	}
	if js := e.lane.Jobs(); len(js) != 1 || js[0].State != "CORE_COMPLETED" || !js[0].Ended {
		t.Errorf("Jobs = %+v", js)
	}
	e.noLocks()
}

// Two cores writing different files run side by side: each one's second
// model call waits until both have written, which only works if neither
// waits for the other to finish.
func TestTwoCoresWriteConcurrently(t *testing.T) {
	e, s := coreEnv(t, envOptions{})
	s.on("edge", use(SpawnTool, spawnArgs("a", "write a"), SpawnTool, spawnArgs("b", "write b")), say("Two jobs started."))
	both := make(chan struct{})
	wrote := make(chan string, 2)
	for _, name := range []string{"a", "b"} {
		s.on(name,
			use("choir.fs.write", `{"path":"`+name+`.txt","op":"create","content":"`+name+`\n"}`),
			check(func(openai.ChatRequest) { wrote <- name }, after(both, use(FinishTool, finishArgs(name+" written")))))
	}
	if got := e.handle("write both"); got != "Two jobs started." {
		t.Errorf("reply = %q", got)
	}
	<-wrote
	<-wrote
	close(both)
	got := map[string]string{}
	for range 2 {
		r := e.nextReport()
		got[r.job] = r.kind
	}
	if got["a"] != ReportCompleted || got["b"] != ReportCompleted {
		t.Errorf("reports = %v", got)
	}
	if e.read("a.txt") != "a\n" || e.read("b.txt") != "b\n" {
		t.Errorf("files: a.txt %q, b.txt %q", e.read("a.txt"), e.read("b.txt"))
	}
	e.noLocks()
}

// Two cores both running choir.exec hold workspace X one after the other:
// the second waits in the lock queue while the first runs, and both finish.
func TestExecSerialisedAcrossCores(t *testing.T) {
	e, s := coreEnv(t, envOptions{})
	gate, release := fifo(t)
	aHolds := make(chan struct{})
	s.on("edge", use(SpawnTool, spawnArgs("a", "run a"), SpawnTool, spawnArgs("b", "run b")), say("Started."))
	s.on("a", use("choir.exec", `{"command":"cat `+gate+` > a.out"}`), use(FinishTool, finishArgs("a ran")))
	s.on("b", after(aHolds, use("choir.exec", `{"command":"echo b > b.out"}`)), use(FinishTool, finishArgs("b ran")))
	e.handle("run both")
	e.waitFor("a to hold workspace X", func() bool { return holds(e, "workspace", coreOwner("a")) })
	close(aHolds)
	e.waitFor("b to wait for workspace X", func() bool { return waits(e, coreOwner("b")) })
	if _, err := os.Stat(filepath.Join(e.ws, "b.out")); err == nil {
		t.Error("b ran while a held workspace X")
	}
	release()
	for range 2 {
		if r := e.nextReport(); r.kind != ReportCompleted {
			t.Errorf("report = %+v", r)
		}
	}
	// b's call was committed only after a's result.
	var aResult, bCommitted int64
	for _, ev := range e.a.Events(0) {
		var p struct {
			Job  string `json:"job"`
			Tool string `json:"tool"`
		}
		json.Unmarshal(ev.Payload, &p)
		switch {
		case ev.Type == arbiter.ToolResultCommitted && p.Job == "a" && p.Tool == "choir.exec":
			aResult = ev.Rev
		case ev.Type == arbiter.ToolCallCommitted && p.Job == "b" && p.Tool == "choir.exec":
			bCommitted = ev.Rev
		}
	}
	if aResult == 0 || bCommitted < aResult {
		t.Errorf("b's exec committed at %d, a's result at %d: want b after a", bCommitted, aResult)
	}
	if e.read("a.out") != "go\n" || e.read("b.out") != "b\n" {
		t.Errorf("outputs: %q %q", e.read("a.out"), e.read("b.out"))
	}
	e.noLocks()
}

// The edge answers about a file while a core holds workspace X: a dirty
// read, offered while cores run.
func TestEdgeDirtyReadWhileCoreHoldsWorkspace(t *testing.T) {
	e, s := coreEnv(t, envOptions{})
	e.write("notes.txt", "the meeting is at noon\n")
	gate, release := fifo(t)
	s.on("edge", use(SpawnTool, spawnArgs("build", "build it")), say("Building."))
	s.on("build", use("choir.exec", `{"command":"cat `+gate+`"}`), use(FinishTool, finishArgs("built")))
	e.handle("build it")
	e.waitFor("the core to hold workspace X", func() bool { return holds(e, "workspace", coreOwner("build")) })
	s.on("edge",
		check(func(req openai.ChatRequest) {
			var names []string
			for _, tl := range req.Tools {
				names = append(names, tl.Name)
			}
			// The same tools as when no core runs (a stable prefix); the
			// state note that ends the request says what is usable now.
			want := []string{"choir_core_cancel", "choir_core_inject", "choir_core_list", "choir_core_spawn", "choir_exec", "choir_fs_read", "choir_fs_search",
				"choir_fs_write", "choir_memory_compact", "choir_memory_query", "choir_memory_upsert"}
			if !slices.Equal(names, want) {
				t.Errorf("tools while a core runs = %v; want %v", names, want)
			}
			if strings.Contains(req.Messages[0].Content, "build") {
				t.Errorf("the system prompt names the running job (it must stay the same at every call):\n%s", req.Messages[0].Content)
			}
			note := req.Messages[len(req.Messages)-1]
			if note.Role != openai.RoleUser || !strings.Contains(note.Content, "Core jobs running now: build.") ||
				!strings.Contains(note.Content, "read-only tools (choir.fs.read, choir.fs.search, choir.memory.query)") {
				t.Errorf("last message = %+v; want the state note listing the running job and the read-only tools", note)
			}
		}, use("choir.fs.read", `{"path":"notes.txt"}`)),
		check(func(req openai.ChatRequest) {
			if out := toolResult(t, req, "choir_fs_read_0"); !strings.Contains(out["content"].(string), "noon") {
				t.Errorf("read while the core holds workspace X = %v", out)
			}
		}, say("At noon.")))
	if got := e.handle("when is the meeting?"); got != "At noon." {
		t.Errorf("reply = %q", got)
	}
	if !holds(e, "workspace", coreOwner("build")) {
		t.Error("the core lost workspace X")
	}
	release()
	if r := e.nextReport(); r.kind != ReportCompleted {
		t.Errorf("report = %+v", r)
	}
	e.noLocks()
}

// While a core runs, a side-effect tool the model still calls is refused
// with a structured error; nothing runs.
func TestEdgeRestrictedWhileCoresRun(t *testing.T) {
	e, s := coreEnv(t, envOptions{})
	gate := make(chan struct{})
	s.on("edge", use(SpawnTool, spawnArgs("slow", "think")), say("Started."))
	s.on("slow", after(gate, use(FinishTool, finishArgs("done"))))
	e.handle("go")
	s.on("edge",
		use("choir.fs.write", `{"path":"x.txt","op":"create","content":"x"}`, "choir.exec", `{"command":"touch y"}`),
		check(func(req openai.ChatRequest) {
			for _, id := range []string{"choir_fs_write_0", "choir_exec_1"} {
				if out := toolResult(t, req, id); errCode(out) != CodeCoresRunning {
					t.Errorf("%s while a core runs = %v; want %s", id, out, CodeCoresRunning)
				}
			}
		}, say("I cannot write now.")))
	e.handle("write x")
	if _, err := os.Stat(filepath.Join(e.ws, "x.txt")); err == nil {
		t.Error("x.txt was written while a core ran")
	}
	close(gate)
	e.nextReport()
	// With no core running, the edge writes again.
	s.on("edge", use("choir.fs.write", `{"path":"x.txt","op":"create","content":"x"}`), say("Written."))
	e.handle("write x now")
	if e.read("x.txt") != "x" {
		t.Errorf("x.txt = %q", e.read("x.txt"))
	}
}

// An instruction injected by the edge reaches the running core at its next
// step, recorded in the log; its budgets are not reset.
func TestInjectionReachesRunningCore(t *testing.T) {
	e, s := coreEnv(t, envOptions{})
	gate := make(chan struct{})
	s.on("edge", use(SpawnTool, spawnArgs("style", "reformat main.go")), say("Started."))
	s.on("style",
		after(gate, use(ReportTool, `{"type":"progress","text":"Looking at main.go."}`)),
		check(func(req openai.ChatRequest) {
			n := len(req.Messages)
			if got := req.Messages[n-1].Content; got != "[edge] New instruction for this job: use tabs, not spaces" {
				t.Errorf("last message = %q", got)
			}
			if !strings.HasPrefix(req.Messages[1].Content, "# CoreJobStart") {
				t.Errorf("message after the system prompt = %q; want the CoreJobStart", req.Messages[1].Content)
			}
		}, use(FinishTool, finishArgs("reformatted with tabs"))))
	e.handle("reformat main.go")
	e.waitFor("the core's first call", func() bool { return len(s.requests("style")) == 1 })
	s.on("edge",
		use(InjectTool, `{"job_name":"style","content":"use tabs, not spaces"}`),
		check(func(req openai.ChatRequest) {
			if out := toolResult(t, req, "choir_core_inject_0"); out["status"] != "success" || out["injections_left"] != float64(9) {
				t.Errorf("inject = %v", out)
			}
		}, say("Told it.")))
	e.handle("oh and use tabs")
	if js := e.lane.Jobs(); js[0].Steps != 1 || js[0].Injections != 1 {
		t.Errorf("job after the injection = %+v", js[0])
	}
	close(gate)
	if r := e.nextReport(); r.kind != ReportCompleted || !strings.Contains(r.text, "tabs") {
		t.Errorf("report = %+v", r)
	}
	inj := e.events(arbiter.InjectedInstruction)
	if len(inj) != 1 || inj[0].Lane != arbiter.LaneCore || !strings.Contains(string(inj[0].Payload), `"job":"style"`) {
		t.Errorf("InjectedInstruction events = %v", inj)
	}
	if js := e.lane.Jobs(); js[0].Steps != 2 {
		t.Errorf("steps after the injection = %d; want 2 (never reset)", js[0].Steps)
	}
}

// Cancelling one core by name stops it and not the other; both are
// reported.
func TestCancelOneCoreOfTwo(t *testing.T) {
	e, s := coreEnv(t, envOptions{})
	gate := make(chan struct{})
	s.on("edge", use(SpawnTool, spawnArgs("a", "forever"), SpawnTool, spawnArgs("b", "quick")), say("Started."))
	s.on("a", hang())
	s.on("b", after(gate, use(FinishTool, finishArgs("b done"))))
	e.handle("start both")
	e.waitFor("both cores' first calls", func() bool { return len(s.requests("a")) == 1 && len(s.requests("b")) == 1 })
	s.on("edge",
		use(CancelTool, `{"job_name":"a"}`),
		check(func(req openai.ChatRequest) {
			if out := toolResult(t, req, "choir_core_cancel_0"); out["state"] != "CORE_TERMINATED" {
				t.Errorf("cancel = %v", out)
			}
		}, say("Cancelled a.")))
	e.handle("stop a")
	r := e.nextReport()
	if r.job != "a" || r.kind != ReportTerminated || !strings.Contains(r.text, "cancelled") {
		t.Errorf("report = %+v", r)
	}
	st := e.lane.Status()
	if len(st) != 2 || st[1].Lane != "core:b" {
		t.Errorf("Status = %+v; want the edge and core:b", st)
	}
	close(gate)
	if r := e.nextReport(); r.job != "b" || r.kind != ReportCompleted {
		t.Errorf("report = %+v", r)
	}
	// Cancelling through the push event: a job that ended is refused.
	if err := e.lane.Cancel(t.Context(), "a"); !strings.Contains(errString(err), CodeJobEnded) {
		t.Errorf("Cancel of an ended job = %v", err)
	}
	e.noLocks()
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// A core still running when the session stops is cancelled and reported,
// and Run returns cleanly.
func TestCoreRunningAtSessionStop(t *testing.T) {
	e, s := coreEnv(t, envOptions{})
	gate, _ := fifo(t)
	s.on("edge", use(SpawnTool, spawnArgs("long", "run long"), SpawnTool, spawnArgs("think", "think long")), say("Started."))
	s.on("long", use("choir.exec", `{"command":"cat `+gate+`"}`))
	s.on("think", hang())
	e.handle("go")
	e.waitFor("the cores to be at work", func() bool {
		return holds(e, "workspace", coreOwner("long")) && len(s.requests("think")) == 1
	})
	e.stop()
	if err := <-e.ran; err != nil {
		t.Errorf("Run = %v", err)
	}
	e.ran <- nil
	got := map[string]string{}
	for range 2 {
		r := e.nextReport()
		if r.kind != ReportTerminated || !strings.Contains(r.text, "session stopped") {
			t.Errorf("report = %+v", r)
		}
		got[r.job] = r.kind
	}
	if len(got) != 2 {
		t.Errorf("reports = %v", got)
	}
	if n := len(e.events(arbiter.CoreStopped)); n != 2 {
		t.Errorf("%d CoreStopped events; want 2", n)
	}
	e.noLocks()
}
