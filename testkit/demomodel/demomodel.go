// Package demomodel is the offline model `make demo` runs when no real
// model is configured: a small deterministic responder that speaks the
// OpenAI chat completions API well enough to show every path of an agent
// (chat, tools, a core job) without a network or a key. It never presents
// itself as a real model: every text it writes starts with "[demo model]".
//
// It reads the last message of each request:
//   - a user message asking to list files calls choir.exec `ls -la`;
//   - "read <path>" calls choir.fs.read;
//   - "note <text>" (or "write a note …") appends to notes.md with
//     choir.fs.write;
//   - "file <name>" writes .choirtmp/send/<name>.txt, which goes to the
//     DM with the reply;
//   - "core <task>" (or "background …") calls choir.core.spawn;
//   - "browse <url>" (or "browse the demo page") reads a page's text with
//     choir.web.browse;
//   - "propose skill <name>" proposes a small skill (choir.propose.skill)
//     for a human to approve; "build skill <name>" runs the built-in
//     skill-builder skill, completing each step and proposing the same
//     skill from its propose step; "build tool <name>" runs tool-builder
//     likewise, proposing the manifest of demo.<name>;
//   - "check mail" calls choir.email.check, "read mail" choir.email.receive
//     (marking what it read seen), "mail <address>: <text>" choir.email.send;
//   - anything else gets a short reply saying what it can do;
//   - after tool results it answers with a one-line account of them.
//
// A core job's request (one that offers a core finish tool) is answered by
// finishing at once with a summary of its task; a compaction request (one
// that offers a memory delta tool) by a small valid delta, and a session
// summary request (one that offers session_summary) by a summary that
// counts the session's events.
package demomodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
)

// Prefix starts every text the demo model writes.
const Prefix = "[demo model] "

// Server answers chat completions.
type Server struct {
	calls atomic.Int64
	// DemoPage is the page "browse the demo page" reads (make demo serves
	// one on the Docker bridge); "" when there is none.
	DemoPage string
}

// ServeHTTP serves POST …/chat/completions and GET …/models.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions"):
		s.chat(w, r)
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models"):
		writeJSON(w, map[string]any{"object": "list", "data": []any{map[string]any{"id": "choir-demo", "object": "model", "owned_by": "choir"}}})
	default:
		w.WriteHeader(http.StatusNotFound)
		writeJSON(w, map[string]any{"error": map[string]any{"message": "the demo model serves only /v1/chat/completions", "type": "invalid_request_error"}})
	}
}

type message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	ToolCalls  json.RawMessage `json:"tool_calls,omitempty"`
}

type request struct {
	Model    string    `json:"model"`
	Messages []message `json:"messages"`
	Tools    []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// call is a tool call the model makes: a wire name and its arguments.
type call struct {
	name string
	args any
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req request
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<20)).Decode(&req); err != nil || len(req.Messages) == 0 {
		w.WriteHeader(http.StatusBadRequest)
		writeJSON(w, map[string]any{"error": map[string]any{"message": "want a JSON chat request with messages", "type": "invalid_request_error"}})
		return
	}
	offered := map[string]string{} // canonical-ish suffix → wire name
	for _, t := range req.Tools {
		offered[t.Function.Name] = t.Function.Name
	}
	takeNote(&req, offered)
	text, calls := decide(req, offered, s.DemoPage)
	s.calls.Add(1)
	msg := map[string]any{"role": "assistant", "content": nil}
	finish := "stop"
	if len(calls) > 0 {
		var tcs []any
		for i, c := range calls {
			args, _ := json.Marshal(c.args)
			tcs = append(tcs, map[string]any{"id": fmt.Sprintf("call_%d_%d", s.calls.Load(), i), "type": "function",
				"function": map[string]any{"name": c.name, "arguments": string(args)}})
		}
		msg["tool_calls"] = tcs
		finish = "tool_calls"
	} else {
		msg["content"] = Prefix + text
	}
	writeJSON(w, map[string]any{
		"id": fmt.Sprintf("demo-%d", s.calls.Load()), "object": "chat.completion", "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
	})
}

