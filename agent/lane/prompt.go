package lane

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"choir/agent/arbiter"
	"choir/agent/memory"
	"choir/agent/skill"
	"choir/agent/tool"
	"choir/internal/openai"
	"choir/internal/rpc"
)

// DefaultInstructions are the edge lane's behavioural instructions, the
// first part of its system prompt.
const DefaultInstructions = `You are the user's personal agent, talking with them in a direct message. ` +
	`Answer their message. You can act only through the tools offered in this request: ` +
	`call them when the task needs the workspace or the outside world, and answer in plain text when you are done. ` +
	`A tool result is JSON; an error result says what was wrong and what to do instead.`

// coreGuide is added to the edge's instructions when it can spawn cores.
const coreGuide = `For complex, multi-step work, or when the user asks for it, start a core job with ` + SpawnTool +
	`: a stronger model that works in the background while you keep talking with the user. Give it a short job_name and a clean task_spec ` +
	`written by you (not the user's words), with only the facts, excerpts and constraints it needs; it never sees this conversation. ` +
	`Relay what the user wants a running job to know with ` + InjectTool + `, stop one with ` + CancelTool + `, and see them with ` + ListTool + `. ` +
	`While core jobs run you may only use read-only tools. When a job ends the user receives its report; you are told too.`

// DefaultCoreInstructions are a core job's behavioural instructions.
const DefaultCoreInstructions = `You are a core job of a personal agent: a worker that carries out one task, given at the end of this conversation ` +
	`by the agent's edge lane, which talks with the user. You cannot talk with the user. Plan, then act through the tools offered, ` +
	`checking your work. A tool result is JSON; an error result says what was wrong and what to do instead. ` +
	`Report progress, your plan, or what you need to know with ` + ReportTool + `; finish with ` + FinishTool + `.`

// Payloads of the events the lanes record besides the arbiter's own.
type (
	// userPayload is arbiter.UserMsgPayload with the message's id (for
	// replay after a restart) and its attachments.
	userPayload struct {
		Attachments []string `json:"attachments,omitempty"`
		ID          string   `json:"id,omitempty"`
		Text        string   `json:"text"`
	}
	cancelledPayload struct {
		Reason string `json:"reason"`
	}
	injectionPayload struct {
		From string `json:"from"` // user (/inject) or edge (choir.core.inject)
		ID   string `json:"id,omitempty"`
		Job  string `json:"job,omitempty"`
		Text string `json:"text"`
	}
	startedPayload struct {
		Job   string       `json:"job"`
		JobID string       `json:"job_id"`
		Start CoreJobStart `json:"start"`
	}
	stoppedPayload struct {
		Error     *JobError    `json:"error,omitempty"`
		Final     *FinalResult `json:"final_result,omitempty"`
		Job       string       `json:"job"`
		JobID     string       `json:"job_id"`
		State     string       `json:"state"`
		Steps     int          `json:"steps"`
		ToolCalls int          `json:"tool_calls"`
	}
)

// fields are the payload members render looks at, of any event type.
type fields struct {
	Attachments []string        `json:"attachments"`
	Job         string          `json:"job"`
	Text        string          `json:"text"`
	Error       json.RawMessage `json:"error"`
	From        string          `json:"from"`
	ToolCallID  string          `json:"tool_call_id"`
	Output      json.RawMessage `json:"output"`
	Tool        string          `json:"tool"`
	ID          string          `json:"id"`
	Skill       string          `json:"skill"`
	Status      string          `json:"status"`
	Reason      string          `json:"reason"`
}

