package telegram_test

import (
	"errors"
	"strings"
	"testing"

	"choir/internal/telegram"
	"choir/testkit/telegramtest"
)

// token is the test bot's token; no error or printed value may contain it.
const token = "123456:TEST-s3cret_Token-do-not-print"

// user is the DM partner in most tests: a private chat's id is the user's.
const user int64 = 5550001

// newBot starts a fake with one bot and a client for it.
func newBot(t testing.TB, opts ...telegram.Option) (*telegramtest.Server, telegramtest.BotID, *telegram.Client) {
	t.Helper()
	s := telegramtest.New(t)
	bot := s.AddBot(token, "choir_test_bot")
	c, err := telegram.New(s.URL(), token, opts...)
	if err != nil {
		t.Fatalf("New(%s, token) = %v", s.URL(), err)
	}
	return s, bot, c
}

// apiError asserts err is an *APIError with code and returns it.
func apiError(t *testing.T, err error, code int) *telegram.APIError {
	t.Helper()
	e, ok := errors.AsType[*telegram.APIError](err)
	if !ok {
		t.Fatalf("err = %v (%T); want an *APIError with code %d", err, err, code)
	}
	if e.Code != code {
		t.Fatalf("APIError.Code = %d (%v); want %d", e.Code, e, code)
	}
	noToken(t, err)
	return e
}

// noToken fails the test if err's text carries the token.
func noToken(t *testing.T, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), token) {
		t.Fatalf("error text contains the bot token: %v", err)
	}
	if err != nil && strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("error text contains part of the bot token: %v", err)
	}
}

// updates short-polls once and fails the test on an error.
func updates(t *testing.T, c *telegram.Client, offset int64) []telegram.Update {
	t.Helper()
	ups, err := c.GetUpdates(t.Context(), offset, 0, nil)
	if err != nil {
		t.Fatalf("GetUpdates(%d) = %v", offset, err)
	}
	return ups
}
