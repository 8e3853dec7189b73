package main

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"choir/internal/ctl"
	"choir/testkit/demomodel"
	"choir/testkit/dockertest"
	"choir/testkit/telegramtest"
)

// TestReplicaTelegramReachesTheFollowersAgent (issue 26): two choird
// --replica against one native Postgres; hl-1 runs on the leader, ha-1 on
// the follower, each bound to a DM of the one bot, which only the leader
// polls. A Telegram message to ha-1's DM reaches ha-1 on the follower
// (through the DM inbox in Postgres) and its answer reaches the DM; an
// approval ha-1 asks for shows its buttons in the DM, and pressing Reject
// there decides it on the follower. Then the follower dies (SIGKILL) and
// starts again: its own session is marked crashed and the DM told, while
// hl-1 on the leader runs on in its session; and the other way round, the
// leader restarts (the follower takes the lead) while ha-1, started again
// on the follower, runs on, and still answers its DM.
//
// Approvals decided on the replica that does not run the session reach
// the agent there: one ha-1 asks for, rejected with choirctl on the
// leader, is handed on by the follower (ha-1 says so in its DM, once, and
// the request shows the outcome); and a leader that restarts with a
// timeout shorter than the age of ha-1's pending request does not time it
// out (the follower keeps its session's timeouts), and a rejection by
// choirctl there reaches ha-1 on the other replica too.
func TestReplicaTelegramReachesTheFollowersAgent(t *testing.T) {
	const userA, userL = int64(4545), int64(4646)
	r := newReplicaRig(t, replicaAgent{id: "ha-1", dm: "ha", user: userA}, replicaAgent{id: "hl-1", dm: "hl", user: userL})
	tg, bot := r.tg, r.bot
	const shortTimeout = 1000 // ms, the least config allows: homeA's only
	editConfig(t, r.homeA, func(cfg map[string]any) { cfg["approval_timeout_ms"] = shortTimeout })
	dockertest.AgentImage(t, r.dc, "ha-1", "ha1")
	dockertest.AgentImage(t, r.dc, "hl-1", "hl1")

	a := startChoird(t, r.homeA, r.env, "--replica")
	waitReady(t, r.homeA, a)
	tg.WaitPolling(t, bot) // a leads
	b := startChoird(t, r.homeB, r.env, "--replica")
	waitReady(t, r.homeB, b)
	start := func(home, agent, dm, where string) {
		t.Helper()
		if out, stderr, code := ctlRun(t, home, "", "agent", "start", agent, "--dm="+dm); code != 0 {
			t.Fatalf("agent start %s on the %s = %d %q %q", agent, where, code, out, stderr)
		}
	}
	start(r.homeA, "hl-1", "hl", "leader")
	start(r.homeB, "ha-1", "ha", "follower")
	hlSession := newestSession(t, r.homeA, "hl-1")

	// A message to the follower's agent, polled by the leader.
	ask := func(user int64, text string) {
		t.Helper()
		before := len(replies(tg.Texts(bot, user)))
		tg.InjectText(bot, user, text)
		want := demomodel.Prefix + `you said "` + text + `"`
		tg.Wait(t, "the answer to "+text, func() bool {
			got := replies(tg.Texts(bot, user))
			return len(got) > before && strings.Contains(strings.Join(got[before:], "\n"), want)
		})
	}
	ask(userA, "hello from telegram")
	if texts := tg.Texts(bot, userA); strings.Contains(strings.Join(texts, "\n"), "No agent is running") {
		t.Errorf("the leader answered ha-1's DM as for an agent not running: %q", texts)
	}

	// An approval ha-1 asks for on the follower, decided by its button.
	tg.InjectText(bot, userA, "propose skill file-reader")
	var request telegramtest.Sent
	tg.Wait(t, "the approval request with buttons in ha-1's DM", func() bool {
		for _, m := range tg.Sent(bot, userA) {
			if len(m.Keyboard) > 0 {
				request = m
				return true
			}
		}
		return false
	})
	reject := request.Keyboard[0][len(request.Keyboard[0])-1]
	if reject.Text != "Reject" {
		t.Fatalf("the request's buttons are %+v; want Approve, Reject", request.Keyboard)
	}
	tg.InjectCallback(bot, userA, request.MessageID, reject.CallbackData)
	tg.Wait(t, "the request to show its outcome", func() bool {
		m, _ := tg.Message(bot, userA, request.MessageID)
		return strings.HasPrefix(m.Text, "Rejected") && m.Keyboard == nil
	})
	for _, home := range []string{r.homeA, r.homeB} {
		out, _, _ := ctlRun(t, home, "", "approval", "list", "--json")
		var pending []ctl.Approval
		if json.Unmarshal([]byte(out), &pending) != nil || len(pending) != 0 {
			t.Errorf("approval list after the button = %q; want none pending", out)
		}
	}
	if ans := tg.Answers(bot); len(ans) == 0 || ans[len(ans)-1].Text != "Rejected" {
		t.Errorf("the press was answered %+v; want Rejected", ans)
	}

	// An approval ha-1 asks for on the follower, rejected by choirctl on
	// the leader's admin socket.
	_, byLeader := askApproval(t, tg, bot, userA, "propose skill file-writer")
	if out, stderr, code := ctlRun(t, r.homeA, "", "approval", "reject", byLeader); code != 0 || !strings.Contains(out, "rejected") {
		t.Fatalf("approval reject on the leader = %d %q %q", code, out, stderr)
	}
	decisionReached(t, tg, bot, userA, byLeader, "rejected", "Rejected")

	// The follower dies and starts again: its own session is crashed and
	// its DM told; the leader's agent runs on in its session.
	haSession := newestSession(t, r.homeB, "ha-1")
	if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-b.done
	b.done <- nil
	b = startChoird(t, r.homeB, r.env, "--replica")
	waitReady(t, r.homeB, b)
	if s := sessionByID(t, r.homeB, "ha-1", haSession); s.Status != "crashed" {
		t.Errorf("ha-1's session after the follower's restart: %+v; want crashed", s)
	}
	tg.Wait(t, "ha-1's DM told of the interruption", func() bool {
		return strings.Contains(strings.Join(tg.Texts(bot, userA), "\n"), "choird restarted while ha-1 was running")
	})
	if s := sessionByID(t, r.homeA, "hl-1", hlSession); s.Status != "active" {
		t.Errorf("hl-1's session on the leader after the follower's restart: %+v; want active, untouched", s)
	}
	if strings.Contains(strings.Join(tg.Texts(bot, userL), "\n"), "choird restarted") {
		t.Errorf("hl-1's DM was told of an interruption: %q", tg.Texts(bot, userL))
	}
	ask(userL, "still there")

	// The other way round: ha-1 runs on the follower again (resuming its
	// session), and the leader restarts.
	start(r.homeB, "ha-1", "ha", "follower")
	haSession = newestSession(t, r.homeB, "ha-1")
	ask(userA, "back again")
	_, waiting := askApproval(t, tg, bot, userA, "propose skill file-mover")
	asked := time.Now()
	if err := a.stop(t); err != nil {
		t.Errorf("the leader's stop = %v", err)
	}
	waitFor(t, "the follower to take the lead and poll", func() bool { return polling(t, r.homeB) })
	waitFor(t, "ha-1's request to be older than homeA's approval timeout", func() bool {
		return time.Since(asked) > 2*shortTimeout*time.Millisecond
	})
	a = startChoird(t, r.homeA, r.env, "--replica")
	waitReady(t, r.homeA, a)
	// homeA's start re-arms only the timeouts of sessions no other
	// replica runs: ha-1's request, past homeA's timeout, still waits.
	if got := pendingIDs(t, r.homeA); len(got) != 1 || got[0] != waiting {
		t.Errorf("pending after homeA's restart = %v; want %s, not timed out by homeA", got, waiting)
	}
	if out, stderr, code := ctlRun(t, r.homeA, "", "approval", "reject", waiting); code != 0 || !strings.Contains(out, "rejected") {
		t.Fatalf("approval reject on homeA = %d %q %q", code, out, stderr)
	}
	decisionReached(t, tg, bot, userA, waiting, "rejected", "Rejected")
	if s := sessionByID(t, r.homeA, "ha-1", haSession); s.Status != "active" {
		t.Errorf("ha-1's session after the old leader's restart: %+v; want active, untouched", s)
	}
	if out, _, _ := ctlRun(t, r.homeB, "", "agent", "status", "ha-1"); !strings.Contains(out, "running") {
		t.Errorf("ha-1 after the old leader's restart:\n%s\nwant it running", out)
	}
	ask(userA, "after the leader came back")
	if st := gatewayStatus(t, r.homeB); len(st) != 1 || st[0].Conflicts != 0 {
		t.Errorf("the new leader's pollers: %+v; want one bot and no 409 conflict", st)
	}
	for _, id := range []string{byLeader, waiting} {
		if n := strings.Count(strings.Join(tg.Texts(bot, userA), "\n"), "approval "+id+" was rejected"); n != 1 {
			t.Errorf("ha-1 told its DM of %s's decision %d times; want once", id, n)
		}
	}
	ctlRun(t, r.homeB, "", "agent", "stop", "ha-1")
	b.stop(t)
	a.stop(t)
}