// render turns one committed event into the message this lane's prompts
// show for it, if it shows one. A lane sees its own user messages (the
// edge), model replies, tool results, refusals, injections and skill ends;
// the edge also sees core jobs end and ask for information; a core job
// sees nothing of the edge's or of other jobs.
func (a *actor) render(e rpc.Event) (openai.Message, bool) {
	var f fields
	switch {
	case a.job == nil && e.Lane == arbiter.LaneEdge:
	case a.job == nil && e.Lane == arbiter.LaneCore && (e.Type == arbiter.CoreStopped || e.Type == arbiter.ToolResultCommitted):
	case a.job != nil && e.Lane == arbiter.LaneCore:
	default:
		return openai.Message{}, false
	}
	if json.Unmarshal(e.Payload, &f) != nil {
		return openai.Message{}, false
	}
	if e.Lane == arbiter.LaneCore && a.job != nil && f.Job != a.job.name {
		return openai.Message{}, false
	}
	if e.Lane == arbiter.LaneCore && a.job == nil {
		return edgeNote(e, f)
	}
	switch e.Type {
	case arbiter.UserMsg:
		if len(f.Attachments) > 0 {
			return openai.UserMessage(f.Text + "\n\n[Attached files in the workspace: " + strings.Join(f.Attachments, ", ") + " (removed once you have answered this message: copy elsewhere what must be kept)]"), true
		}
		return openai.UserMessage(f.Text), true
	case arbiter.ModelOutput:
		var p output
		if json.Unmarshal(e.Payload, &p) != nil || p.Error != "" {
			return openai.Message{}, false // a failed call said nothing
		}
		calls := make([]openai.ToolCall, len(p.ToolCalls))
		for i, c := range p.ToolCalls {
			calls[i] = openai.ToolCall{ID: c.ID, Name: wireSafe(c.Name), Arguments: c.Arguments}
		}
		return openai.AssistantMessage(p.Text, calls...), true
	case arbiter.ToolResultCommitted, arbiter.Cancelled:
		if f.ToolCallID != "" && len(f.Output) > 0 {
			return openai.ToolMessage(f.ToolCallID, string(f.Output)), true
		}
	case arbiter.InjectedInstruction:
		if f.From == "edge" {
			return openai.UserMessage("[edge] New instruction for this job: " + f.Text), true
		}
		return openai.UserMessage("[/inject] " + f.Text), true
	case arbiter.SkillTransition:
		if f.ID == "" {
			note := fmt.Sprintf("[choir] The skill %s ended with the status %s", f.Skill, f.Status)
			if f.Reason != "" {
				note += ": " + f.Reason
			}
			return openai.UserMessage(note + "."), true
		}
	}
	return openai.Message{}, false
}

