package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/docker"
	"choir/testkit/demomodel"
)

// The fault tests (issue 13, item 9) break one thing under a working agent
// at a time, on the boundary tests' rig (a real engine, Debian agent
// images, PGlite through the pgtest relay, choird as a subprocess): the
// agent killed -9 during a model call and during the session summary,
// choird killed -9, Postgres unreachable, the engine's API unreachable.
// Each ends the same way: the stored log verifies from event 1, every
// event stored before the fault is still there unchanged, the command
// that appends a line to runs.txt ran once, and after the final stop no
// container of the agent and no lease is left.

// newFaultRig is the boundary tests' rig whose choird's containers are
// removed when the test ends, however it ends: a test that fails with its
// agent running (or choird killed under it) leaves nothing to the next.
func newFaultRig(t *testing.T) *boundaryRig {
	t.Helper()
	rig := newBoundaryRig(t)
	t.Cleanup(func() {
		ctx := context.Background()
		cs, err := rig.dc.ContainerList(ctx, docker.ContainerListOptions{All: true, Filters: docker.Filters{"label": {instanceLabel(rig.home)}}})
		if err != nil {
			t.Logf("list the test's containers: %v", err)
		}
		for _, c := range cs {
			if err := rig.dc.ContainerRemove(ctx, c.ID, docker.ContainerRemoveOptions{Force: true}); err != nil && !docker.IsNotFound(err) {
				t.Logf("remove the test's container %s: %v", c.ID[:12], err)
			}
		}
	})
	return rig
}

// awaitResumedTurn waits until choird's log holds the turn the test sends
// after a resume (rig.alive's "hello after the resume"), once.
func awaitResumedTurn(t *testing.T, rig *boundaryRig, sessionID string, report func() string) {
	t.Helper()
	waitUntil(t, "the resumed turn's events in choird's log", time.Minute, func() bool {
		return countEvents(storedEvents(t, rig.home, sessionID), "UserMsg", "hello after the resume") == 1
	}, report)
}

// endWithOneRun is how every kill test ends: the appending call was
// requested, committed and answered once in the stored log, nothing of the
// agent is left after its final stop, the workspace holds one run, and
// choird stops cleanly.
func endWithOneRun(t *testing.T, rig *boundaryRig, agent string, evs []ctl.SessionEvent, runs string) {
	t.Helper()
	checkCallOnce(t, evs, "runs.txt")
	stopLeavingNothing(t, rig, agent)
	if n := runsOf(runs); n != 1 {
		t.Errorf("runs.txt at the end holds %d runs; want 1", n)
	}
	rig.d.stop(t)
}

// modelGate keeps the model calls of one kind in flight until it is
// opened: "turn" (a call whose last message is the user's), "summary"
// (the session summary of a graceful stop) or "compaction" (the working
// memory's fold).
type modelGate struct {
	kind string
	open chan struct{}
	once sync.Once
	mu   sync.Mutex
	held int // calls waiting now
}

// holdModel makes the rig's model hold the calls of a kind.
func holdModel(t *testing.T, m *shellModel, kind string) *modelGate {
	g := &modelGate{kind: kind, open: make(chan struct{})}
	m.mu.Lock()
	m.hold = g.wait
	m.mu.Unlock()
	t.Cleanup(g.release)
	return g
}

func (g *modelGate) wait(ctx context.Context, body []byte) {
	if requestKind(body) != g.kind {
		return
	}
	g.mu.Lock()
	g.held++
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.held--
		g.mu.Unlock()
	}()
	select {
	case <-g.open:
	case <-ctx.Done(): // the caller went away
	}
}

// inFlight is the number of calls held now.
func (g *modelGate) inFlight() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held
}

// release lets every held call and every later one through.
func (g *modelGate) release() { g.once.Do(func() { close(g.open) }) }

