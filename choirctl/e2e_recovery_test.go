package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/internal/chain"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/docker"
)

// The recovery tests kill a real agent container with SIGKILL in the middle
// of a turn and start the agent again (§13.2): the session resumes where
// choird last saved it, a tool call that was running is reported to the
// model as interrupted and never run again, and the stored log verifies.

// waitUntil polls cond until it holds, failing after limit with what the
// caller says about the state (status, logs) at that point.
func waitUntil(t testing.TB, what string, limit time.Duration, cond func() bool, state func() string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s\n%s", limit, what, state())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// outboxLog collects everything an agent sends to its DM from the moment it
// is made, whichever session sends it.
type outboxLog struct {
	mu   sync.Mutex
	msgs []ctl.ConsoleMessage
}

func watchOutbox(t *testing.T, home, agent string) *outboxLog {
	t.Helper()
	c := ctl.NewClient(config.Home{Dir: home}.AdminSocket())
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := c.Outbox(ctx, agent)
	if err != nil {
		cancel()
		t.Fatalf("subscribe to %s's outbox: %v", agent, err)
	}
	o := &outboxLog{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			m, err := stream.Next()
			if err != nil {
				return
			}
			o.mu.Lock()
			o.msgs = append(o.msgs, m)
			o.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); stream.Close(); <-done; c.Close() })
	return o
}

// find returns the text of the first message containing every word.
func (o *outboxLog) find(words ...string) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
next:
	for _, m := range o.msgs {
		for _, w := range words {
			if !strings.Contains(m.Text, w) {
				continue next
			}
		}
		return m.Text, true
	}
	return "", false
}

func (o *outboxLog) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var b strings.Builder
	for _, m := range o.msgs {
		if m.Ended != nil {
			fmt.Fprintf(&b, "[session ended: %+v]\n", *m.Ended)
			continue
		}
		fmt.Fprintf(&b, "[%s] %s\n", m.Kind, m.Text)
	}
	return b.String()
}

// storedEvents is a session's whole replicated log as choird serves it.
func storedEvents(t *testing.T, home, sessionID string) []ctl.SessionEvent {
	t.Helper()
	c := ctl.NewClient(config.Home{Dir: home}.AdminSocket())
	defer c.Close()
	evs, err := c.SessionEvents(context.Background(), sessionID, 0)
	if err != nil {
		t.Fatalf("the events of session %s: %v", sessionID, err)
	}
	return evs
}

func agentState(t testing.TB, home, agent string) ctl.AgentStatus {
	t.Helper()
	out, stderr, code := ctlRun(t, home, "", "agent", "status", agent, "--json")
	var st ctl.AgentStatus
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("agent status %s --json = %d %q %q", agent, code, out, stderr)
	}
	return st
}

