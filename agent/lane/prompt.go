package lane

import (
	"encoding/json"
	"fmt"
	"strings"

	"choir/agent/arbiter"
	"choir/agent/skill"
	"choir/agent/tool"
	"choir/internal/openai"
	"choir/internal/rpc"
)

// entry is one committed event of this lane rendered as a chat message.
type entry struct {
	rev int64
	msg openai.Message
}

// sync takes the lane's new events from the log and renders them.
func (l *Lane) sync() {
	for _, e := range l.cfg.Arbiter.Events(l.seen) {
		l.seen = e.Rev
		if e.Lane != arbiter.LaneEdge {
			continue
		}
		if m, ok := render(e); ok {
			l.hist = append(l.hist, entry{e.Rev, m})
		}
	}
}

// trim keeps the last EventWindow entries: all a prompt can show.
func (l *Lane) trim() {
	if n := len(l.hist) - l.cfg.EventWindow; n > 0 {
		l.hist = append(l.hist[:0], l.hist[n:]...)
	}
}

// render turns one event into the message a prompt shows for it. Only what
// the model said or was told is shown: user messages, model replies, tool
// results, and the end of a skill that no tool call reported.
func render(e rpc.Event) (openai.Message, bool) {
	switch e.Type {
	case arbiter.UserMsg:
		var p arbiter.UserMsgPayload
		if json.Unmarshal(e.Payload, &p) == nil {
			return openai.UserMessage(p.Text), true
		}
	case arbiter.ModelOutput:
		var p arbiter.ModelOutputPayload
		if json.Unmarshal(e.Payload, &p) != nil || p.Error != "" {
			return openai.Message{}, false // a failed call said nothing
		}
		calls := make([]openai.ToolCall, len(p.ToolCalls))
		for i, c := range p.ToolCalls {
			calls[i] = openai.ToolCall{ID: c.ID, Name: wireSafe(c.Name), Arguments: c.Arguments}
		}
		return openai.AssistantMessage(p.Text, calls...), true
	case arbiter.ToolResultCommitted:
		var p arbiter.ResultCommitted
		if json.Unmarshal(e.Payload, &p) == nil && p.ToolCallID != "" {
			return openai.ToolMessage(p.ToolCallID, string(p.Output)), true
		}
	case arbiter.SkillTransition:
		var p arbiter.SkillTransitionPayload
		if json.Unmarshal(e.Payload, &p) == nil && p.ID == "" {
			note := fmt.Sprintf("[choir] The skill %s ended with the status %s", p.Skill, p.Status)
			if p.Reason != "" {
				note += ": " + p.Reason
			}
			return openai.UserMessage(note + "."), true
		}
	}
	return openai.Message{}, false
}

// wireSafe keeps a replayed tool call sendable: the client refuses names
// outside ^[a-zA-Z0-9_-]{1,64}$, and a model may have sent one.
func wireSafe(name string) string {
	w := openai.WireName(name)
	if len(w) > 64 {
		w = w[:64]
	}
	if w == "" {
		w = "unnamed"
	}
	return w
}

// missingResult answers a tool call whose result is not in the window (the
// turn that made it was cut short), so that the conversation stays valid.
const missingResult = `{"error":{"code":"no_result","message":"this call has no recorded result"},"status":"error"}`

// pairCalls keeps tool calls and tool results matched, as the API demands:
// a tool message whose call is not shown (it rolled out of the window) is
// dropped, and a call without a result gets missingResult.
func pairCalls(dst []openai.Message, msgs []entry) []openai.Message {
	var open []string // calls of the last assistant message still unanswered
	flush := func() {
		for _, id := range open {
			if id != "" {
				dst = append(dst, openai.ToolMessage(id, missingResult))
			}
		}
		open = open[:0]
	}
	for _, e := range msgs {
		m := e.msg
		if m.Role == openai.RoleTool {
			for i, id := range open {
				if id == m.ToolCallID {
					dst = append(dst, m)
					open[i] = ""
					break
				}
			}
			continue
		}
		flush()
		dst = append(dst, m)
		for _, c := range m.ToolCalls {
			open = append(open, c.ID)
		}
	}
	flush()
	return dst
}