var (
	readRE = regexp.MustCompile(`(?i)\bread\s+(\S+)`)
	noteRE = regexp.MustCompile(`(?i)\bnote:?\s+(.+)`)
	coreRE = regexp.MustCompile(`(?i)\b(core|background)\b:?\s*(.*)`)
	fileRE = regexp.MustCompile(`(?i)\bfile:?\s+([A-Za-z0-9_-]+)`)
	mailRE = regexp.MustCompile(`(?i)^\s*(?:e?mail|send mail to)\s+([^\s:]+@[^\s:]+):?\s*(.*)$`)
	// checkMailRE and readMailRE come before readRE: "read mail" is not a file.
	checkMailRE = regexp.MustCompile(`(?i)\b(check|any)\s+(my\s+|new\s+)?e?mails?\b`)
	readMailRE  = regexp.MustCompile(`(?i)\b(read|fetch|show)\s+(my\s+|the\s+|new\s+)?e?mails?\b`)
	browseRE    = regexp.MustCompile(`(?i)^\s*browse\s+(the demo page|demo page|https?://\S+)\s*$`)
	skillRE     = regexp.MustCompile(`(?i)\bpropose\s+(?:a\s+)?skill\s+([a-z][a-z0-9_-]{0,40})`)
	// buildSkillRE runs the built-in skill-builder skill to its proposal.
	buildSkillRE = regexp.MustCompile(`(?i)\bbuild\s+(?:a\s+)?skill\s+([a-z][a-z0-9_-]{0,40})`)
	// buildToolRE runs the built-in tool-builder skill to its proposal.
	buildToolRE = regexp.MustCompile(`(?i)\bbuild\s+(?:a\s+)?tool\s+([a-z][a-z0-9_]{0,40})`)
)

// decide picks the reply: text, or tool calls by their wire names.
func decide(req request, offered map[string]string, demoPage string) (string, []call) {
	last := req.Messages[len(req.Messages)-1]
	if finish := find(offered, "core_finish"); finish != "" {
		return "", []call{{finish, map[string]any{"summary": Prefix + "finished this job at once: " + firstLine(briefing(req))}}}
	}
	if sum := find(offered, "session_summary"); sum != "" {
		events := strings.Count(contentText(last.Content), "[ev ")
		return "", []call{{sum, map[string]any{"title": Prefix + "a demo session",
			"summary":   fmt.Sprintf("%sThe session ended after %d events; a real model would say here what was asked and done.", Prefix, events),
			"decisions": []string{}, "open_items": []string{}, "facts": []string{}}}}
	}
	if delta := find(offered, "memory_delta"); delta != "" {
		return "", []call{{delta, map[string]any{"memory_delta": map[string]any{"mode": "append", "summary_update": "Earlier messages were compacted by the demo model."}}}}
	}
	if walk, ok := walkSkill(req, offered); ok {
		return "", []call{walk}
	}
	if last.Role == "tool" {
		if retry, ok := createInstead(req); ok {
			return "", []call{retry}
		}
		return "done. " + toolAccount(req), nil
	}
	text := contentText(last.Content)
	lower := strings.ToLower(text)
	switch {
	case browseRE.MatchString(text) && find(offered, "choir_web_browse") != "":
		url := browseRE.FindStringSubmatch(text)[1]
		if strings.EqualFold(url, "the demo page") || strings.EqualFold(url, "demo page") {
			if demoPage == "" {
				return "there is no demo page in this demo: say browse <url> with a page this machine serves.", nil
			}
			url = demoPage
		}
		return "", []call{{find(offered, "choir_web_browse"), map[string]any{"url": url, "mode": "text"}}}
	case buildSkillRE.MatchString(text) && find(offered, "choir_skill_start") != "":
		return "", []call{{find(offered, "choir_skill_start"), map[string]any{"skill": "skill-builder"}}}
	case buildToolRE.MatchString(text) && find(offered, "choir_skill_start") != "":
		return "", []call{{find(offered, "choir_skill_start"), map[string]any{"skill": "tool-builder"}}}
	case skillRE.MatchString(text) && find(offered, "choir_propose_skill") != "":
		return "", []call{{find(offered, "choir_propose_skill"), map[string]any{"spec": proposedSkill(skillRE.FindStringSubmatch(text)[1]),
			"rationale": "the user asked for it"}}}
	case checkMailRE.MatchString(text) && find(offered, "choir_email_check") != "":
		return "", []call{{find(offered, "choir_email_check"), map[string]any{}}}
	case readMailRE.MatchString(text) && find(offered, "choir_email_receive") != "":
		return "", []call{{find(offered, "choir_email_receive"), map[string]any{"mark_seen": true}}}
	case mailRE.MatchString(text) && find(offered, "choir_email_send") != "":
		m := mailRE.FindStringSubmatch(text)
		body := strings.TrimSpace(m[2])
		if body == "" {
			body = "hello"
		}
		return "", []call{{find(offered, "choir_email_send"), map[string]any{"to": []string{m[1]},
			"subject": firstLine(body), "body": body + "\n\n(sent by choir's demo model)\n"}}}
	case strings.Contains(lower, "list") && strings.Contains(lower, "file"):
		if exec := find(offered, "choir_exec"); exec != "" {
			return "", []call{{exec, map[string]any{"command": "ls -la"}}}
		}
	case readRE.MatchString(text):
		if read := find(offered, "choir_fs_read"); read != "" {
			return "", []call{{read, map[string]any{"path": readRE.FindStringSubmatch(text)[1]}}}
		}
	case noteRE.MatchString(text):
		if write := find(offered, "choir_fs_write"); write != "" {
			return "", []call{{write, map[string]any{"path": "notes.md", "op": "append", "content": noteRE.FindStringSubmatch(text)[1] + "\n"}}}
		}
	case fileRE.MatchString(text):
		if write := find(offered, "choir_fs_write"); write != "" {
			name := fileRE.FindStringSubmatch(text)[1]
			return "", []call{{write, map[string]any{"path": ".choirtmp/send/" + name + ".txt", "op": "create", "overwrite": true,
				"content": "a file from the demo model: " + name + "\n"}}}
		}
	case coreRE.MatchString(text):
		if spawn := find(offered, "choir_core_spawn"); spawn != "" {
			task := strings.TrimSpace(coreRE.FindStringSubmatch(text)[2])
			if task == "" {
				task = "look around the workspace"
			}
			return "", []call{{spawn, map[string]any{"job_name": "demo-job", "task_spec": task,
				"context_bundle": map[string]any{"facts": []string{}, "excerpts": []string{}, "constraints": []string{}}}}}
		}
	}
	return fmt.Sprintf("you said %q. I am not a real model; I can list files, \"read <path>\", \"note <text>\", send a \"file <name>\", start a \"core <task>\", \"check mail\", \"read mail\" or \"mail <address>: <text>\".", firstLine(text)), nil
}