// TestKillNineMidTurnResumes: the agent runs a command that appends a line
// to runs.txt and then blocks; once the call is committed in choird's log,
// the container is killed with SIGKILL. The waiting chat ends with an
// error, choird marks the agent stopped, and `agent start` resumes the same
// session: the DM is told so, the model hears that the call was
// interrupted and answers, the command never runs a second time, and the
// stored log verifies from its first event. Then a stop and a --fresh start
// make a new session, and the final stop leaves no container and no lease.
func TestKillNineMidTurnResumes(t *testing.T) {
	rig := newBoundaryRig(t)
	const agent = "agent-1"
	runs := filepath.Join(rig.workspace[agent], "runs.txt")
	status := func() string {
		st, _, _ := ctlRun(t, rig.home, "", "agent", "status", agent)
		return "agent status:\n" + st + "\nagent log:\n" + rig.agentLogTail(agent) + "\nchoird:\n" + tail(rig.d.stderr.String(), 4000)
	}
	rig.start(t, agent)
	first := agentState(t, rig.home, agent)
	if first.SessionID == "" || first.Resumed != nil {
		t.Fatalf("the first start: session %q, resumed %+v; want a new session", first.SessionID, first.Resumed)
	}

	// A turn whose command has its side effect and then blocks.
	type result struct {
		out, stderr string
		code        int
	}
	chat := make(chan result, 1)
	go func() {
		out, stderr, code := ctlRun(t, rig.home, "$ [600000] echo ran >> runs.txt; sleep 600", "chat", agent, "--once", "--timeout", "5m")
		chat <- result{out, stderr, code}
	}()
	waitUntil(t, "the command's line in runs.txt", 2*time.Minute, func() bool {
		data, _ := os.ReadFile(runs)
		return string(data) == "ran\n"
	}, status)
	waitUntil(t, "ToolCallCommitted in choird's log", time.Minute, func() bool {
		for _, ev := range storedEvents(t, rig.home, first.SessionID) {
			if ev.Type == "ToolCallCommitted" {
				return true
			}
		}
		return false
	}, status)

	c := rig.container(t, agent)
	if err := rig.dc.ContainerKill(context.Background(), c.ID, "KILL"); err != nil {
		t.Fatalf("kill -9 the agent's container: %v", err)
	}

	// The crash is seen: the chat ends with an error, the agent is stopped.
	select {
	case r := <-chat:
		if r.code == 0 || !strings.Contains(r.stderr, "crashed") || !strings.Contains(r.stderr, "agent start "+agent) {
			t.Errorf("the chat waiting on the killed agent = %d %q %q; want an error saying it crashed and how to start it", r.code, r.out, r.stderr)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the chat still waits 2 minutes after the agent was killed\n%s", status())
	}
	waitUntil(t, "agent status stopped", time.Minute, func() bool { return agentState(t, rig.home, agent).State == "stopped" }, status)

	// Started again, the session resumes.
	outbox := watchOutbox(t, rig.home, agent)
	out, stderr, code := ctlRun(t, rig.home, "", "agent", "start", agent, "--dm="+agent)
	if code != 0 || !strings.Contains(out, "resumed the session (it crashed)") || !strings.Contains(out, first.SessionID) {
		t.Fatalf("agent start after the crash = %d %q %q; want the session %s resumed\n%s", code, out, stderr, first.SessionID, status())
	}
	if st := agentState(t, rig.home, agent); st.SessionID != first.SessionID || st.Resumed == nil || st.State != "running" {
		t.Errorf("agent status after the resume: session %s, state %s, resumed %+v; want session %s running, resumed", st.SessionID, st.State, st.Resumed, first.SessionID)
	}
	if rig.container(t, agent).ID == c.ID {
		t.Errorf("the resumed session runs in the killed container %s", c.ID[:12])
	}
	waitUntil(t, "the resume notice and the answer to the interrupted call in the DM", 2*time.Minute, func() bool {
		_, notice := outbox.find("I was restarted and resumed this session")
		// Committed before the kill, the call may have run: the model is
		// told so, not that it never started.
		_, answer := outbox.find("result: ", "interrupted", "it was not run again")
		return notice && answer
	}, func() string { return "outbox:\n" + outbox.String() + status() })
	var interrupted bool
	for _, body := range rig.model.requests() {
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		json.Unmarshal(body, &req)
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "tool" && strings.Contains(req.Messages[n-1].Content, "interrupted") {
			interrupted = true
		}
	}
	if !interrupted {
		t.Errorf("no model request ends with the interrupted call's tool message")
	}
	if data, _ := os.ReadFile(runs); string(data) != "ran\n" {
		t.Errorf("runs.txt after the resume = %q; want the one line of the one run", data)
	}
	// The resumed session still works.
	rig.alive(t, agent, "the resume")

	// choird's log of the session, from its first event, verifies; the
	// call committed before the kill has exactly one result, interrupted.
	waitUntil(t, "the resumed turn's events in choird's log", time.Minute, func() bool {
		evs := storedEvents(t, rig.home, first.SessionID)
		for _, ev := range evs {
			if strings.Contains(string(ev.Payload), "hello after the resume") {
				return true
			}
		}
		return false
	}, status)
	evs := verifyStored(t, rig.home, first.SessionID, nil)
	// The runs.txt call: requested once, committed once, and answered once,
	// by the interrupted result.
	var callID string
	count := map[string]int{}
	var answer string
	for _, ev := range evs {
		var p struct {
			ID string `json:"id"`
		}
		json.Unmarshal(ev.Payload, &p)
		if ev.Type == "ToolCallRequested" && strings.Contains(string(ev.Payload), "runs.txt") {
			if callID != "" {
				t.Errorf("the runs.txt call was requested twice: %s and %s", callID, p.ID)
			}
			callID = p.ID
		}
		if callID != "" && p.ID == callID {
			count[ev.Type]++
			if ev.Type == "ToolResultCommitted" {
				answer = string(ev.Payload)
			}
		}
	}
	if callID == "" || count["ToolCallRequested"] != 1 || count["ToolCallCommitted"] != 1 || count["ToolResultCommitted"] != 1 || !strings.Contains(answer, `"interrupted"`) {
		t.Errorf("the runs.txt call %q in the stored log: %v, result %s; want one request, one commit, one interrupted result", callID, count, answer)
	}

	// A stop, then --fresh: a new session.
	if out, stderr, code := ctlRun(t, rig.home, "", "agent", "stop", agent); code != 0 {
		t.Fatalf("agent stop = %d %q %q", code, out, stderr)
	}
	out, stderr, code = ctlRun(t, rig.home, "", "agent", "start", agent, "--dm="+agent, "--fresh")
	if code != 0 || strings.Contains(out, "resumed") {
		t.Fatalf("agent start --fresh = %d %q %q; want a new session", code, out, stderr)
	}
	if st := agentState(t, rig.home, agent); st.SessionID == "" || st.SessionID == first.SessionID || st.Resumed != nil {
		t.Errorf("after --fresh: session %s, resumed %+v; want a new session, not %s", st.SessionID, st.Resumed, first.SessionID)
	}
	stopLeavingNothing(t, rig, agent)
	rig.d.stop(t)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// report describes an agent for a failure message: its status, the tail
// of its log and of choird's.
func (rig *boundaryRig) report(t *testing.T, agent string) func() string {
	return func() string {
		st, _, _ := ctlRun(t, rig.home, "", "agent", "status", agent)
		return "agent status:\n" + st + "\nagent log:\n" + rig.agentLogTail(agent) + "\nchoird:\n" + tail(rig.d.stderr.String(), 4000)
	}
}

// verifyStored reads choird's stored log of a session after a fault and
// checks it: it starts at event 1 and verifies from there
// (chain.Verify), and every event choird had stored before the fault
// (before, read then) is still there, unchanged: the log before is a
// prefix of the log after. It returns the log.
func verifyStored(t *testing.T, home, sessionID string, before []ctl.SessionEvent) []ctl.SessionEvent {
	t.Helper()
	evs := storedEvents(t, home, sessionID)
	if len(evs) == 0 || evs[0].Rev != 1 {
		t.Fatalf("the stored log of %s does not start at event 1: %d events", sessionID, len(evs))
	}
	chained := make([]chain.Event, len(evs))
	for i, ev := range evs {
		chained[i] = chain.Event{Rev: ev.Rev, Type: ev.Type, Lane: ev.Lane, Payload: ev.Payload, Hash: ev.Hash, Time: ev.Time}
	}
	if err := chain.Verify("", chained); err != nil {
		t.Errorf("the stored log of %s (%d events) does not verify: %v", sessionID, len(evs), err)
	}
	if len(evs) < len(before) {
		t.Errorf("the stored log of %s holds %d events after the fault, %d before: acknowledged events were lost", sessionID, len(evs), len(before))
	}
	for i := range min(len(evs), len(before)) {
		b, a := before[i], evs[i]
		if a.Rev != b.Rev || a.Type != b.Type || a.Hash != b.Hash || !bytes.Equal(a.Payload, b.Payload) {
			t.Errorf("stored event %d changed across the fault: %s %s %s before, %s %s %s after", b.Rev, b.Type, b.Hash, b.Payload, a.Type, a.Hash, a.Payload)
			break
		}
	}
	return evs
}

// countEvents counts the events of a type whose payload contains text.
func countEvents(evs []ctl.SessionEvent, typ, text string) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ && strings.Contains(string(ev.Payload), text) {
			n++
		}
	}
	return n
}

// stopLeavingNothing stops the agent and checks that no container of it,
// running or not, and no lease is left behind.
func stopLeavingNothing(t *testing.T, rig *boundaryRig, agent string) {
	t.Helper()
	if out, stderr, code := ctlRun(t, rig.home, "", "agent", "stop", agent); code != 0 {
		t.Fatalf("the final agent stop = %d %q %q", code, out, stderr)
	}
	cs, err := rig.dc.ContainerList(context.Background(), docker.ContainerListOptions{All: true, Filters: docker.Filters{"label": {"choir.agent=" + agent, instanceLabel(rig.home)}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		t.Errorf("container %s of %s left after the final stop (%s)", c.ID[:12], agent, c.State)
	}
	c := ctl.NewClient(config.Home{Dir: rig.home}.AdminSocket())
	defer c.Close()
	wss, err := c.Workspaces(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range wss {
		if w.Holder != "" {
			t.Errorf("workspace %s is still leased to %s after the final stop", w.Name, w.Holder)
		}
	}
}
