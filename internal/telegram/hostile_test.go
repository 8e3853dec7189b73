package telegram_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"choir/internal/telegram"
)

// rawBot is a Bot API server that answers every getUpdates with body.
func rawBot(t *testing.T, body string) *telegram.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/getUpdates") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	c, err := telegram.New(srv.URL, token)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func textUpdate(id int, text string) string {
	return `{"update_id":` + itoa(id) + `,"message":{"message_id":1,"date":1,"chat":{"id":5550001,"type":"private"},"from":{"id":5550001,"is_bot":false,"first_name":"A"},"text":"` + text + `"}}`
}

func itoa(n int) string {
	s := ""
	for {
		s = string(rune('0'+n%10)) + s
		n /= 10
		if n == 0 {
			return s
		}
	}
}

func batch(updates ...string) string {
	return `{"ok":true,"result":[` + strings.Join(updates, ",") + `]}`
}

// TestHostileTelegramUpdates: an update that is too deep, not UTF-8 or not
// an Update comes back refused, with its id so the poller moves past it;
// the good updates of the same batch arrive intact, in order. An answer no
// update can be read from is an error, returned quickly, never a crash.
func TestHostileTelegramUpdates(t *testing.T) {
	deepEntity := `{"update_id":11,"message":{"message_id":1,"date":1,"chat":{"id":1,"type":"private"},"text":"x","entities":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}}`
	for _, tc := range []struct {
		name string
		bad  string // the hostile update, put between two good ones
		want string // in Refused
	}{
		{"invalid UTF-8 in a message's text", textUpdate(11, "hi \xff there"), "invalid UTF-8 (byte 0xff)"},
		{"overlong UTF-8 in a message's text", textUpdate(11, "\xc0\xaf"), "invalid UTF-8"},
		{"an unpaired surrogate escape in the text", textUpdate(11, `pay \ud800 now`), `\ud800 is the first half of a UTF-16 surrogate pair`},
		{"an update nested past the limit", deepEntity, "JSON nested deeper than the limit of 64 levels"},
		{"a callback with invalid UTF-8 data", `{"update_id":11,"callback_query":{"id":"q","from":{"id":1,"is_bot":false,"first_name":"A"},"data":"ap` + "\xfe" + `prove"}}`, "invalid UTF-8"},
		{"a message whose date is text", `{"update_id":11,"message":{"message_id":1,"date":"today","chat":{"id":1,"type":"private"}}}`, "does not fit the Bot API's Update"},
		{"a chat id beyond 64 bits", `{"update_id":11,"message":{"message_id":1,"date":1,"chat":{"id":99999999999999999999,"type":"private"}}}`, "does not fit the Bot API's Update"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := rawBot(t, batch(textUpdate(10, "first é"), tc.bad, textUpdate(12, "last 🎵")))
			ups, err := c.GetUpdates(t.Context(), 0, 0, nil)
			if err != nil {
				t.Fatalf("GetUpdates = %v; want the batch with the bad update refused", err)
			}
			if len(ups) != 3 {
				t.Fatalf("GetUpdates = %d updates; want 3 (none lost)", len(ups))
			}
			if ups[0].UpdateID != 10 || ups[0].Message == nil || ups[0].Message.Text != "first é" || ups[0].Refused != "" {
				t.Errorf("update 10 = %+v; want it intact", ups[0])
			}
			if ups[2].UpdateID != 12 || ups[2].Message == nil || ups[2].Message.Text != "last 🎵" || ups[2].Refused != "" {
				t.Errorf("update 12 = %+v; want it intact", ups[2])
			}
			bad := ups[1]
			if bad.UpdateID != 11 || bad.Message != nil || bad.CallbackQuery != nil || bad.EditedMessage != nil {
				t.Errorf("refused update = %+v; want only its id, 11", bad)
			}
			if !strings.Contains(bad.Refused, tc.want) {
				t.Errorf("Refused = %q; want %q", bad.Refused, tc.want)
			}
		})
	}

	for _, tc := range []struct {
		name string
		body string
		want string
	}{
		{"an answer nested two million levels", `{"ok":true,"result":` + strings.Repeat("[", 2_000_000), ""},
		{"an update without update_id", batch(`{"message":{"text":"` + "\xff" + `"}}`), "update 1 of 1: no readable update_id"},
		{"an update whose id is text", batch(`{"update_id":"7","message":{}}`), "no readable update_id"},
		{"an answer over 16 MiB", batch(textUpdate(1, strings.Repeat("a", 16<<20))), "answer exceeds 16777216 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := rawBot(t, tc.body)
			done := make(chan error, 1)
			go func() { _, err := c.GetUpdates(t.Context(), 0, 0, nil); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				t.Fatal("GetUpdates did not return within a minute")
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("GetUpdates = %v; want an error containing %q", err, tc.want)
			}
			noToken(t, err)
			if _, ok := errors.AsType[*telegram.APIError](err); ok && tc.want != "" {
				t.Errorf("GetUpdates = %T; a refused update is not the API's error", err)
			}
		})
	}
}
