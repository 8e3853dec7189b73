package openai_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"choir/internal/openai"
)

// fuzzKey is the API key of the fuzz target and the tests; no error may
// quote it, whole or in part.
const fuzzKey = "sk-fuzz-v1-0123456789abcdef-FUZZSECRET"

// otherKey has fuzzKey's length and differs from it in every byte after
// "sk-".
const otherKey = "sk-mBGG_C8_789abcdefghijklm_M166ZLJYL0"

var keyFragments = []string{"0123456789abcdef", "FUZZSECRET", "sk-fuzz-v1-01"}

// keyPlaceholder stands, in a fuzzed answer, for the key of the client that
// asked: a proxy echoing the request's Authorization header.
const keyPlaceholder = "$KEY$"

// answering is an http.RoundTripper that answers every request with one
// status and body, and keeps the last request body it was sent.
type answering struct {
	status int
	body   []byte
	sent   []byte
}

func (a *answering) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		a.sent, _ = io.ReadAll(r.Body)
		r.Body.Close()
	}
	return &http.Response{
		StatusCode: a.status,
		Status:     http.StatusText(a.status),
		Header:     http.Header{"Content-Type": {"application/json"}},
		Body:       io.NopCloser(bytes.NewReader(a.body)),
		Request:    r,
	}, nil
}

func fuzzClient(t *testing.T, a *answering) *openai.Client {
	t.Helper()
	return keyClient(t, fuzzKey, a)
}

