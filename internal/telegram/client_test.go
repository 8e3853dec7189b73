package telegram_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"choir/internal/telegram"
	"choir/testkit/telegramtest"
)

func TestGetMe(t *testing.T) {
	_, _, c := newBot(t)
	me, err := c.GetMe(t.Context())
	if err != nil {
		t.Fatalf("GetMe = %v", err)
	}
	if me.ID != 123456 || !me.IsBot || me.Username != "choir_test_bot" {
		t.Errorf("GetMe = %+v; want bot 123456 @choir_test_bot", me)
	}
	if c.BotID() != "123456" {
		t.Errorf("BotID() = %q; want 123456", c.BotID())
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, tc := range []struct{ name, base, token string }{
		{"empty token", "https://api.telegram.org", ""},
		{"slash in token", "https://api.telegram.org", "123:abc/../evil"},
		{"space in token", "https://api.telegram.org", "123:abc s3cret"},
		{"ftp base", "ftp://api.telegram.org", token},
		{"no host", "https:///x", token},
		{"query in base", "https://api.telegram.org/?x=1", token},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := telegram.New(tc.base, tc.token)
			if err == nil {
				t.Fatalf("New(%q, %q) = %v, nil; want an error", tc.base, tc.token, c)
			}
			noToken(t, err)
		})
	}
}

func TestPrintedClientHidesToken(t *testing.T) {
	c, err := telegram.New("", token)
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		if got := fmt.Sprintf(format, c); strings.Contains(got, "s3cret") {
			t.Errorf("Sprintf(%q, client) = %q; shows the token", format, got)
		}
	}
	if got := c.String(); !strings.Contains(got, "api.telegram.org") || !strings.Contains(got, "123456") {
		t.Errorf("String() = %q; want the host and bot id", got)
	}
}

// TestTransportErrorsHideToken points a client at a closed port: every
// method's error quotes a URL, which must not carry the token.
func TestTransportErrorsHideToken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c, err := telegram.New("http://"+addr, token)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	calls := map[string]func() error{
		"GetMe": func() error { _, err := c.GetMe(ctx); return err },
		"GetUpdates": func() error {
			_, err := c.GetUpdates(ctx, 0, 0, nil)
			return err
		},
		"SendMessage": func() error { _, err := c.SendMessage(ctx, user, "hi", telegram.MessageOptions{}); return err },
		"SendDocument": func() error {
			_, err := c.SendDocument(ctx, user, "a.txt", strings.NewReader("data"), telegram.MediaOptions{})
			return err
		},
		"Download": func() error {
			_, err := c.Download(ctx, &telegram.File{FileID: "f", FilePath: "documents/file_1.txt"}, &bytes.Buffer{}, 0)
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			err := call()
			if err == nil {
				t.Fatal("call to a closed port succeeded")
			}
			for _, format := range []string{"%v", "%+v", "%#v"} {
				if got := fmt.Sprintf(format, err); strings.Contains(got, "s3cret") {
					t.Errorf("Sprintf(%q, err) = %s; shows the token", format, got)
				}
			}
			ue, ok := errors.AsType[*url.Error](err)
			if !ok {
				t.Fatalf("err = %v; want it to wrap a *url.Error", err)
			}
			if strings.Contains(ue.URL, "s3cret") || !strings.Contains(ue.URL, "<redacted>") {
				t.Errorf("url.Error.URL = %q; want the token redacted", ue.URL)
			}
			if !strings.Contains(err.Error(), "refused") {
				t.Errorf("err = %v; want it to still say the connection was refused", err)
			}
		})
	}
}

// TestCanceledCallKeepsContextError cancels a call the server never
// answers: the error is still errors.Is context.Canceled, token-free.
func TestCanceledCallKeepsContextError(t *testing.T) {
	s, bot, c := newBot(t)
	s.FailNext(bot, "getMe", 1, telegramtest.Hang())
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { _, err := c.GetMe(ctx); errc <- err }()
	s.Wait(t, "getMe in flight", func() bool { return s.InFlight(bot, "getMe") == 1 })
	cancel()
	err := <-errc
	if !errors.Is(err, context.Canceled) {
		t.Errorf("GetMe after cancel = %v; want context.Canceled", err)
	}
	noToken(t, err)
}

func TestAPIErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault *telegramtest.Fault
		text  string
		code  int
		check func(t *testing.T, e *telegram.APIError, err error)
	}{
		{
			name: "400 too long", text: strings.Repeat("a", 4097), code: 400,
			check: func(t *testing.T, e *telegram.APIError, _ error) {
				if e.Description != "Bad Request: message is too long" {
					t.Errorf("Description = %q", e.Description)
				}
			},
		},
		{
			name: "429 retry after", fault: ptr(telegramtest.TooManyRequests(7)), code: 429,
			check: func(t *testing.T, e *telegram.APIError, err error) {
				if !telegram.IsRateLimited(err) || e.RetryAfter.Seconds() != 7 || telegram.RetryAfterOf(err).Seconds() != 7 {
					t.Errorf("IsRateLimited = %v, RetryAfter = %v; want true, 7s", telegram.IsRateLimited(err), e.RetryAfter)
				}
			},
		},
		{
			name: "409 conflict", fault: ptr(telegramtest.Conflict()), code: 409,
			check: func(t *testing.T, _ *telegram.APIError, err error) {
				if !telegram.IsConflict(err) || telegram.IsRateLimited(err) {
					t.Errorf("IsConflict = %v; want true", telegram.IsConflict(err))
				}
			},
		},
		{name: "500 in the envelope", fault: ptr(telegramtest.ServerError(500)), code: 500},
		{
			name: "502 HTML from a proxy", fault: ptr(telegramtest.ProxyError(502)), code: 502,
			check: func(t *testing.T, e *telegram.APIError, _ error) {
				if !e.NotJSON || e.HTTPStatus != 502 || !strings.Contains(e.Description, "HTTP 502") || !strings.Contains(e.Description, "text/html") {
					t.Errorf("APIError = %+v; want NotJSON with the HTTP status and content type", e)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, bot, c := newBot(t)
			if tc.fault != nil {
				s.FailNext(bot, "sendMessage", 1, *tc.fault)
			}
			text := tc.text
			if text == "" {
				text = "hello"
			}
			_, err := c.SendMessage(t.Context(), user, text, telegram.MessageOptions{})
			e := apiError(t, err, tc.code)
			if e.Method != "sendMessage" {
				t.Errorf("Method = %q; want sendMessage", e.Method)
			}
			if tc.check != nil {
				tc.check(t, e, err)
			}
			if got := s.Sent(bot, user); len(got) != 0 {
				t.Errorf("a refused send was recorded: %+v", got)
			}
		})
	}
}

func TestUnknownTokenIsUnauthorized(t *testing.T) {
	s, _, _ := newBot(t)
	c, err := telegram.New(s.URL(), "999:s3cret-unknown")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.GetMe(t.Context())
	e := apiError(t, err, http.StatusUnauthorized)
	if !telegram.IsUnauthorized(err) || e.Description != "Unauthorized" {
		t.Errorf("GetMe with an unknown token = %v; want 401 Unauthorized", err)
	}
}

func ptr[T any](v T) *T { return &v }

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

var errProxy = errors.New("proxy refused")

// TestErrorsQuotingTheURLAreScrubbed: a transport whose error quotes the
// request URL, and a server whose answers echo the path, must not get the
// token into an error.
func TestErrorsQuotingTheURLAreScrubbed(t *testing.T) {
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return nil, fmt.Errorf("%w %s", errProxy, r.URL)
	})}
	c, err := telegram.New("", token, telegram.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.GetMe(t.Context())
	noToken(t, err)
	if !errors.Is(err, errProxy) || !strings.Contains(err.Error(), "proxy refused https://api.telegram.org/bot<redacted>/getMe") {
		t.Errorf("err = %v; want the proxy's error, token redacted, still errors.Is", err)
	}

	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/getMe") {
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprintf(w, "<html>no route to %s</html>", r.URL.Path)
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"ok":false,"error_code":400,"description":"Bad Request: unknown path %s"}`, r.URL.Path)
	}))
	defer echo.Close()
	c, err = telegram.New(echo.URL, token)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.GetMe(t.Context())
	if e := apiError(t, err, http.StatusBadGateway); !e.NotJSON {
		t.Errorf("HTML answer: NotJSON = false")
	}
	_, err = c.SendMessage(t.Context(), user, "x", telegram.MessageOptions{})
	if e := apiError(t, err, http.StatusBadRequest); !strings.Contains(e.Description, "/bot<redacted>/sendMessage") {
		t.Errorf("Description = %q; want the echoed path, redacted", e.Description)
	}
}