// requestKind tells a model request's kind from its body.
func requestKind(body []byte) string {
	var req struct {
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if json.Unmarshal(body, &req) != nil || len(req.Messages) == 0 {
		return ""
	}
	switch {
	case offers(req.Tools, "session_summary"):
		return "summary"
	case offers(req.Tools, "memory_delta"):
		return "compaction"
	case offers(req.Tools, "core_finish"):
		return ""
	case req.Messages[len(req.Messages)-1].Role == "user":
		return "turn"
	}
	return ""
}

type chatResult struct {
	out, stderr string
	code        int
}

// goChat sends one message to the agent's DM with `chat --once` and
// delivers how it ended.
func goChat(t *testing.T, home, agent, msg string) <-chan chatResult {
	done := make(chan chatResult, 1)
	go func() {
		out, stderr, code := ctlRun(t, home, msg, "chat", agent, "--once", "--timeout", "5m")
		done <- chatResult{out, stderr, code}
	}()
	return done
}

// chatEnded waits for a chat that must end (its agent or choird died).
func chatEnded(t *testing.T, chat <-chan chatResult, report func() string) chatResult {
	t.Helper()
	select {
	case r := <-chat:
		return r
	case <-time.After(2 * time.Minute):
		t.Fatalf("the chat still waits 2 minutes after the fault\n%s", report())
		return chatResult{}
	}
}

// runsOf counts the runs of the command that appends "ran" to a file.
func runsOf(path string) int {
	data, _ := os.ReadFile(path)
	return strings.Count(string(data), "ran\n")
}

// editConfig changes the home's config.json (choird reads it when it
// starts).
func editConfig(t testing.TB, home string, edit func(cfg map[string]any)) {
	t.Helper()
	path := filepath.Join(home, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	edit(cfg)
	out, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// restartChoird stops the rig's choird (SIGTERM) and starts it again with
// env, on the same home.
func (rig *boundaryRig) restartChoird(t *testing.T, env []string) {
	t.Helper()
	if err := rig.d.stop(t); err != nil {
		t.Fatalf("choird's exit after SIGTERM = %v\n%s", err, rig.d.stderr.String())
	}
	rig.d = startChoird(t, rig.home, env)
	waitReady(t, rig.home, rig.d)
}

func (rig *boundaryRig) engineEnv() []string { return []string{"DOCKER_HOST=" + rig.dc.Host()} }

func sessionStatus(t *testing.T, home, agent, sessionID string) string {
	t.Helper()
	c := ctl.NewClient(config.Home{Dir: home}.AdminSocket())
	defer c.Close()
	ss, err := c.Sessions(context.Background(), agent)
	if err != nil {
		t.Fatalf("the sessions of %s: %v", agent, err)
	}
	for _, s := range ss {
		if s.SessionID == sessionID {
			return s.Status
		}
	}
	return ""
}

func choirdStatus(t testing.TB, home string) ctl.Status {
	t.Helper()
	out, stderr, code := ctlRun(t, home, "", "status", "--json")
	var st ctl.Status
	if json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("status --json = %d %q %q", code, out, stderr)
	}
	return st
}

func mentions(reasons []string, word string) bool {
	for _, r := range reasons {
		if strings.Contains(r, word) {
			return true
		}
	}
	return false
}

// resume starts the agent again and checks that it resumed the session.
func (rig *boundaryRig) resume(t *testing.T, agent, sessionID string, report func() string) {
	t.Helper()
	out, stderr, code := ctlRun(t, rig.home, "", "agent", "start", agent, "--dm="+agent)
	if code != 0 || !strings.Contains(out, "resumed the session") || !strings.Contains(out, sessionID) {
		t.Fatalf("agent start after the fault = %d %q %q; want the session %s resumed\n%s", code, out, stderr, sessionID, report())
	}
	if st := agentState(t, rig.home, agent); st.SessionID != sessionID || st.Resumed == nil || st.State != "running" {
		t.Errorf("agent status after the resume: session %s, state %s, resumed %+v; want session %s running, resumed", st.SessionID, st.State, st.Resumed, sessionID)
	}
}

// TestKillNineDuringAModelCall: the model holds the call of a turn whose
// answer would run a command; the container is killed with SIGKILL while
// the call is in flight. The waiting chat ends with an error; started
// again, the session resumes, the turn is answered (the model now
// answers: the command runs, once), and the user's message is stored
// once.
func TestKillNineDuringAModelCall(t *testing.T) {
	rig := newFaultRig(t)
	const agent = "agent-1"
	runs := filepath.Join(rig.workspace[agent], "runs.txt")
	report := rig.report(t, agent)
	rig.start(t, agent)
	first := agentState(t, rig.home, agent)

	gate := holdModel(t, rig.model, "turn")
	chat := goChat(t, rig.home, agent, "$ echo ran >> runs.txt")
	waitUntil(t, "the turn's model call in flight", time.Minute, func() bool { return gate.inFlight() > 0 }, report)
	waitUntil(t, "the user's message in choird's log", time.Minute, func() bool {
		return countEvents(storedEvents(t, rig.home, first.SessionID), "UserMsg", "runs.txt") == 1
	}, report)
	before := storedEvents(t, rig.home, first.SessionID)
	c := rig.container(t, agent)
	if err := rig.dc.ContainerKill(context.Background(), c.ID, "KILL"); err != nil {
		t.Fatalf("kill -9 the agent's container: %v", err)
	}
	if r := chatEnded(t, chat, report); r.code == 0 || !strings.Contains(r.stderr, "crashed") {
		t.Errorf("the chat waiting on the killed agent = %d %q %q; want an error saying it crashed", r.code, r.out, r.stderr)
	}
	waitUntil(t, "agent status stopped", time.Minute, func() bool { return agentState(t, rig.home, agent).State == "stopped" }, report)
	if n := runsOf(runs); n != 0 {
		t.Fatalf("the command ran %d times before the model answered", n)
	}

	gate.release() // the model answers from now on
	outbox := watchOutbox(t, rig.home, agent)
	rig.resume(t, agent, first.SessionID, report)
	waitUntil(t, "the resumed turn's answer in the DM", 2*time.Minute, func() bool {
		_, ok := outbox.find("result: ", `"exit_code":0`)
		return ok
	}, func() string { return "outbox:\n" + outbox.String() + report() })
	if n := runsOf(runs); n != 1 {
		t.Errorf("runs.txt after the resumed turn holds %d runs; want 1", n)
	}
	rig.alive(t, agent, "the resume")
	awaitResumedTurn(t, rig, first.SessionID, report)
	evs := verifyStored(t, rig.home, first.SessionID, before)
	if n := countEvents(evs, "UserMsg", "runs.txt"); n != 1 {
		t.Errorf("the user's message is stored %d times; want once", n)
	}
	endWithOneRun(t, rig, agent, evs, runs)
}

// TestKillNineDuringTheSummary: `agent stop` while the model holds the
// session-summary call, and the container killed with SIGKILL during it.
// The stop returns, the session ends (stopped or crashed), `agent start`
// resumes it, and its log verifies with everything stored before.
func TestKillNineDuringTheSummary(t *testing.T) {
	rig := newFaultRig(t)
	const agent = "agent-1"
	runs := filepath.Join(rig.workspace[agent], "runs.txt")
	report := rig.report(t, agent)
	rig.start(t, agent)
	first := agentState(t, rig.home, agent)
	if out := rig.say(t, agent, "$ echo ran >> runs.txt"); !strings.Contains(out, `"exit_code":0`) {
		t.Fatalf("the command's turn answered %q", out)
	}
	waitUntil(t, "the command's turn in choird's log", time.Minute, func() bool {
		return countEvents(storedEvents(t, rig.home, first.SessionID), "ToolResultCommitted", "exit_code") == 1
	}, report)

	gate := holdModel(t, rig.model, "summary")
	stopped := make(chan chatResult, 1)
	go func() {
		out, stderr, code := ctlRun(t, rig.home, "", "agent", "stop", agent)
		stopped <- chatResult{out, stderr, code}
	}()
	waitUntil(t, "the summary call in flight", time.Minute, func() bool { return gate.inFlight() > 0 }, report)
	before := storedEvents(t, rig.home, first.SessionID)
	c := rig.container(t, agent)
	if err := rig.dc.ContainerKill(context.Background(), c.ID, "KILL"); err != nil {
		t.Fatalf("kill -9 the agent's container: %v", err)
	}
	select {
	case r := <-stopped:
		t.Logf("agent stop with the container killed during the summary = %d %q %q", r.code, r.out, r.stderr)
	case <-time.After(2 * time.Minute):
		t.Fatalf("agent stop still waits 2 minutes after the container was killed\n%s", report())
	}
	waitUntil(t, "agent status stopped", time.Minute, func() bool { return agentState(t, rig.home, agent).State == "stopped" }, report)
	if s := sessionStatus(t, rig.home, agent, first.SessionID); s != "stopped" && s != "crashed" {
		t.Errorf("the session after the kill during the summary is %q; want stopped or crashed", s)
	}
	// Not a graceful stop, and session show says so (no summary, events
	// after the last stored heartbeat lost).
	if out, _, _ := ctlRun(t, rig.home, "", "session", "show", first.SessionID); !strings.Contains(out, "before its graceful stop ended") {
		t.Errorf("session show after the kill during the summary:\n%s\nwant the end reason to say the graceful stop did not end", out)
	}

	gate.release()
	rig.resume(t, agent, first.SessionID, report)
	rig.alive(t, agent, "the resume")
	awaitResumedTurn(t, rig, first.SessionID, report)
	evs := verifyStored(t, rig.home, first.SessionID, before)
	endWithOneRun(t, rig, agent, evs, runs)
}

// TestKillNineDuringCompaction: `session compact` while the model holds
// the compaction call, and the container killed with SIGKILL during it.
// Started again, the session resumes, compacts when asked, and its log
// verifies with everything stored before.
func TestKillNineDuringCompaction(t *testing.T) {
	rig := newFaultRig(t)
	const agent = "agent-1"
	runs := filepath.Join(rig.workspace[agent], "runs.txt")
	report := rig.report(t, agent)
	rig.start(t, agent)
	first := agentState(t, rig.home, agent)
	if out := rig.say(t, agent, "$ echo ran >> runs.txt"); !strings.Contains(out, `"exit_code":0`) {
		t.Fatalf("the command's turn answered %q", out)
	}
	for _, msg := range []string{"something to fold", "more to fold"} {
		rig.say(t, agent, msg)
	}
	waitUntil(t, "the turns in choird's log", time.Minute, func() bool {
		return countEvents(storedEvents(t, rig.home, first.SessionID), "UserMsg", "more to fold") == 1
	}, report)

	gate := holdModel(t, rig.model, "compaction")
	if out, stderr, code := ctlRun(t, rig.home, "", "session", "compact", first.SessionID); code != 0 {
		t.Fatalf("session compact = %d %q %q", code, out, stderr)
	}
	waitUntil(t, "the compaction call in flight", time.Minute, func() bool { return gate.inFlight() > 0 }, report)
	before := storedEvents(t, rig.home, first.SessionID)
	c := rig.container(t, agent)
	if err := rig.dc.ContainerKill(context.Background(), c.ID, "KILL"); err != nil {
		t.Fatalf("kill -9 the agent's container: %v", err)
	}
	waitUntil(t, "agent status stopped", time.Minute, func() bool { return agentState(t, rig.home, agent).State == "stopped" }, report)
	if s := sessionStatus(t, rig.home, agent, first.SessionID); s != "crashed" {
		t.Errorf("the session killed during a compaction is %q; want crashed", s)
	}

	gate.release()
	rig.resume(t, agent, first.SessionID, report)
	rig.alive(t, agent, "the resume")
	if out, stderr, code := ctlRun(t, rig.home, "", "session", "compact", first.SessionID); code != 0 {
		t.Fatalf("session compact after the resume = %d %q %q", code, out, stderr)
	}
	waitUntil(t, "the compaction after the resume in choird's log", time.Minute, func() bool {
		return countEvents(storedEvents(t, rig.home, first.SessionID), "MemoryWriteCommitted", "") > countEvents(before, "MemoryWriteCommitted", "")
	}, report)
	evs := verifyStored(t, rig.home, first.SessionID, before)
	endWithOneRun(t, rig, agent, evs, runs)
}

// TestChoirdKilledWhileAnAgentWorks: choird killed with SIGKILL while the
// agent runs a command that appends a line and then sleeps. The waiting
// chat ends with an error; choird started again on the same home marks
// the session crashed and removes the orphan container (§6.2 step 7);
// `agent start` resumes the same session, the model hears the call was
// interrupted, and the command ran once.
func TestChoirdKilledWhileAnAgentWorks(t *testing.T) {
	rig := newFaultRig(t)
	const agent = "agent-1"
	runs := filepath.Join(rig.workspace[agent], "runs.txt")
	report := rig.report(t, agent)
	rig.start(t, agent)
	first := agentState(t, rig.home, agent)

	chat := goChat(t, rig.home, agent, "$ [600000] echo ran >> runs.txt; sleep 600")
	waitUntil(t, "the command's line in runs.txt", 2*time.Minute, func() bool { return runsOf(runs) == 1 }, report)
	waitUntil(t, "ToolCallCommitted in choird's log", time.Minute, func() bool {
		return countEvents(storedEvents(t, rig.home, first.SessionID), "ToolCallCommitted", "") == 1
	}, report)
	before := storedEvents(t, rig.home, first.SessionID)
	c := rig.container(t, agent)

	rig.d.cmd.Process.Kill()
	err := <-rig.d.done
	rig.d.done <- err // for the cleanup's wait
	if r := chatEnded(t, chat, report); r.code == 0 {
		t.Errorf("the chat through the killed choird = %d %q %q; want an error", r.code, r.out, r.stderr)
	}

	rig.d = startChoird(t, rig.home, rig.engineEnv())
	waitReady(t, rig.home, rig.d)
	waitUntil(t, "the orphan container removed", time.Minute, func() bool {
		_, err := rig.dc.ContainerInspect(context.Background(), c.ID)
		return docker.IsNotFound(err)
	}, report)
	if s := sessionStatus(t, rig.home, agent, first.SessionID); s != "crashed" {
		t.Errorf("the session choird found running when it started again is %q; want crashed", s)
	}
	if st := agentState(t, rig.home, agent); st.State != "stopped" {
		t.Errorf("agent status after choird's restart = %s; want stopped", st.State)
	}

	outbox := watchOutbox(t, rig.home, agent)
	rig.resume(t, agent, first.SessionID, report)
	waitUntil(t, "the answer to the interrupted call in the DM", 2*time.Minute, func() bool {
		_, ok := outbox.find("result: ", "interrupted")
		return ok
	}, func() string { return "outbox:\n" + outbox.String() + report() })
	rig.alive(t, agent, "the resume")
	awaitResumedTurn(t, rig, first.SessionID, report)
	evs := verifyStored(t, rig.home, first.SessionID, before)
	endWithOneRun(t, rig, agent, evs, runs)
}

// TestPostgresDownWhileTheAgentWorks: choird reaches Postgres through a
// proxy the test stops: `status` says Postgres is degraded, the agent
// answers several turns meanwhile and its heartbeats fail (its events
// wait in the agent); with the proxy back on the same port the backlog
// drains, status is healthy again, replication catches up, and the stored
// log verifies and holds every turn.
func TestPostgresDownWhileTheAgentWorks(t *testing.T) {
	rig := newFaultRig(t)
	const agent = "agent-1"
	runs := filepath.Join(rig.workspace[agent], "runs.txt")
	report := rig.report(t, agent)

	var proxy *faultProxy
	editConfig(t, rig.home, func(cfg map[string]any) {
		pg := cfg["postgres"].(map[string]any)
		upstream := net.JoinHostPort(pg["host"].(string), strconv.Itoa(int(pg["port"].(float64))))
		proxy = newFaultProxy(t, "tcp", "127.0.0.1:0", "tcp", upstream)
		host, port, _ := net.SplitHostPort(proxy.addr)
		pg["host"] = host
		pg["port"], _ = strconv.Atoi(port)
	})
	rig.restartChoird(t, rig.engineEnv())
	rig.start(t, agent)
	first := agentState(t, rig.home, agent)
	if out := rig.say(t, agent, "$ echo ran >> runs.txt"); !strings.Contains(out, `"exit_code":0`) {
		t.Fatalf("the command's turn answered %q", out)
	}
	waitUntil(t, "the command's turn in choird's log", time.Minute, func() bool {
		return countEvents(storedEvents(t, rig.home, first.SessionID), "ToolResultCommitted", "exit_code") == 1
	}, report)
	before := storedEvents(t, rig.home, first.SessionID)

	proxy.down()
	waitUntil(t, "status degraded for Postgres", time.Minute, func() bool {
		st := choirdStatus(t, rig.home)
		return !st.Healthy && mentions(st.Degraded, "Postgres")
	}, report)
	turns := []string{"first turn without Postgres", "second turn without Postgres", "third turn without Postgres"}
	for _, msg := range turns {
		if out := rig.say(t, agent, msg); !strings.Contains(out, demomodel.Prefix) {
			t.Fatalf("with Postgres down, %s answered %q to %q; want the model's reply", agent, out, msg)
		}
	}
	waitUntil(t, "agent status saying its heartbeats fail", time.Minute, func() bool {
		return mentions(agentState(t, rig.home, agent).Degraded, "heartbeats")
	}, report)
	if st := agentState(t, rig.home, agent); st.State != "running" || st.SessionID != first.SessionID {
		t.Fatalf("with Postgres down, agent status = %s session %s; want the session running", st.State, st.SessionID)
	}

	proxy.up(t)
	waitUntil(t, "status healthy and the backlog drained", 2*time.Minute, func() bool {
		if st := choirdStatus(t, rig.home); !st.Healthy {
			return false
		}
		st := agentState(t, rig.home, agent)
		if len(st.Degraded) > 0 || st.Replication == nil {
			return false
		}
		evs := storedEvents(t, rig.home, first.SessionID)
		for _, msg := range turns {
			if countEvents(evs, "UserMsg", msg) != 1 {
				return false
			}
		}
		return len(evs) > 0 && st.Replication.AckedRev == evs[len(evs)-1].Rev
	}, report)
	evs := verifyStored(t, rig.home, first.SessionID, before)
	if last := evs[len(evs)-1]; last.Type != "ModelOutput" || !strings.Contains(string(last.Payload), demomodel.Prefix) {
		t.Errorf("the stored log ends with %s %s; want the last turn's answer", last.Type, last.Payload)
	}
	if s := sessionStatus(t, rig.home, agent, first.SessionID); s != "active" {
		t.Logf("the session's stored status after the outage: %q", s)
	}
	stopLeavingNothing(t, rig, agent)
	if n := runsOf(runs); n != 1 {
		t.Errorf("runs.txt at the end holds %d runs; want 1", n)
	}
	rig.d.stop(t)
}

// TestEngineAPIDownWhileTheAgentWorks: choird reaches the Docker engine
// through a unix-socket proxy the test stops for a while: the session is
// not crashed, `agent status` says the engine is lost, the agent keeps
// answering in the same container; with the proxy back the status clears,
// and `agent stop` stops the agent and removes its container.
func TestEngineAPIDownWhileTheAgentWorks(t *testing.T) {
	rig := newFaultRig(t)
	const agent = "agent-1"
	runs := filepath.Join(rig.workspace[agent], "runs.txt")
	report := rig.report(t, agent)

	u, err := url.Parse(rig.dc.Host())
	if err != nil || (u.Scheme != "unix" && u.Scheme != "tcp") {
		t.Fatalf("the test engine's address %q: want unix:// or tcp:// (%v)", rig.dc.Host(), err)
	}
	upstream := u.Path
	if u.Scheme == "tcp" {
		upstream = u.Host
	}
	dir, err := os.MkdirTemp("", "engine") // short: a socket path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	proxy := newFaultProxy(t, "unix", filepath.Join(dir, "docker.sock"), u.Scheme, upstream)
	rig.restartChoird(t, []string{"DOCKER_HOST=unix://" + proxy.addr})
	rig.start(t, agent)
	first := agentState(t, rig.home, agent)
	if out := rig.say(t, agent, "$ echo ran >> runs.txt"); !strings.Contains(out, `"exit_code":0`) {
		t.Fatalf("the command's turn answered %q", out)
	}
	waitUntil(t, "the command's turn in choird's log", time.Minute, func() bool {
		return countEvents(storedEvents(t, rig.home, first.SessionID), "ToolResultCommitted", "exit_code") == 1
	}, report)
	before := storedEvents(t, rig.home, first.SessionID)
	c := rig.container(t, agent)

	proxy.down()
	waitUntil(t, "agent status saying the engine is lost", time.Minute, func() bool {
		return mentions(agentState(t, rig.home, agent).Degraded, "Docker engine stopped answering")
	}, report)
	waitUntil(t, "status degraded for the engine", time.Minute, func() bool {
		st := choirdStatus(t, rig.home)
		return !st.Healthy && mentions(st.Degraded, "Docker engine")
	}, report)
	for _, msg := range []string{"first turn without the engine", "second turn without the engine"} {
		if out := rig.say(t, agent, msg); !strings.Contains(out, demomodel.Prefix) {
			t.Fatalf("with the engine's API down, %s answered %q to %q; want the model's reply", agent, out, msg)
		}
	}
	if st := agentState(t, rig.home, agent); st.State != "running" || st.SessionID != first.SessionID {
		t.Fatalf("with the engine's API down, agent status = %s session %s; want the session running", st.State, st.SessionID)
	}
	if s := sessionStatus(t, rig.home, agent, first.SessionID); s == "crashed" {
		t.Fatalf("the session was marked crashed while the engine's API was down\n%s", report())
	}
	if now := rig.container(t, agent); now.ID != c.ID || now.State == nil || !now.State.Running {
		t.Fatalf("with the engine's API down, the agent's container changed or stopped: %s, was %s", now.ID[:12], c.ID[:12])
	}

	proxy.up(t)
	waitUntil(t, "agent status and status clear once the engine answers", 2*time.Minute, func() bool {
		return len(agentState(t, rig.home, agent).Degraded) == 0 && choirdStatus(t, rig.home).Healthy
	}, report)
	rig.alive(t, agent, "the engine came back")
	if id := rig.container(t, agent).ID; id != c.ID {
		t.Errorf("the agent runs in container %s after the outage, not %s", id[:12], c.ID[:12])
	}
	verifyStored(t, rig.home, first.SessionID, before)
	stopLeavingNothing(t, rig, agent)
	if s := sessionStatus(t, rig.home, agent, first.SessionID); s != "stopped" {
		t.Errorf("the session after the final stop is %q; want stopped", s)
	}
	if out, _, _ := ctlRun(t, rig.home, "", "session", "show", first.SessionID); !strings.Contains(out, "end reason") || strings.Contains(out, "graceful stop ended") {
		t.Errorf("session show after a graceful stop:\n%s\nwant a plain stop", out)
	}
	if n := runsOf(runs); n != 1 {
		t.Errorf("runs.txt at the end holds %d runs; want 1", n)
	}
	rig.d.stop(t)
}

// faultProxy forwards connections from addr to an upstream address until
// it is taken down: down closes its listener and cuts every connection,
// up listens again on the same address.
type faultProxy struct {
	network, addr       string
	upNetwork, upstream string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
}

func newFaultProxy(t *testing.T, network, addr, upNetwork, upstream string) *faultProxy {
	t.Helper()
	p := &faultProxy{network: network, addr: addr, upNetwork: upNetwork, upstream: upstream, conns: map[net.Conn]bool{}}
	p.up(t)
	t.Cleanup(p.down)
	return p
}

func (p *faultProxy) up(t *testing.T) {
	t.Helper()
	if p.network == "unix" {
		os.Remove(p.addr)
	}
	ln, err := net.Listen(p.network, p.addr)
	if err != nil {
		t.Fatalf("the proxy to %s listens again on %s: %v", p.upstream, p.addr, err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.pipe(c)
		}
	}()
}

// down closes the listener and every connection through the proxy.
func (p *faultProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

func (p *faultProxy) pipe(c net.Conn) {
	u, err := net.Dial(p.upNetwork, p.upstream)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil { // taken down meanwhile
		p.mu.Unlock()
		c.Close()
		u.Close()
		return
	}
	p.conns[c], p.conns[u] = true, true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { io.Copy(u, c); done <- struct{}{} }()
	go func() { io.Copy(c, u); done <- struct{}{} }()
	<-done
	c.Close()
	u.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, u)
	p.mu.Unlock()
}

// checkCallOnce checks that the tool call whose request mentions text was
// requested, committed and answered once in a stored log.
func checkCallOnce(t *testing.T, evs []ctl.SessionEvent, text string) {
	t.Helper()
	var callID string
	count := map[string]int{}
	for _, ev := range evs {
		var p struct {
			ID string `json:"id"`
		}
		json.Unmarshal(ev.Payload, &p)
		if ev.Type == "ToolCallRequested" && strings.Contains(string(ev.Payload), text) && callID == "" {
			callID = p.ID
		}
		if callID != "" && p.ID == callID {
			count[ev.Type]++
		}
	}
	if callID == "" || count["ToolCallRequested"] != 1 || count["ToolCallCommitted"] != 1 || count["ToolResultCommitted"] != 1 {
		t.Errorf("the %s call %q in the stored log: %v; want one request, one commit, one result", text, callID, count)
	}
}
