package telegram_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"choir/internal/telegram"
	"choir/testkit/telegramtest"
)

func TestGetUpdatesOffsetConfirms(t *testing.T) {
	s, bot, c := newBot(t)
	for _, text := range []string{"one", "two", "/status"} {
		s.InjectText(bot, user, text)
	}
	ups := updates(t, c, 0)
	if len(ups) != 3 {
		t.Fatalf("GetUpdates(0) = %d updates; want 3", len(ups))
	}
	for i, want := range []string{"one", "two", "/status"} {
		m := ups[i].Message
		if m == nil || m.Text != want || m.From == nil || m.From.ID != user || m.Chat.ID != user || m.Chat.Type != telegram.ChatPrivate {
			t.Errorf("update %d = %+v; want %q from user %d in their private chat", i, ups[i], want, user)
		}
	}
	if e := ups[2].Message.Entities; len(e) != 1 || e[0].Type != "bot_command" || e[0].Length != len("/status") {
		t.Errorf("entities of /status = %+v; want one bot_command", e)
	}

	// Asking from the second confirms the first: it is not answered again.
	ups = updates(t, c, ups[1].UpdateID)
	if len(ups) != 2 || ups[0].Message.Text != "two" {
		t.Fatalf("GetUpdates(second id) = %+v; want two and /status", ups)
	}
	ups = updates(t, c, ups[1].UpdateID+1)
	if len(ups) != 0 || s.Unconfirmed(bot) != 0 {
		t.Errorf("after confirming all: %d updates, %d unconfirmed; want none", len(ups), s.Unconfirmed(bot))
	}
}

// TestLongPollWakesOnUpdate parks a long poll of 30 s and answers it with
// an update: it returns with the update, not at its timeout.
func TestLongPollWakesOnUpdate(t *testing.T) {
	s, bot, c := newBot(t)
	type result struct {
		ups []telegram.Update
		err error
	}
	done := make(chan result, 1)
	go func() {
		ups, err := c.GetUpdates(t.Context(), 0, 30*time.Second, []string{telegram.UpdateMessage, telegram.UpdateCallbackQuery})
		done <- result{ups, err}
	}()
	s.WaitPolling(t, bot)
	s.InjectText(bot, user, "wake up")
	r := <-done
	if r.err != nil || len(r.ups) != 1 || r.ups[0].Message.Text != "wake up" {
		t.Fatalf("GetUpdates = %+v, %v; want the injected message", r.ups, r.err)
	}
}

func TestLongPollTimesOutEmpty(t *testing.T) {
	s, _, c := newBot(t)
	s.SetLongPollSecond(time.Millisecond)
	ups, err := c.GetUpdates(t.Context(), 0, time.Second, nil)
	if err != nil || len(ups) != 0 {
		t.Fatalf("GetUpdates on an idle bot = %+v, %v; want no updates, no error", ups, err)
	}
}

// TestAllowedUpdatesFilter asks for callback queries only: a text sent
// after that never becomes an update.
func TestAllowedUpdatesFilter(t *testing.T) {
	s, bot, c := newBot(t)
	if _, err := c.GetUpdates(t.Context(), 0, 0, []string{telegram.UpdateCallbackQuery}); err != nil {
		t.Fatal(err)
	}
	s.InjectText(bot, user, "ignored")
	if ups := updates(t, c, 0); len(ups) != 0 {
		t.Errorf("updates = %+v; want none with only callback_query allowed", ups)
	}
	if _, err := c.GetUpdates(t.Context(), 0, 0, []string{}); err != nil { // back to the default set
		t.Fatal(err)
	}
	s.InjectText(bot, user, "seen")
	if ups := updates(t, c, 0); len(ups) != 1 {
		t.Errorf("updates = %+v; want the message with the default set", ups)
	}
}

// TestSecondPollerConflicts runs two pollers on one token, as two choird
// would: the newer poll ends the older with 409, as the real API does.
func TestSecondPollerConflicts(t *testing.T) {
	s, bot, first := newBot(t)
	second, err := telegram.New(s.URL(), token)
	if err != nil {
		t.Fatal(err)
	}
	firstErr := make(chan error, 1)
	go func() {
		_, err := first.GetUpdates(t.Context(), 0, 30*time.Second, nil)
		firstErr <- err
	}()
	s.WaitPolling(t, bot)
	secondDone := make(chan []telegram.Update, 1)
	go func() {
		ups, err := second.GetUpdates(t.Context(), 0, 30*time.Second, nil)
		if err != nil {
			t.Errorf("second poller: %v", err)
		}
		secondDone <- ups
	}()
	err = <-firstErr
	if !telegram.IsConflict(err) {
		t.Fatalf("first poller = %v; want 409 Conflict", err)
	}
	s.WaitPolling(t, bot)
	s.InjectText(bot, user, "to the survivor")
	if ups := <-secondDone; len(ups) != 1 {
		t.Errorf("second poller got %+v; want the message", ups)
	}
}

// TestHungPollEndsAtDeadline: a poll the server never answers ends at the
// poll timeout plus the request timeout, with DeadlineExceeded.
func TestHungPollEndsAtDeadline(t *testing.T) {
	s, bot, c := newBot(t, telegram.WithRequestTimeout(20*time.Millisecond))
	s.FailNext(bot, "getUpdates", 1, telegramtest.Hang())
	_, err := c.GetUpdates(t.Context(), 0, 0, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("GetUpdates against a hung server = %v; want DeadlineExceeded", err)
	}
	noToken(t, err)
}

func TestGetUpdatesRefusesShortHTTPTimeout(t *testing.T) {
	s, bot, c := newBot(t, telegram.WithHTTPClient(&http.Client{Timeout: 10 * time.Second}))
	s.SetLongPollSecond(time.Millisecond)
	if _, err := c.GetUpdates(t.Context(), 0, 30*time.Second, nil); err == nil {
		t.Fatal("GetUpdates(timeout 30s) with a 10s HTTP client timeout = nil; want an error")
	}
	if n := s.CallCount(bot, "getUpdates"); n != 0 {
		t.Errorf("%d getUpdates sent; want none", n)
	}
	if _, err := c.GetUpdates(t.Context(), 0, 5*time.Second, nil); err != nil {
		t.Errorf("GetUpdates(timeout 5s) with a 10s HTTP client timeout = %v; want it allowed", err)
	}
}