// askApproval has an agent ask for an approval through its DM and returns
// the request's message in the DM and the approval's id.
func askApproval(t *testing.T, tg *telegramtest.Server, bot telegramtest.BotID, user int64, text string) (telegramtest.Sent, string) {
	t.Helper()
	seen := map[int64]bool{}
	for _, m := range tg.Sent(bot, user) {
		seen[m.MessageID] = true
	}
	tg.InjectText(bot, user, text)
	var request telegramtest.Sent
	tg.Wait(t, "a new approval request with buttons", func() bool {
		for _, m := range tg.Sent(bot, user) {
			if len(m.Keyboard) > 0 && !seen[m.MessageID] {
				request = m
				return true
			}
		}
		return false
	})
	id, ok := strings.CutPrefix(request.Keyboard[0][0].CallbackData, "ap:")
	id, ok2 := strings.CutSuffix(id, ":y")
	if !ok || !ok2 {
		t.Fatalf("the request's first button is %+v; want Approve (ap:<id>:y)", request.Keyboard[0][0])
	}
	return request, id
}

// decisionReached waits for the agent to tell its DM that approval id was
// decided (it does on the approval push event), and for the request's
// message to show the outcome without buttons.
func decisionReached(t *testing.T, tg *telegramtest.Server, bot telegramtest.BotID, user int64, id, status, outcome string) {
	t.Helper()
	var request int64
	for _, m := range tg.Sent(bot, user) {
		if strings.Contains(m.Text, "id: "+id) {
			request = m.MessageID
		}
	}
	tg.Wait(t, "the agent to tell its DM that approval "+id+" was "+status, func() bool {
		return strings.Contains(strings.Join(tg.Texts(bot, user), "\n"), "approval "+id+" was "+status)
	})
	tg.Wait(t, "the request to show its outcome", func() bool {
		m, _ := tg.Message(bot, user, request)
		return strings.HasPrefix(m.Text, outcome) && m.Keyboard == nil
	})
}