// walkSkill moves a running skill on (takeNote leaves choir.skill.transition
// offered only while one runs): in a step that offers choir.propose.skill it proposes the
// skill the user asked to build, once; otherwise it completes the step.
func walkSkill(req request, offered map[string]string) (call, bool) {
	transition := find(offered, "choir_skill_transition")
	if transition == "" {
		return call{}, false
	}
	asked := func(re *regexp.Regexp, name string) string {
		for _, m := range req.Messages {
			if m.Role == "user" {
				if sm := re.FindStringSubmatch(contentText(m.Content)); sm != nil {
					name = sm[1]
				}
			}
		}
		return name
	}
	if propose := find(offered, "choir_propose_skill"); propose != "" && !calledSinceTransition(req, propose) {
		return call{propose, map[string]any{"spec": proposedSkill(asked(buildSkillRE, "built-skill")),
			"rationale": "the user asked to build it with skill-builder"}}, true
	}
	if propose := find(offered, "choir_propose_tool"); propose != "" && !calledSinceTransition(req, propose) {
		name := "demo." + asked(buildToolRE, "tool")
		return call{propose, map[string]any{"rationale": "the user asked to build it with tool-builder", "manifest": map[string]any{
			"llm": map[string]any{"name": name, "description": "Count the words of a workspace file (proposed by the demo model).",
				"input_schema": map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []string{"path"}}},
			"runtime": map[string]any{"side_effect": "read", "timeout_ms": 10000}}}}, true
	}
	return call{transition, map[string]any{"on": "complete"}}, true
}

// calledSinceTransition reports whether the model called tool after its
// last choir.skill.transition.
func calledSinceTransition(req request, tool string) bool {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		var calls []struct {
			Function struct{ Name string } `json:"function"`
		}
		json.Unmarshal(req.Messages[i].ToolCalls, &calls)
		for _, c := range calls {
			switch {
			case c.Function.Name == tool:
				return true
			case strings.HasSuffix(c.Function.Name, "choir_skill_transition"):
				return false
			}
		}
	}
	return false
}

// proposedSkill is the small valid SkillSpec "propose skill <name>" asks
// a human to approve.
func proposedSkill(name string) map[string]any {
	return map[string]any{"name": name, "description": "Read the file the user names and say what it holds (proposed by the demo model).",
		"initial_state": "read", "max_steps": 4,
		"states": map[string]any{
			"read": map[string]any{"objective": "Read the file the user names.", "allowed_tools": []string{"choir.fs.read"},
				"transitions": []any{map[string]any{"on": "complete", "to": "done"}}},
			"done": map[string]any{"terminal": true},
		}}
}

// find returns the offered wire name ending in suffix.
func find(offered map[string]string, suffix string) string {
	for name := range offered {
		if strings.HasSuffix(name, suffix) {
			return name
		}
	}
	return ""
}