// edgeNote is what the edge sees of a core job's event: its end, and a
// question it asks.
func edgeNote(e rpc.Event, f fields) (openai.Message, bool) {
	switch e.Type {
	case arbiter.CoreStopped:
		var p stoppedPayload
		json.Unmarshal(e.Payload, &p)
		var b strings.Builder
		switch {
		case p.Final != nil:
			fmt.Fprintf(&b, "[choir] Core job %s completed: %s", p.Job, p.Final.Summary)
			if len(p.Final.Result) > 0 {
				b.WriteString("\nResult: " + cutText(string(p.Final.Result), 2000))
			}
		case p.Error != nil:
			fmt.Fprintf(&b, "[choir] Core job %s terminated (%s): %s", p.Job, p.Error.Code, p.Error.Message)
		default:
			fmt.Fprintf(&b, "[choir] Core job %s ended (%s)", p.Job, p.State)
		}
		b.WriteString("\nThe user has been sent its report.")
		return openai.UserMessage(b.String()), true
	case arbiter.ToolResultCommitted:
		if f.Tool != ReportTool {
			break
		}
		var r struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(f.Output, &r) == nil && r.Type == EventNeedInfo {
			return openai.UserMessage(fmt.Sprintf("[choir] Core job %s needs information (the user was asked too): %s", f.Job, r.Text)), true
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
// dropped, a call without a result gets missingResult, and a note that was
// committed between a call and its result (a core job ended meanwhile)
// waits until the results are shown.
func pairCalls(dst []openai.Message, msgs []memory.Entry) []openai.Message {
	var open []string // calls of the last assistant message still unanswered
	var held []openai.Message
	answered := func() bool {
		for _, id := range open {
			if id != "" {
				return false
			}
		}
		return true
	}
	release := func() {
		dst = append(dst, held...)
		held = held[:0]
	}
	flush := func() {
		for _, id := range open {
			if id != "" {
				dst = append(dst, openai.ToolMessage(id, missingResult))
			}
		}
		open = open[:0]
		release()
	}
	for _, e := range msgs {
		m := e.Msg
		switch {
		case m.Role == openai.RoleTool:
			for i, id := range open {
				if id == m.ToolCallID && id != "" {
					dst = append(dst, m)
					open[i] = ""
					break
				}
			}
			if answered() {
				release()
			}
		case m.Role != openai.RoleAssistant && !answered():
			held = append(held, m)
		default:
			flush()
			dst = append(dst, m)
			for _, c := range m.ToolCalls {
				open = append(open, c.ID)
			}
		}
	}
	flush()
	return dst
}

// request builds the lane's next model call, its first bytes the same at
// every call of the session so that a provider's prefix cache serves them
// (§21.4: keep the system prompt stable, put what changes after it):
//
//	edge                              core
//	system   instructions + skills    system   core instructions + skills
//	system   USER.md                  system   SOUL-CORE.md
//	system   SOUL.md                  system   reference summary
//	system   reference summary        user     CoreJobStart
//	...      event window             ...      event window
//	user     the current message      user     [choir] state note, if any
//	...      this turn so far
//	user     [choir] state note, if any
//
// (the edge's window is the last N events before the current message;
// the current message is pinned in it and never compacted). The state note
// (state.go's stateNote: running core jobs, the skill's state, objective
// and allowed tools) is the only part that changes between calls without
// a new event; it comes last, so that it costs only itself. The core's
// CoreJobStart comes before its window, not after it as §11.3 draws it, so
// that a job's steps share their whole prefix. Empty parts are left out.
// Tool schemas go only in the tools parameter, under wire-safe names, the
// same set in the same order at every call of the lane (tools). It also
// sizes the fixed content for the compaction threshold.
func (a *actor) request(set Settings) (openai.ChatRequest, *openai.NameMap, error) {
	defs := a.tools()
	canon := make([]string, len(defs))
	for i, d := range defs {
		canon[i] = d.Name
	}
	names, err := openai.NewNameMap(canon)
	if err != nil {
		return openai.ChatRequest{}, nil, fmt.Errorf("lane: tools for the model: %w", err)
	}
	tools := make([]openai.Tool, len(defs))
	fixed := 0
	for i, d := range defs {
		w, _ := names.Wire(d.Name)
		tools[i] = openai.Tool{Name: w, Description: d.Description, Parameters: d.Parameters}
		fixed += memory.Tokens(len(w) + len(d.Description) + len(d.Parameters))
	}

	sum, win := a.mem.View()
	msgs := make([]openai.Message, 0, 7+len(win))
	msgs = append(msgs, openai.SystemMessage(a.systemPrompt()))
	if a.job == nil {
		if s := strings.TrimSpace(a.l.cfg.Identity.UserMD); s != "" {
			msgs = append(msgs, openai.SystemMessage("# USER.md\n\n"+s))
		}
		if s := strings.TrimSpace(a.l.cfg.Identity.SoulMD); s != "" {
			msgs = append(msgs, openai.SystemMessage("# SOUL.md\n\n"+s))
		}
	} else if s := strings.TrimSpace(a.l.cfg.Identity.SoulCoreMD); s != "" {
		msgs = append(msgs, openai.SystemMessage("# SOUL-CORE.md\n\n"+s))
	}
	if !sum.Empty() {
		msgs = append(msgs, openai.SystemMessage("# Reference summary\n\nWhat has left your event window; look events up by id with "+QueryTool+".\n\n"+string(sum.JSON())))
	}
	if a.job != nil {
		msgs = append(msgs, openai.UserMessage(a.job.start.message()))
	}
	for _, m := range msgs {
		fixed += memory.MessageTokens(m)
	}
	for _, e := range win {
		if e.Rev == a.pin {
			fixed += e.Tokens()
		}
	}
	msgs = pairCalls(msgs, win)
	if note := a.stateNote(); note != "" {
		m := openai.UserMessage(note)
		fixed += memory.MessageTokens(m)
		msgs = append(msgs, m)
	}
	a.fixed = fixed
	return openai.ChatRequest{
		Model:           set.Model,
		Messages:        msgs,
		Tools:           tools,
		Temperature:     set.Temperature,
		ReasoningEffort: set.ReasoningEffort,
	}, names, nil
}

// readOnly are the tools the edge may use while core jobs run (design
// §7.2); the skill control tools have no side effect either.
var readOnly = map[string]bool{
	"choir.fs.read": true, "choir.fs.search": true, "choir.web.search": true, QueryTool: true,
	SpawnTool: true, InjectTool: true, CancelTool: true, ListTool: true,
	skill.TransitionTool: true, skill.FinishTool: true,
}

// tools are the tools offered to the lane: the same set, in the registry's
// (sorted) order, at every call, so that the tools parameter, which
// providers put at the very start of a prompt, never breaks the cached
// prefix. The lane's tools come first, then, when it can start skills, the
// three skill control tools. What the moment does not allow (a side effect
// while cores run, a tool outside the skill state's allowed_tools, a
// transition without a running skill) is refused with a structured error
// that says what is allowed (§10.2's constraint handling), and the state
// note lists it beforehand.
func (a *actor) tools() []tool.LLMTool {
	a.defsOnce.Do(func() {
		defs := a.l.cfg.Tools.LLMTools(a.filter())
		if a.offered[arbiter.StartTool] {
			defs = append(defs, tool.LLMTool(arbiter.StartToolDef(a.l.cfg.Skills)))
			for _, d := range controlDefs(a.l.cfg.Skills) {
				defs = append(defs, tool.LLMTool(d))
			}
		}
		a.defs = defs
	})
	return a.defs
}

// controlDefs are choir.skill.transition and choir.skill.finish in a form
// that does not depend on the running skill's state: transition's "on" is
// an enum of every event of every skill (the arbiter checks it against the
// current state), finish's output is any JSON (the arbiter checks it
// against the skill's output_schema).
func controlDefs(reg *skill.Registry) []skill.ToolDef {
	var events []string
	for _, n := range reg.Names() {
		spec, _ := reg.Lookup(n)
		for _, st := range spec.States {
			for _, tr := range st.Transitions {
				events = append(events, tr.On)
			}
		}
	}
	slices.Sort(events)
	events = slices.Compact(events)
	on := map[string]any{"type": "string", "description": "One of the events the running skill's current state lists."}
	if len(events) > 0 {
		on["enum"] = events
	}
	tr, _ := json.Marshal(map[string]any{
		"type": "object", "properties": map[string]any{"on": on},
		"required": []string{"on"}, "additionalProperties": false,
	})
	fin, _ := json.Marshal(map[string]any{
		"type": "object", "properties": map[string]any{"output": map[string]any{"description": "The skill's output, matching its output schema."}},
		"required": []string{"output"}, "additionalProperties": false,
	})
	return []skill.ToolDef{
		{Name: skill.TransitionTool, Parameters: tr,
			Description: "Leave the current state of the running skill once its objective is met, by naming one of the events the state lists. Only valid while a skill runs."},
		{Name: skill.FinishTool, Parameters: fin,
			Description: "Finish the running skill with its output, in a terminal state. Only valid while a skill runs."},
	}
}

// systemPrompt is the lane's first message, the same at every call of the
// session: its instructions and the skills it can start. Nothing here may
// depend on the moment (running jobs, the skill's state: stateNote).
func (a *actor) systemPrompt() string {
	var b strings.Builder
	if a.job == nil {
		b.WriteString(a.l.cfg.Instructions)
		if a.offered[SpawnTool] {
			b.WriteString("\n\n" + coreGuide)
		}
	} else {
		b.WriteString(a.l.cfg.CoreInstructions)
	}
	if a.offered[arbiter.StartTool] {
		if names := a.l.cfg.Skills.Names(); len(names) > 0 {
			fmt.Fprintf(&b, "\n\nSkills you can start with %s:", arbiter.StartTool)
			for _, n := range names {
				spec, _ := a.l.cfg.Skills.Lookup(n)
				fmt.Fprintf(&b, "\n- %s: %s", n, spec.Description)
			}
			fmt.Fprintf(&b, "\nWhile a skill runs, the latest [choir] note gives its state, objective and allowed tools.")
		}
	}
	return b.String()
}

// stateNote is what the lane's situation is now, for the last message of
// the request: the core jobs running (edge) and the running skill's state,
// objective, allowed tools and transitions. "" when there is nothing to
// say. It is rebuilt at every call and never committed.
func (a *actor) stateNote() string {
	var parts []string
	if a.job == nil && a.offered[SpawnTool] {
		if running := a.l.runningNames(); len(running) > 0 {
			parts = append(parts, fmt.Sprintf("Core jobs running now: %s. Until they end you may use only read-only tools (%s) and the core job tools.",
				strings.Join(running, ", "), strings.Join(readOnlyOffered(a), ", ")))
		}
	}
	if run := a.skill(); run != nil && !run.Ended() {
		var b strings.Builder
		fmt.Fprintf(&b, "The skill %s is running, in the state %s.\nObjective: %s", run.Skill(), run.State(), run.Objective())
		allowed := run.AllowedTools()
		if len(allowed) == 0 {
			b.WriteString("\nNo tools are allowed in this state besides the skill's own.")
		} else {
			fmt.Fprintf(&b, "\nTools allowed in this state: %s.", strings.Join(allowed, ", "))
		}
		if tr := run.Transitions(); len(tr) > 0 {
			fmt.Fprintf(&b, "\nWhen the objective is met, call %s with one of: %s.", skill.TransitionTool, strings.Join(tr, ", "))
		} else {
			fmt.Fprintf(&b, "\nFinish the skill with %s and its output.", skill.FinishTool)
		}
		parts = append(parts, b.String())
	}
	if len(parts) == 0 {
		return ""
	}
	return "[choir] Now: " + strings.Join(parts, "\n\n")
}

// readOnlyOffered are the read-only tools of the edge's set, besides the
// core job tools, in the offered order.
func readOnlyOffered(a *actor) []string {
	var out []string
	for _, d := range a.tools() {
		switch d.Name {
		case SpawnTool, InjectTool, CancelTool, ListTool, skill.TransitionTool, skill.FinishTool:
			continue
		}
		if readOnly[d.Name] {
			out = append(out, d.Name)
		}
	}
	return out
}