// pendingIDs are the approvals choirctl approval list shows pending.
func pendingIDs(t *testing.T, home string) []string {
	t.Helper()
	out, stderr, code := ctlRun(t, home, "", "approval", "list", "--json")
	var pending []ctl.Approval
	if code != 0 || json.Unmarshal([]byte(out), &pending) != nil {
		t.Fatalf("approval list --json = %d %q %q", code, out, stderr)
	}
	var ids []string
	for _, a := range pending {
		if a.Status == "pending" {
			ids = append(ids, a.ID)
		}
	}
	return ids
}

// newestSession is the id of an agent's newest session.
func newestSession(t *testing.T, home, agent string) string {
	t.Helper()
	ss := sessions(t, home, agent)
	if len(ss) == 0 {
		t.Fatalf("%s has no session", agent)
	}
	return ss[0].SessionID
}

// sessionByID is one of an agent's sessions as choirctl session list shows it.
func sessionByID(t *testing.T, home, agent, id string) ctl.SessionInfo {
	t.Helper()
	for _, s := range sessions(t, home, agent) {
		if s.SessionID == id {
			return s
		}
	}
	t.Fatalf("%s has no session %s", agent, id)
	return ctl.SessionInfo{}
}

func sessions(t *testing.T, home, agent string) []ctl.SessionInfo {
	t.Helper()
	out, stderr, code := ctlRun(t, home, "", "session", "list", agent, "--json")
	var ss []ctl.SessionInfo
	if code != 0 || json.Unmarshal([]byte(out), &ss) != nil {
		t.Fatalf("session list %s = %d %q %q", agent, code, out, stderr)
	}
	return ss
}
