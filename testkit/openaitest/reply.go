package openaitest

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// created is the fixed "created" time of every answer, so answers are
// byte-for-byte repeatable.
const created = 1700000000

// ReplyText answers with an assistant message of text, finish_reason "stop".
func (st *Step) ReplyText(text string) *Step {
	st.what = fmt.Sprintf("text %.40q", text)
	st.respond = func(st *Step, w http.ResponseWriter, _ *http.Request, req *Request, _ <-chan struct{}) {
		writeChat(w, st, req, map[string]any{"role": "assistant", "content": text, "refusal": nil}, "stop")
	}
	return st
}

// ReplyToolCalls answers with the calls, content null and finish_reason
// "tool_calls". Arguments are sent as given, valid JSON or not.
func (st *Step) ReplyToolCalls(calls ...ToolCall) *Step {
	st.what = fmt.Sprintf("%d tool calls", len(calls))
	st.respond = func(st *Step, w http.ResponseWriter, _ *http.Request, req *Request, _ <-chan struct{}) {
		wire := []any{}
		for _, c := range calls {
			wire = append(wire, map[string]any{
				"id":       c.ID,
				"type":     "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments},
			})
		}
		writeChat(w, st, req, map[string]any{"role": "assistant", "content": nil, "tool_calls": wire}, "tool_calls")
	}
	return st
}

// ReplyContentFilter answers 200 with finish_reason "content_filter" and the
// partial text produced before the filter stopped it.
func (st *Step) ReplyContentFilter(partial string) *Step {
	st.what = "a content_filter stop"
	st.respond = func(st *Step, w http.ResponseWriter, _ *http.Request, req *Request, _ <-chan struct{}) {
		writeChat(w, st, req, map[string]any{"role": "assistant", "content": partial}, "content_filter")
	}
	return st
}

// ReplyError answers status with an OpenAI error body
// {"error":{"message","type","param":null,"code"}}; an empty code is sent
// as null.
func (st *Step) ReplyError(status int, errType, code, message string) *Step {
	st.what = fmt.Sprintf("HTTP %d %s", status, code)
	st.respond = func(_ *Step, w http.ResponseWriter, _ *http.Request, _ *Request, _ <-chan struct{}) {
		writeError(w, status, errType, code, message)
	}
	return st
}

// ReplyRateLimited answers 429 as OpenAI does, with Retry-After set to
// retryAfter (delay-seconds such as "2", or an HTTP date); "" sends no
// Retry-After.
func (st *Step) ReplyRateLimited(retryAfter string) *Step {
	st.what = fmt.Sprintf("HTTP 429, Retry-After %q", retryAfter)
	st.respond = func(_ *Step, w http.ResponseWriter, _ *http.Request, _ *Request, _ <-chan struct{}) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		writeError(w, http.StatusTooManyRequests, "requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again later.")
	}
	return st
}

// ReplyRaw answers status with body as is, labelled application/json
// whatever it holds: a malformed answer, an HTML error page, an empty body.
func (st *Step) ReplyRaw(status int, body string) *Step {
	st.what = fmt.Sprintf("raw HTTP %d %.40q", status, body)
	st.respond = func(_ *Step, w http.ResponseWriter, _ *http.Request, _ *Request, _ <-chan struct{}) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
	return st
}

// Embedding is one vector of an embeddings answer, at Index.
type Embedding struct {
	Index  int
	Vector []float32
}

// ReplyEmbeddings answers with the vectors, listed in the order given (so a
// test can list them out of index order).
func (st *Step) ReplyEmbeddings(items ...Embedding) *Step {
	st.what = fmt.Sprintf("%d embeddings", len(items))
	st.respond = func(st *Step, w http.ResponseWriter, _ *http.Request, req *Request, _ <-chan struct{}) {
		writeEmbeddings(w, st, req, items)
	}
	return st
}

// Hang answers nothing until the request ends (the client gives up or
// cancels) or the test ends: for timeouts and cancellation.
func (st *Step) Hang() *Step {
	st.what = "nothing (hangs)"
	st.respond = func(_ *Step, _ http.ResponseWriter, r *http.Request, _ *Request, done <-chan struct{}) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}
	return st
}

// ReplyFunc answers with f, for anything the other replies do not cover.
func (st *Step) ReplyFunc(f func(w http.ResponseWriter, req *Request)) *Step {
	st.what = "a custom answer"
	st.respond = func(_ *Step, w http.ResponseWriter, _ *http.Request, req *Request, _ <-chan struct{}) {
		f(w, req)
	}
	return st
}

// WithUsage sets the usage reported by a chat or embeddings answer. Without
// it, usage is a rough count of a token per four bytes.
func (st *Step) WithUsage(prompt, completion int) *Step {
	st.usage = &usage{prompt, completion}
	return st
}

func (st *Step) reply(w http.ResponseWriter, r *http.Request, req *Request, done <-chan struct{}) {
	st.respond(st, w, r, req, done)
}

func (st *Step) usageFor(req *Request, completionBytes int) map[string]any {
	u := usage{}
	if st.usage != nil {
		u = *st.usage
	} else {
		promptBytes := 0
		for _, m := range req.Messages() {
			promptBytes += len(m.Content)
		}
		for _, in := range req.Inputs() {
			promptBytes += len(in)
		}
		u = usage{prompt: promptBytes/4 + 1, completion: completionBytes / 4}
		if req.cached >= 0 {
			u.prompt = req.promptSerial/4 + 1
		}
	}
	out := map[string]any{"prompt_tokens": u.prompt, "completion_tokens": u.completion, "total_tokens": u.prompt + u.completion}
	if req.cached >= 0 {
		out["prompt_tokens_details"] = map[string]any{"cached_tokens": min(req.cached, u.prompt)}
	}
	return out
}

func writeChat(w http.ResponseWriter, st *Step, req *Request, message map[string]any, finish string) {
	out, _ := json.Marshal(message)
	u := st.usageFor(req, len(out))
	writeJSON(w, http.StatusOK, map[string]any{
		"id":      fmt.Sprintf("chatcmpl-openaitest-%d", req.Number),
		"object":  "chat.completion",
		"created": created,
		"model":   req.Model(),
		"choices": []any{map[string]any{
			"index":         0,
			"message":       message,
			"logprobs":      nil,
			"finish_reason": finish,
		}},
		"usage": u,
	})
}

func writeEmbeddings(w http.ResponseWriter, st *Step, req *Request, items []Embedding) {
	data := []any{}
	for _, it := range items {
		data = append(data, map[string]any{"object": "embedding", "index": it.Index, "embedding": it.Vector})
	}
	u := st.usageFor(req, 0)
	delete(u, "completion_tokens")
	u["total_tokens"] = u["prompt_tokens"]
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "model": req.Model(), "usage": u})
}

func writeError(w http.ResponseWriter, status int, errType, code, message string) {
	var c any
	if code != "" {
		c = code
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": message, "type": errType, "param": nil, "code": c}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
