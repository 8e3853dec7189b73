package gateway_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"choir/choird/gateway"
	"choir/internal/rpc"
	"choir/testkit/telegramtest"
)

func TestRateLimitBurstLosesNothing(t *testing.T) {
	h := newHarness(t, nil)
	h.fc.bind("alice", "alpha")
	h.srv.FailNext(h.bot, "sendMessage", 5, telegramtest.TooManyRequests(0))
	text := strings.Repeat("a", 4000) + "\n" + strings.Repeat("b", 4000) + "\n" + strings.Repeat("c", 100)
	if err := h.gw.Deliver(t.Context(), "alpha", "alice", rpc.DMSend{Kind: rpc.DMReply, Text: text}); err != nil {
		t.Fatalf("Deliver() through 429s = %v", err)
	}
	if err := h.gw.Deliver(t.Context(), "alpha", "alice", rpc.DMSend{Kind: rpc.DMReply, Text: "and one more"}); err != nil {
		t.Fatalf("Deliver() = %v", err)
	}
	got := h.srv.Texts(h.bot, aliceUser)
	want := []string{strings.Repeat("a", 4000), strings.Repeat("b", 4000), strings.Repeat("c", 100), "and one more"}
	if len(got) != len(want) {
		t.Fatalf("%d messages arrived; want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("message %d = %.20q…; want %.20q…", i, got[i], want[i])
		}
	}
	if n := h.srv.CallCount(h.bot, "sendMessage"); n != 9 {
		t.Errorf("sendMessage called %d times; want 4 + 5 refused", n)
	}
}

func TestWatchdogRestartsStalledPoll(t *testing.T) {
	h := newHarness(t, func(c *gateway.Config) { c.StallAfter = 300 * time.Millisecond })
	// Empty polls come back fast, so only a stalled one outlives StallAfter.
	h.srv.SetLongPollSecond(10 * time.Millisecond)
	h.fc.bind("alice", "alpha")
	h.srv.FailNext(h.bot, "getUpdates", 1, telegramtest.Hang())
	h.srv.Wait(t, "a poll hanging", func() bool { return h.srv.InFlight(h.bot, "getUpdates") > 0 && !h.srv.Polling(h.bot) })
	h.srv.InjectText(h.bot, aliceUser, "are you there")
	msgs := h.fc.waitMessages(t, 1)
	if msgs[0].Text != "are you there" {
		t.Errorf("forwarded %+v", msgs)
	}
	st := h.gw.Status()[0]
	if st.WatchdogRestarts < 1 {
		t.Errorf("Status() = %+v; want a watchdog restart", st)
	}
	if !strings.Contains(h.logs.String(), "watchdog restarted the long poll") {
		t.Errorf("log lacks the watchdog's restart")
	}
}

func TestConflictReported(t *testing.T) {
	h := newHarness(t, nil)
	h.fc.bind("alice", "alpha")
	h.srv.FailNext(h.bot, "getUpdates", 2, telegramtest.Conflict())
	// End the waiting poll so the next ones meet the conflicts.
	h.srv.InjectText(h.bot, aliceUser, "one")
	h.fc.waitMessages(t, 1)
	h.srv.Wait(t, "two conflicts", func() bool { return h.gw.Status()[0].Conflicts >= 2 })
	if n := strings.Count(h.logs.String(), `"level":"ERROR","msg":"getUpdates conflict (409)`); n < 2 {
		t.Errorf("%d conflict errors logged; want one per 409:\n%s", n, h.logs)
	}
	st := h.gw.Status()[0]
	if !strings.Contains(st.LastErr, "409") && !strings.Contains(strings.ToLower(st.LastErr), "conflict") {
		t.Errorf("Status().LastErr = %q; want the conflict", st.LastErr)
	}
	// Polling goes on once the other poller is gone.
	h.srv.InjectText(h.bot, aliceUser, "two")
	if msgs := h.fc.waitMessages(t, 2); msgs[1].Text != "two" {
		t.Errorf("after the conflicts, forwarded %+v", msgs)
	}
}

func TestPollErrorsNeitherSkipNorRepeat(t *testing.T) {
	h := newHarness(t, nil)
	h.fc.bind("alice", "alpha")
	for i := range 3 {
		h.srv.InjectText(h.bot, aliceUser, fmt.Sprintf("m%d", i))
	}
	h.fc.waitMessages(t, 3)
	h.srv.FailNext(h.bot, "getUpdates", 2, telegramtest.ServerError(502))
	h.srv.FailNext(h.bot, "getUpdates", 1, telegramtest.ProxyError(504))
	for i := 3; i < 6; i++ {
		h.srv.InjectText(h.bot, aliceUser, fmt.Sprintf("m%d", i))
	}
	msgs := h.fc.waitMessages(t, 6)
	h.srv.InjectText(h.bot, aliceUser, "last")
	msgs = h.fc.waitMessages(t, 7)
	var texts []string
	for _, m := range msgs {
		texts = append(texts, m.Text)
	}
	if got := strings.Join(texts, " "); got != "m0 m1 m2 m3 m4 m5 last" {
		t.Errorf("forwarded %q; want each message once, in order", got)
	}
	if st := h.gw.Status()[0]; st.Errors < 3 {
		t.Errorf("Status() = %+v; want 3 errors counted", st)
	}
}

func TestStopConfirmsHandledUpdates(t *testing.T) {
	h := newHarness(t, nil)
	h.fc.bind("alice", "alpha")
	h.srv.InjectText(h.bot, aliceUser, "x")
	h.fc.waitMessages(t, 1)
	// The update was handed on; the poll that would confirm it may not
	// have been made. Stopping confirms it.
	h.stop()
	if n := h.srv.Unconfirmed(h.bot); n != 0 {
		t.Errorf("%d updates unconfirmed after stop; want 0", n)
	}
}