// request builds the next model call from the edge layout (design §11.3):
//
//	system   lane instructions + skill summaries (+ the running skill's state)
//	system   USER.md
//	system   SOUL.md
//	system   reference summary (none yet: compaction is a later issue)
//	...      event window: the last EventWindow events before this message
//	user     the current message
//	...      this turn so far: model replies and tool results
//
// Tool schemas go only in the tools parameter, under wire-safe names.
func (l *Lane) request(cur int) (openai.ChatRequest, *openai.NameMap, error) {
	set := l.cfg.Settings()
	defs := l.tools()
	canon := make([]string, len(defs))
	for i, d := range defs {
		canon[i] = d.Name
	}
	names, err := openai.NewNameMap(canon)
	if err != nil {
		return openai.ChatRequest{}, nil, fmt.Errorf("lane: tools for the model: %w", err)
	}
	tools := make([]openai.Tool, len(defs))
	for i, d := range defs {
		w, _ := names.Wire(d.Name)
		tools[i] = openai.Tool{Name: w, Description: d.Description, Parameters: d.Parameters}
	}

	msgs := make([]openai.Message, 0, 4+len(l.hist))
	msgs = append(msgs, openai.SystemMessage(l.systemPrompt()))
	if s := strings.TrimSpace(l.cfg.Identity.UserMD); s != "" {
		msgs = append(msgs, openai.SystemMessage("# USER.md\n\n"+s))
	}
	if s := strings.TrimSpace(l.cfg.Identity.SoulMD); s != "" {
		msgs = append(msgs, openai.SystemMessage("# SOUL.md\n\n"+s))
	}
	// The window, the current message and the turn. Pairing runs over all
	// of it: a result committed late (its turn was cancelled) is dropped
	// rather than shown after a later message.
	msgs = pairCalls(msgs, l.hist[max(0, cur-l.cfg.EventWindow):])
	return openai.ChatRequest{
		Model:           set.Model,
		Messages:        msgs,
		Tools:           tools,
		Temperature:     set.Temperature,
		ReasoningEffort: set.ReasoningEffort,
	}, names, nil
}

// tools are the tools offered now: the edge's tools and the skill start
// tool, or, while a skill runs, its state's tools and its control tools.
func (l *Lane) tools() []tool.LLMTool {
	if run := l.active; run != nil {
		defs := l.cfg.Tools.LLMTools(tool.All(tool.ForLane(tool.Edge), tool.Among(run.AllowedTools())))
		for _, d := range run.Tools() {
			defs = append(defs, tool.LLMTool(d))
		}
		return defs
	}
	defs := l.cfg.Tools.LLMTools(tool.ForLane(tool.Edge))
	if l.cfg.Skills != nil {
		defs = append(defs, tool.LLMTool(arbiter.StartToolDef(l.cfg.Skills)))
	}
	return defs
}

// systemPrompt is the lane's instructions, the skills it can start and, while
// one runs, where it stands: the only part of a skill the model sees.
func (l *Lane) systemPrompt() string {
	var b strings.Builder
	b.WriteString(l.cfg.Instructions)
	if l.cfg.Skills != nil {
		if names := l.cfg.Skills.Names(); len(names) > 0 {
			fmt.Fprintf(&b, "\n\nSkills you can start with %s:", arbiter.StartTool)
			for _, n := range names {
				spec, _ := l.cfg.Skills.Lookup(n)
				fmt.Fprintf(&b, "\n- %s: %s", n, spec.Description)
			}
		}
	}
	if run := l.active; run != nil {
		fmt.Fprintf(&b, "\n\nThe skill %s is running, in the state %s.\nObjective: %s", run.Skill(), run.State(), run.Objective())
		if tr := run.Transitions(); len(tr) > 0 {
			fmt.Fprintf(&b, "\nWhen the objective is met, call %s with one of: %s.", skill.TransitionTool, strings.Join(tr, ", "))
		} else {
			fmt.Fprintf(&b, "\nFinish the skill with %s and its output.", skill.FinishTool)
		}
	}
	return b.String()
}

// outputPayload is the ModelOutput event of a reply.
func outputPayload(model string, resp *openai.ChatResponse) arbiter.ModelOutputPayload {
	p := arbiter.ModelOutputPayload{Model: model, Text: resp.Content}
	if p.Text == "" {
		p.Text = resp.Refusal
	}
	for _, c := range resp.ToolCalls {
		p.ToolCalls = append(p.ToolCalls, arbiter.ModelToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	return p
}
