package openai_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"choir/internal/openai"
	"choir/testkit/openaitest"
)

func contains(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// now is the injected clock for Retry-After dates; HTTP dates have whole
// seconds.
var now = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func TestChatErrorKinds(t *testing.T) {
	tests := []struct {
		name       string
		step       *openaitest.Step
		timeout    time.Duration
		kind       openai.Kind
		status     int
		retryAfter time.Duration
		mentions   []string
	}{
		{"429 with seconds", openaitest.Chat().ReplyRateLimited("2"), 0,
			openai.KindRateLimited, 429, 2 * time.Second, []string{"rate_limit_exceeded", "retry after 2s"}},
		{"429 with an HTTP date", openaitest.Chat().ReplyRateLimited(now.Add(7 * time.Second).Format(http.TimeFormat)), 0,
			openai.KindRateLimited, 429, 7 * time.Second, nil},
		{"429 without Retry-After", openaitest.Chat().ReplyRateLimited(""), 0,
			openai.KindRateLimited, 429, 0, nil},
		{"500", openaitest.Chat().ReplyError(500, "server_error", "", "The server had an error while processing your request."), 0,
			openai.KindServerError, 500, 0, []string{"server_error", "The server had an error"}},
		{"503 from a proxy, HTML", openaitest.Chat().ReplyRaw(503, "<html><body>Service Unavailable "+testKey+"</body></html>"), 0,
			openai.KindServerError, 503, 0, []string{"Service Unavailable"}},
		{"timeout", openaitest.Chat().Hang(), 50 * time.Millisecond,
			openai.KindTimeout, 0, 0, []string{"per-call timeout"}},
		{"200 not JSON", openaitest.Chat().ReplyRaw(200, `{"id":"x","choices":[{"message":`), 0,
			openai.KindMalformed, 200, 0, []string{"not a chat completion"}},
		{"200 with no choices", openaitest.Chat().ReplyRaw(200, `{"id":"x","object":"chat.completion","choices":[]}`), 0,
			openai.KindMalformed, 200, 0, []string{"no choices"}},
		{"200 empty", openaitest.Chat().ReplyRaw(200, ""), 0,
			openai.KindMalformed, 200, 0, nil},
		{"content_filter finish", openaitest.Chat().ReplyContentFilter("I can"), 0,
			openai.KindContentFilter, 200, 0, []string{"content_filter"}},
		{"content filter error (Azure shape)", openaitest.Chat().ReplyError(400, "invalid_request_error", "content_filter", "The response was filtered due to the prompt triggering the content management policy."), 0,
			openai.KindContentFilter, 400, 0, nil},
		{"moderation error (OpenRouter shape)", openaitest.Chat().ReplyRaw(403, `{"error":{"code":403,"message":"openai/gpt-4o requires moderation on OpenRouter. Your input was flagged for \"harassment\".","metadata":{"reasons":["harassment"],"flagged_input":"..."}}}`), 0,
			openai.KindContentFilter, 403, 0, []string{"flagged"}},
		{"401 echoing the key", openaitest.Chat().ReplyError(401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided: "+testKey+"."), 0,
			openai.KindAuth, 401, 0, []string{"invalid_api_key", "[redacted]", "check the API key"}},
		{"400 context length", openaitest.Chat().ReplyError(400, "invalid_request_error", "context_length_exceeded", "This model's maximum context length is 8192 tokens."), 0,
			openai.KindBadRequest, 400, 0, []string{"context_length_exceeded"}},
		{"400 flat (older vLLM)", openaitest.Chat().ReplyRaw(400, `{"object":"error","message":"This model's maximum context length is 2048 tokens.","type":"BadRequestError","param":null,"code":400}`), 0,
			openai.KindBadRequest, 400, 0, []string{"BadRequestError, 400", "2048 tokens"}},
		{"error inside a 200 (OpenRouter)", openaitest.Chat().ReplyRaw(200, `{"error":{"code":502,"message":"Provider returned error"}}`), 0,
			openai.KindServerError, 200, 0, []string{"Provider returned error"}},
		{"finish_reason error (OpenRouter)", openaitest.Chat().ReplyRaw(200, `{"id":"x","choices":[{"finish_reason":"error","message":{"role":"assistant","content":""},"error":{"code":502,"message":"upstream died"}}]}`), 0,
			openai.KindServerError, 200, 0, []string{"upstream died"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openaitest.New(t)
			c := newClient(t, s, func(c *openai.Config) {
				c.Timeout = tt.timeout
				c.Now = func() time.Time { return now }
			})
			s.Expect(tt.step)

			resp, err := c.Chat(t.Context(), userAsks("x"))

			e, ok := errors.AsType[*openai.APIError](err)
			if !ok {
				t.Fatalf("Chat = %+v, %v; want an *APIError", resp, err)
			}
			if e.Kind != tt.kind || e.Status != tt.status || e.RetryAfter != tt.retryAfter {
				t.Errorf("Chat error = %s %d %v; want %s %d %v\n%v", e.Kind, e.Status, e.RetryAfter, tt.kind, tt.status, tt.retryAfter, err)
			}
			if openai.KindOf(err) != tt.kind {
				t.Errorf("KindOf = %s; want %s", openai.KindOf(err), tt.kind)
			}
			msg := err.Error()
			if !contains(msg, "/v1/chat/completions", `model "test/model"`, tt.kind.String()) || !contains(msg, tt.mentions...) {
				t.Errorf("Error() = %q; want the path, the model, %q and %q", msg, tt.kind, tt.mentions)
			}
			for _, text := range []string{msg, fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
				if strings.Contains(text, testKey) {
					t.Errorf("the API key appears in %q", text)
				}
			}
			if tt.kind == openai.KindTimeout && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("errors.Is(%v, context.DeadlineExceeded) = false; want true", err)
			}
		})
	}
}

func TestChatCallerContext(t *testing.T) {
	t.Run("cancel", func(t *testing.T) {
		s := openaitest.New(t)
		c := newClient(t, s)
		ctx, cancel := context.WithCancel(t.Context())
		s.Expect(openaitest.Chat().Check(func(testing.TB, *openaitest.Request) { cancel() }).Hang())
		_, err := c.Chat(ctx, userAsks("x"))
		if openai.KindOf(err) != openai.KindCanceled || !errors.Is(err, context.Canceled) {
			t.Errorf("Chat = %v; want KindCanceled wrapping context.Canceled", err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		s := openaitest.New(t)
		c := newClient(t, s)
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		s.Expect(openaitest.Chat().Hang())
		_, err := c.Chat(ctx, userAsks("x"))
		if openai.KindOf(err) != openai.KindTimeout || !strings.Contains(err.Error(), "caller's deadline") {
			t.Errorf("Chat = %v; want KindTimeout naming the caller's deadline", err)
		}
	})
}

func TestChatNetworkError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	c, err := openai.New(openai.Config{Endpoint: "http://" + addr + "/v1", APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Chat(t.Context(), userAsks("x"))
	if openai.KindOf(err) != openai.KindNetwork || !contains(err.Error(), addr+"/v1/chat/completions", "reachable") {
		t.Errorf("Chat = %v; want KindNetwork naming %s", err, addr)
	}
}

func TestKeyNeverPrinted(t *testing.T) {
	c, err := openai.New(openai.Config{Endpoint: "https://openrouter.ai/api/v1", APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", *c)} {
		if strings.Contains(text, testKey) {
			t.Errorf("printing the client shows the key: %s", text)
		}
	}
	_, err = openai.New(openai.Config{Endpoint: "ftp://user:" + testKey + "@host/v1"})
	if err == nil || strings.Contains(err.Error(), testKey) {
		t.Errorf("New with a bad endpoint holding a password = %v; want an error without the password", err)
	}
}

func TestNewRejectsEndpoints(t *testing.T) {
	for _, endpoint := range []string{"", "openrouter.ai/api/v1", "ftp://host/v1", "http://", "http://host:port:x/v1"} {
		if _, err := openai.New(openai.Config{Endpoint: endpoint}); err == nil {
			t.Errorf("New(%q) = nil error; want one", endpoint)
		}
	}
}