// keyClient is a client with key whose server answers as a does, with
// keyPlaceholder in the answer replaced by key.
func keyClient(t *testing.T, key string, a *answering) *openai.Client {
	t.Helper()
	a.body = bytes.ReplaceAll(a.body, []byte(keyPlaceholder), []byte(key))
	c, err := openai.New(openai.Config{Endpoint: "https://llm.example/v1", APIKey: key, HTTPClient: &http.Client{Transport: a}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// wireAnswer is an independent reading of the answer's tool calls.
type wireAnswer struct {
	Choices []struct {
		Message struct {
			ToolCalls []struct {
				Function struct {
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
	} `json:"choices"`
}

// FuzzChatAnswer feeds arbitrary answers (HTTP status and body) to Chat,
// the decoding of a chat completion, tool calls with arbitrary argument
// strings included. It asserts:
//
//   - an error is an *APIError with a kind and a message, and quotes no part
//     of the API key, whatever the answer echoes: the answer is given to two
//     clients whose keys differ in every byte after "sk-", each answer
//     echoing its client's key where the body says $KEY$, and the two errors
//     must read the same;
//   - every tool call of an accepted answer has a non-empty id distinct from
//     the others (a tool turn names its call by id), its arguments exactly
//     as sent when they came as a JSON string, and JSONArguments gives a
//     JSON object or an error wrapping ErrInvalidArguments;
//   - the assistant turn sent back in the next request carries the same
//     ids, names and arguments.
func FuzzChatAnswer(f *testing.F) {
	f.Fuzz(func(t *testing.T, status uint16, body []byte) {
		if len(body) > 64<<10 {
			return
		}
		req := openai.ChatRequest{Model: "m", Messages: []openai.Message{openai.UserMessage("hi")}}
		code := 200 + int(status)%400
		// A key written out in the body (not echoed) is redacted by the
		// client it belongs to only, which moves where an excerpt ends: the
		// two errors are only comparable without one.
		comparable := !bytes.Contains(body, []byte(fuzzKey)) && !bytes.Contains(body, []byte(otherKey))
		_, other := keyClient(t, otherKey, &answering{status: code, body: body}).Chat(t.Context(), req)
		a := &answering{status: code, body: body}
		c := fuzzClient(t, a)
		body = a.body // with the key echoed
		resp, err := c.Chat(t.Context(), req)
		if (err == nil) != (other == nil) {
			t.Fatalf("the answer decodes for one key and not the other: %v / %v", err, other)
		}
		if err != nil {
			var ae *openai.APIError
			if !errors.As(err, &ae) || ae.Kind == openai.KindUnknown || strings.TrimSpace(ae.Message) == "" {
				t.Fatalf("Chat error %v (%T): want an *APIError with a kind and a message", err, err)
			}
			if strings.Contains(err.Error(), fuzzKey) {
				t.Fatalf("error quotes the API key: %v", err)
			}
			if comparable && err.Error() != other.Error() {
				t.Fatalf("the error depends on the key, so it quotes part of it:\n%v\n%v", err, other)
			}
			return
		}
		var w wireAnswer
		if err := json.Unmarshal(body, &w); err != nil || len(w.Choices) == 0 {
			t.Fatalf("Chat accepted %q, which is not a chat completion (%v)", body, err)
		}
		wire := w.Choices[0].Message.ToolCalls
		if len(resp.ToolCalls) != len(wire) {
			t.Fatalf("answer has %d tool calls; Chat returned %d", len(wire), len(resp.ToolCalls))
		}
		ids := map[string]bool{}
		for i, tc := range resp.ToolCalls {
			if tc.ID == "" || ids[tc.ID] {
				t.Fatalf("tool call %d has id %q, empty or already used by another call: %+v", i, tc.ID, resp.ToolCalls)
			}
			ids[tc.ID] = true
			var s string
			if json.Unmarshal(wire[i].Function.Arguments, &s) == nil && tc.Arguments != s {
				t.Fatalf("tool call %d arguments = %q; the answer sent %q", i, tc.Arguments, s)
			}
			args, err := tc.JSONArguments()
			if err != nil {
				if !errors.Is(err, openai.ErrInvalidArguments) {
					t.Fatalf("JSONArguments(%q) = %v; want an error wrapping ErrInvalidArguments", tc.Arguments, err)
				}
				continue
			}
			var obj map[string]json.RawMessage
			if json.Unmarshal(args, &obj) != nil || obj == nil {
				t.Fatalf("JSONArguments(%q) = %s, not a JSON object", tc.Arguments, args)
			}
		}
		sendBack(t, c, a, resp)
	})
}

// sendBack sends the answer's assistant turn and a tool turn per call in the
// next request and checks the request carries the calls unchanged.
func sendBack(t *testing.T, c *openai.Client, a *answering, resp *openai.ChatResponse) {
	t.Helper()
	msgs := []openai.Message{openai.UserMessage("hi"), resp.Message()}
	for _, tc := range resp.ToolCalls {
		if !openai.ValidWireName(tc.Name) || !utf8.ValidString(tc.Arguments) {
			return // refused before sending, or coerced to UTF-8 by any JSON encoder
		}
		msgs = append(msgs, openai.ToolMessage(tc.ID, `{"status":"success"}`))
	}
	a.status, a.body = 200, []byte(`{"choices":[{"message":{"content":"ok"}}]}`)
	if _, err := c.Chat(t.Context(), openai.ChatRequest{Model: "m", Messages: msgs}); err != nil {
		t.Fatalf("sending back the answer's own turn: %v", err)
	}
	var req struct {
		Messages []struct {
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(a.sent, &req); err != nil || len(req.Messages) != len(msgs) {
		t.Fatalf("request %s: %v", a.sent, err)
	}
	sent := req.Messages[1].ToolCalls
	if len(sent) != len(resp.ToolCalls) {
		t.Fatalf("sent %d tool calls back; the answer had %d", len(sent), len(resp.ToolCalls))
	}
	for i, tc := range resp.ToolCalls {
		if s := sent[i]; s.ID != tc.ID || s.Function.Name != tc.Name || s.Function.Arguments != tc.Arguments ||
			req.Messages[2+i].ToolCallID != tc.ID {
			t.Fatalf("tool call %d sent back as %+v; want %+v", i, s, tc)
		}
	}
}

// TestToolCallIDsAreDistinct is what FuzzChatAnswer found: the id made up
// for a call without one ("call_0") could be the id the provider gave
// another call of the same reply, and a provider's repeated id was kept, so
// two tool turns named the same call.
func TestToolCallIDsAreDistinct(t *testing.T) {
	tests := []struct {
		calls string
		want  []string
	}{
		{`[{"function":{"name":"a"}},{"id":"call_0","function":{"name":"b"}}]`, []string{"call_0_1", "call_0"}},
		{`[{"id":"x","function":{"name":"a"}},{"id":"x","function":{"name":"b"}}]`, []string{"x", "call_1"}},
		{`[{"id":"call_1","function":{"name":"a"}},{"id":"call_1","function":{"name":"b"}},{"id":"call_1_1"}]`, []string{"call_1", "call_1_2", "call_1_1"}},
		{`[{"function":{"name":"a"}},{"function":{"name":"b"}}]`, []string{"call_0", "call_1"}},
	}
	for _, tc := range tests {
		a := &answering{status: 200, body: []byte(`{"choices":[{"message":{"tool_calls":` + tc.calls + `}}]}`)}
		resp, err := fuzzClient(t, a).Chat(t.Context(), openai.ChatRequest{Model: "m", Messages: []openai.Message{openai.UserMessage("hi")}})
		if err != nil {
			t.Fatalf("Chat(%s) = %v", tc.calls, err)
		}
		var got []string
		for _, c := range resp.ToolCalls {
			got = append(got, c.ID)
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("tool_calls %s: ids = %q; want %q", tc.calls, got, tc.want)
		}
	}
}

// TestEchoedKeyCutByExcerptIsRedacted is what FuzzChatAnswer found: an
// answer that is not JSON is quoted up to 160 characters, and the key was
// redacted after the cut, so a page echoing the request's Authorization
// header across the cut leaked the key's first part.
func TestEchoedKeyCutByExcerptIsRedacted(t *testing.T) {
	page := "<html>" + strings.Repeat("x", 100) + " Authorization: Bearer " + fuzzKey + " </html>"
	for _, status := range []int{200, 502} {
		_, err := fuzzClient(t, &answering{status: status, body: []byte(page)}).Chat(t.Context(), openai.ChatRequest{Model: "m", Messages: []openai.Message{openai.UserMessage("hi")}})
		if err == nil {
			t.Fatalf("HTTP %d: Chat accepted an HTML page", status)
		}
		for _, frag := range keyFragments {
			if strings.Contains(err.Error(), frag) {
				t.Errorf("HTTP %d: error quotes part of the key (%q): %v", status, frag, err)
			}
		}
		if !strings.Contains(err.Error(), "[redacted]") {
			t.Errorf("HTTP %d: error %v; want the key shown as [redacted]", status, err)
		}
	}
}

// TestErrorObjectWithoutMessageIsQuoted is what FuzzChatAnswer found: a
// non-2xx answer whose error object had a type or a code but no message gave
// an *APIError with an empty Message; it now quotes the answer.
func TestErrorObjectWithoutMessageIsQuoted(t *testing.T) {
	body := `{"error":{"type":"overloaded","code":"x9"}}`
	_, err := fuzzClient(t, &answering{status: 429, body: []byte(body)}).Chat(t.Context(), openai.ChatRequest{Model: "m", Messages: []openai.Message{openai.UserMessage("hi")}})
	ae, ok := errors.AsType[*openai.APIError](err)
	if !ok || ae.Kind != openai.KindRateLimited || ae.Type != "overloaded" || ae.Code != "x9" || !strings.HasPrefix(ae.Message, "body ") {
		t.Fatalf("Chat on %s = %#v; want a rate-limited error of type overloaded, code x9, quoting the answer", body, err)
	}
}