// toolAccount summarises the results since the last assistant message.
func toolAccount(req request) string {
	var parts []string
	for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role == "tool"; i-- {
		var res struct {
			Status   string `json:"status"`
			Summary  string `json:"summary"`
			Stdout   string `json:"stdout"`
			Content  string `json:"content"`
			Text     string `json:"text"` // choir.web.browse
			Messages []struct {
				From    []string `json:"from"`
				Subject string   `json:"subject"`
				Text    string   `json:"text"`
			} `json:"messages"`
		}
		body := contentText(req.Messages[i].Content)
		if json.Unmarshal([]byte(body), &res) != nil {
			parts = append(parts, firstLine(body))
			continue
		}
		detail := res.Summary
		if res.Stdout != "" {
			detail += ":\n" + strings.TrimSpace(res.Stdout)
		} else if res.Content != "" {
			detail += ":\n" + strings.TrimSpace(res.Content)
		} else if res.Text != "" {
			detail += ":\n" + strings.TrimSpace(res.Text)
		}
		for _, m := range res.Messages { // choir.email.receive
			detail += fmt.Sprintf("\nfrom %s: %s\n%s", strings.Join(m.From, ", "), m.Subject, strings.TrimSpace(m.Text))
		}
		parts = append(parts, detail)
	}
	return strings.Join(parts, "\n")
}

// briefing is the core job's task: the task_spec of the CoreJobStart the
// lane puts first in a core's conversation ("# CoreJobStart\n\n{json}…"),
// else the last user message.
func briefing(req request) string {
	last := ""
	for _, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		text := contentText(m.Content)
		if rest, ok := strings.CutPrefix(text, "# CoreJobStart\n\n"); ok {
			var start struct {
				TaskSpec string `json:"task_spec"`
			}
			if json.NewDecoder(strings.NewReader(rest)).Decode(&start) == nil && start.TaskSpec != "" {
				return start.TaskSpec
			}
		}
		last = text
	}
	if last == "" {
		return "its task"
	}
	return last
}

func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return string(raw)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// createInstead retries an append that failed because the file does not
// exist yet as a create: the note is the first one.
func createInstead(req request) (call, bool) {
	n := len(req.Messages)
	if n < 2 || !strings.Contains(contentText(req.Messages[n-1].Content), "op create") {
		return call{}, false
	}
	var prev struct {
		ToolCalls []struct {
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	}
	raw, _ := json.Marshal(req.Messages[n-2])
	json.Unmarshal(raw, &prev)
	if len(prev.ToolCalls) != 1 {
		return call{}, false
	}
	var args map[string]any
	if json.Unmarshal([]byte(prev.ToolCalls[0].Function.Arguments), &args) != nil || args["op"] != "append" {
		return call{}, false
	}
	args["op"] = "create"
	return call{prev.ToolCalls[0].Function.Name, args}, true
}

// notePrefix starts the lane's state note, the last message of a request
// while core jobs or a skill run (agent/lane's prompt.go).
const notePrefix = "[choir] Now: "

// takeNote takes the state note off the end of the request and narrows
// offered to what it says the moment allows, as a careful model would: the
// lane offers the same tools at every call and refuses the others. While a
// skill runs: the state's allowed tools and the skill's own; while core
// jobs run: the read-only tools it lists and the core job tools; the skill
// control tools only while a skill runs.
func takeNote(req *request, offered map[string]string) {
	note := ""
	if n := len(req.Messages); n > 1 && req.Messages[n-1].Role == "user" {
		if text := contentText(req.Messages[n-1].Content); strings.HasPrefix(text, notePrefix) {
			note, req.Messages = text, req.Messages[:n-1]
		}
	}
	wire := func(list string) map[string]bool {
		keep := map[string]bool{}
		for _, name := range strings.Split(list, ",") {
			keep[strings.ReplaceAll(strings.TrimSpace(name), ".", "_")] = true
		}
		return keep
	}
	between := func(s, from, to string) (string, bool) {
		_, rest, ok := strings.Cut(s, from)
		if !ok {
			return "", false
		}
		out, _, _ := strings.Cut(rest, to)
		return out, true
	}
	control := func(name string) bool {
		return strings.HasSuffix(name, "choir_skill_transition") || strings.HasSuffix(name, "choir_skill_finish")
	}
	if strings.Contains(note, " is running, in the state ") {
		allowed, _ := between(note, "Tools allowed in this state: ", ".\n")
		keep := wire(allowed)
		for name := range offered {
			if !keep[name] && !control(name) {
				delete(offered, name)
			}
		}
		return
	}
	for name := range offered {
		if control(name) {
			delete(offered, name)
		}
	}
	if readOnly, ok := between(note, "read-only tools (", ")"); ok {
		keep := wire(readOnly)
		for name := range offered {
			if !keep[name] && !strings.Contains(name, "choir_core_") {
				delete(offered, name)
			}
		}
	}
}
