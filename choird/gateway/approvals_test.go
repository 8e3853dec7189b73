package gateway_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"choir/choird/approval"
	"choir/choird/approval/approvaltest"
	"choir/internal/rpc"
	"choir/testkit/telegramtest"
)

// request asks for an approval and returns it with the DM message that
// shows it.
func (h *harness) request(svc *approval.Service, user int64, agent, summary string) (approval.Approval, telegramtest.Sent) {
	h.t.Helper()
	before := len(h.srv.Sent(h.bot, user))
	a, err := svc.Request(h.t.Context(), agent, "sess-"+agent, "repo_change", summary, json.RawMessage(`{}`))
	if err != nil {
		h.t.Fatalf("Request() = %v", err)
	}
	sent := h.srv.WaitSent(h.t, h.bot, user, before+1)
	return a, sent[before]
}

func (h *harness) press(user, msgID int64, data string) telegramtest.Answer {
	h.t.Helper()
	before := len(h.srv.Answers(h.bot))
	h.srv.InjectCallback(h.bot, user, msgID, data)
	h.srv.Wait(h.t, "the press answered", func() bool { return len(h.srv.Answers(h.bot)) > before })
	return h.srv.Answers(h.bot)[before]
}

func TestApprovalByButton(t *testing.T) {
	h := newHarness(t, nil)
	h.fc.bind("alice", "alpha")
	h.fc.bind("bob", "beta")
	svc, told := h.approvals(nil, time.Hour)

	a, msg := h.request(svc, aliceUser, "alpha", "merge proposal/fetch-tool")
	wantKB := [][]telegramtest.Button{{{Text: "Approve", CallbackData: "ap:" + a.ID + ":y"}, {Text: "Reject", CallbackData: "ap:" + a.ID + ":n"}}}
	if !strings.Contains(msg.Text, "merge proposal/fetch-tool") || !slices.EqualFunc(msg.Keyboard, wantKB, slices.Equal) {
		t.Fatalf("approval message = %q with %+v; want the summary and %+v", msg.Text, msg.Keyboard, wantKB)
	}

	// bob, bound to beta, forges a press on alpha's approval from his chat.
	h.gw.Deliver(t.Context(), "beta", "bob", rpc.DMSend{Kind: rpc.DMNotice, Text: "something"})
	bobMsg := h.srv.WaitSent(t, h.bot, bobUser, 1)[0]
	ans := h.press(bobUser, bobMsg.MessageID, "ap:"+a.ID+":n")
	if !ans.ShowAlert || !strings.Contains(ans.Text, "only its own agent's") {
		t.Errorf("forged press answered %+v; want a refusal", ans)
	}
	if got, _ := svc.Get(t.Context(), a.ID); got.Status != approval.Pending {
		t.Fatalf("after the forged press, approval = %s; want pending", got.Status)
	}

	ans = h.press(aliceUser, msg.MessageID, "ap:"+a.ID+":y")
	if ans.Text != "Approved" {
		t.Errorf("press answered %q; want Approved", ans.Text)
	}
	m, _ := h.srv.Message(h.bot, aliceUser, msg.MessageID)
	if want := "Approved: merge proposal/fetch-tool. Executing.\n(by telegram:1002 (alice))"; m.Text != want || m.Keyboard != nil {
		t.Errorf("approval message now %q with %v; want %q without buttons", m.Text, m.Keyboard, want)
	}
	if got := told.all(); len(got) != 1 || got[0] != (rpc.ApprovalDecision{ApprovalID: a.ID, Status: "approved", By: "telegram:1002 (alice)"}) {
		t.Errorf("agent told %+v; want one approval", got)
	}

	// A double press (a stale client still showing the buttons) changes nothing.
	ans = h.press(aliceUser, msg.MessageID, "ap:"+a.ID+":n")
	if !strings.Contains(ans.Text, "Already approved by telegram:1002 (alice)") {
		t.Errorf("second press answered %q; want already approved", ans.Text)
	}
	if got, _ := svc.Get(t.Context(), a.ID); got.Status != approval.Approved {
		t.Errorf("after the second press, approval = %s; want approved", got.Status)
	}
	if n := len(told.all()); n != 1 {
		t.Errorf("agent told %d times; want once", n)
	}
}

