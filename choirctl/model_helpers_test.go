package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"choir/testkit/demomodel"
)

// callerModel is the offline demo model with one change, for tests that
// drive a tool through a real agent: a user message that call turns into a
// tool call (its wire name and JSON arguments) is answered with that call,
// and the tool's result with "result: <the result as the model saw it>".
// Everything else (compaction, core jobs, summaries, other turns) goes to
// the demo model.
type callerModel struct {
	demo demomodel.Server
	call func(text string) (tool, args string, ok bool)
}

func (m *callerModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 16<<20))
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if json.Unmarshal(body, &req) == nil && len(req.Messages) > 0 && !offers(req.Tools, "memory_delta") && !offers(req.Tools, "core_finish") {
		last := req.Messages[len(req.Messages)-1]
		var text string
		json.Unmarshal(last.Content, &text)
		switch {
		case last.Role == "user":
			if tool, args, ok := m.call(text); ok {
				writeCompletion(w, req.Model, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
					"id": fmt.Sprintf("call_%d", time.Now().UnixNano()), "type": "function",
					"function": map[string]any{"name": tool, "arguments": args}}}}, "tool_calls")
				return
			}
		case last.Role == "tool":
			writeCompletion(w, req.Model, map[string]any{"role": "assistant", "content": "result: " + text}, "stop")
			return
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	m.demo.ServeHTTP(w, r)
}
