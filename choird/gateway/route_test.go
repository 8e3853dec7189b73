package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"choir/internal/rpc"
)

func TestMessageRoundTrip(t *testing.T) {
	h := newHarness(t, nil)
	h.fc.bind("alice", "alpha")
	mid := h.srv.InjectText(h.bot, aliceUser, "hello agent")
	msgs := h.fc.waitMessages(t, 1)
	want := rpc.UserMessage{ID: fmt.Sprintf("tg-work-%d-%d", aliceUser, mid), From: "alice", Text: "hello agent"}
	if got := msgs[0]; got.ID != want.ID || got.From != want.From || got.Text != want.Text || len(got.Attachments) != 0 {
		t.Fatalf("SendUserMessage got %+v; want %+v", got, want)
	}
	if err := h.gw.Deliver(t.Context(), "alpha", "alice", rpc.DMSend{Kind: rpc.DMReply, ReplyTo: msgs[0].ID, Text: "hello human"}); err != nil {
		t.Fatalf("Deliver() = %v", err)
	}
	sent := h.srv.WaitSent(t, h.bot, aliceUser, 1)
	if len(sent) != 1 || sent[0].Text != "hello human" || sent[0].ReplyTo != mid {
		t.Errorf("sent to alice = %+v; want one reply to message %d", sent, mid)
	}
}

func TestLongReplyInOrder(t *testing.T) {
	h := newHarness(t, nil)
	h.fc.bind("alice", "alpha")
	var lines []string
	for i := 0; len(strings.Join(lines, "\n")) < 10000; i++ {
		lines = append(lines, fmt.Sprintf("line %04d %s", i, strings.Repeat("x", 40)))
	}
	text := strings.Join(lines, "\n")[:10000]
	if err := h.gw.Deliver(t.Context(), "alpha", "alice", rpc.DMSend{Kind: rpc.DMReply, Text: text}); err != nil {
		t.Fatalf("Deliver(10000 chars) = %v", err)
	}
	got := h.srv.Texts(h.bot, aliceUser)
	if len(got) != 3 {
		t.Fatalf("10000 characters arrived as %d messages; want 3", len(got))
	}
	if strings.Join(got, "\n") != text {
		t.Errorf("the parts joined are not the text in order")
	}
}

func TestUnknownUserIgnored(t *testing.T) {
	h := newHarness(t, nil)
	h.fc.bind("alice", "alpha")
	h.srv.InjectText(h.bot, stranger, "let me in")
	h.srv.InjectText(h.bot, stranger, "/start alpha")
	// A later message from alice is handled after the stranger's were.
	h.srv.InjectText(h.bot, aliceUser, "after")
	msgs := h.fc.waitMessages(t, 1)
	if len(msgs) != 1 || msgs[0].Text != "after" {
		t.Errorf("forwarded %+v; want only alice's", msgs)
	}
	if sent := h.srv.Sent(h.bot, stranger); len(sent) != 0 {
		t.Errorf("sent to the stranger: %+v; want nothing", sent)
	}
	if n := len(h.fc.startCalls()); n != 0 {
		t.Errorf("Start called %d times for a stranger", n)
	}
	if logs := h.logs.String(); strings.Contains(logs, "let me in") || !strings.Contains(logs, "not in the allowlist") {
		t.Errorf("log should note the drop without its content:\n%s", logs)
	}
	if st := h.gw.Status(); len(st) != 1 || st[0].Dropped != 2 {
		t.Errorf("Status() = %+v; want 2 dropped", st)
	}
}

func TestNoAgentAnswer(t *testing.T) {
	h := newHarness(t, nil)
	if got := h.say(aliceUser, "anyone there?"); got != "No agent is running for this DM. An admin can /start <agent>." {
		t.Errorf("answer without an agent = %q", got)
	}
	if got := h.say(adminUser, "anyone there?"); !strings.Contains(got, "/start <agent>") {
		t.Errorf("admin's answer without an agent = %q", got)
	}
}

func TestDeliverRefusesOtherDMs(t *testing.T) {
	h := newHarness(t, nil)
	h.fc.bind("alice", "alpha")
	for _, tc := range []struct{ agent, dm string }{{"beta", "alice"}, {"alpha", "console"}} {
		if err := h.gw.Deliver(context.Background(), tc.agent, tc.dm, rpc.DMSend{Kind: rpc.DMReply, Text: "x"}); err == nil {
			t.Errorf("Deliver(%s → %s) = nil; want an error", tc.agent, tc.dm)
		}
	}
	if err := h.gw.Deliver(context.Background(), "alpha", "alice", rpc.DMSend{Kind: rpc.DMNotice}); err == nil {
		t.Errorf("Deliver(empty) = nil; want an error")
	}
	if sent := h.srv.Sent(h.bot, aliceUser); len(sent) != 0 {
		t.Errorf("sent %+v; want nothing", sent)
	}
}