func TestApprovalByCommand(t *testing.T) {
	h := newHarness(t, nil)
	h.fc.bind("alice", "alpha")
	h.fc.bind("bob", "beta")
	svc, told := h.approvals(nil, time.Hour)

	// Exactly one pending: /approve takes it.
	a, msg := h.request(svc, aliceUser, "alpha", "add skill research")
	if got := h.say(aliceUser, "/approve"); !strings.HasPrefix(got, "Approved: add skill research. Executing.") {
		t.Errorf("/approve with one pending → %q", got)
	}
	if m, _ := h.srv.Message(h.bot, aliceUser, msg.MessageID); !strings.HasPrefix(m.Text, "Approved:") {
		t.Errorf("request message after /approve = %q", m.Text)
	}
	if got := h.say(aliceUser, "/reject "+a.ID); !strings.Contains(got, "already approved") {
		t.Errorf("late /reject <id> → %q; want already approved", got)
	}

	// Several pending: a numbered list, and the number picks.
	var ids []string
	for _, s := range []string{"first", "second", "third"} {
		x, _ := h.request(svc, aliceUser, "alpha", s)
		ids = append(ids, x.ID)
	}
	list := h.say(aliceUser, "/reject")
	if !strings.Contains(list, "3 approvals are pending") || !strings.Contains(list, "2. alpha · repo_change: second") {
		t.Fatalf("/reject with three pending → %q; want a numbered list", list)
	}
	if got := h.say(aliceUser, "2"); !strings.HasPrefix(got, "Rejected: second.") {
		t.Errorf("reply 2 → %q; want second rejected", got)
	}
	for i, id := range ids {
		want := approval.Pending
		if i == 1 {
			want = approval.Rejected
		}
		if got, _ := svc.Get(t.Context(), id); got.Status != want {
			t.Errorf("approval %d is %s; want %s", i+1, got.Status, want)
		}
	}
	// A number with no open list is an ordinary message.
	h.srv.InjectText(h.bot, aliceUser, "3")
	if msgs := h.fc.waitMessages(t, 1); msgs[0].Text != "3" {
		t.Errorf("forwarded %+v; want the 3 passed on", msgs)
	}

	// bob (regular, bound to beta) sees none of alpha's and cannot decide them.
	if got := h.say(bobUser, "/approvals"); got != "No pending approvals." {
		t.Errorf("bob: /approvals → %q", got)
	}
	if got := h.say(bobUser, "/approve "+ids[0]); !strings.Contains(got, "only its own agent's") {
		t.Errorf("bob: /approve <alpha's id> → %q; want a refusal", got)
	}
	// The admin sees and decides everything.
	if got := h.say(adminUser, "/approvals"); !strings.Contains(got, "first") || !strings.Contains(got, "third") {
		t.Errorf("admin: /approvals → %q; want alpha's pending ones", got)
	}
	if got := h.say(adminUser, "/approve "+ids[0]); !strings.HasPrefix(got, "Approved: first.") {
		t.Errorf("admin: /approve <id> → %q", got)
	}
	if got := told.all(); len(got) < 3 || got[2].By != "telegram:1001 (admin)" {
		t.Errorf("agent told %+v; want the admin's approval third", got)
	}
}

func TestApprovalReplyToRequest(t *testing.T) {
	h := newHarness(t, nil)
	h.fc.bind("alice", "alpha")
	svc, _ := h.approvals(nil, time.Hour)
	first, _ := h.request(svc, aliceUser, "alpha", "first")
	second, msg := h.request(svc, aliceUser, "alpha", "second")
	before := len(h.srv.Sent(h.bot, aliceUser))
	h.srv.InjectUpdate(h.bot, "message", map[string]any{
		"message_id": 90001, "date": 1, "text": "/reject",
		"from":             map[string]any{"id": aliceUser, "is_bot": false, "first_name": "Alice"},
		"chat":             map[string]any{"id": aliceUser, "type": "private"},
		"entities":         []any{map[string]any{"type": "bot_command", "offset": 0, "length": 7}},
		"reply_to_message": map[string]any{"message_id": msg.MessageID, "date": 1, "chat": map[string]any{"id": aliceUser, "type": "private"}},
	})
	got := h.srv.WaitSent(t, h.bot, aliceUser, before+1)[before].Text
	if !strings.HasPrefix(got, "Rejected: second.") {
		t.Errorf("/reject as a reply to the second request → %q", got)
	}
	if a, _ := svc.Get(t.Context(), first.ID); a.Status != approval.Pending {
		t.Errorf("first approval = %s; want pending", a.Status)
	}
	if a, _ := svc.Get(t.Context(), second.ID); a.Status != approval.Rejected {
		t.Errorf("second approval = %s; want rejected", a.Status)
	}
}

func TestApprovalTimeout(t *testing.T) {
	h := newHarness(t, nil)
	h.fc.bind("alice", "alpha")
	clock := approvaltest.NewClock(time.Now())
	svc, told := h.approvals(clock, 30*time.Minute)
	a, msg := h.request(svc, aliceUser, "alpha", "rebuild image")
	clock.Advance(30*time.Minute + time.Second)
	m, _ := h.srv.Message(h.bot, aliceUser, msg.MessageID)
	if want := "Approval timed out: rebuild image. Rejected automatically."; m.Text != want || m.Keyboard != nil {
		t.Errorf("request message after the timeout = %q %v; want %q without buttons", m.Text, m.Keyboard, want)
	}
	if got := told.all(); len(got) != 1 || got[0].Status != "rejected" || got[0].ApprovalID != a.ID {
		t.Errorf("agent told %+v; want one rejection", got)
	}
	ans := h.press(aliceUser, msg.MessageID, "ap:"+a.ID+":y")
	if !strings.Contains(ans.Text, "Already rejected by "+approval.ByTimeout) {
		t.Errorf("late press answered %q", ans.Text)
	}
}
