package lane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"choir/agent/memory"
	"choir/internal/jsonschema"
	"choir/internal/openai"
	"choir/internal/rpc"
)

// The session summary (design §11.8 step 2, §17.2): at a graceful stop,
// one model call reads the session as the edge lane holds it (its reference
// summary and its event window) and must call SummaryTool, whose arguments
// are the summary. They are checked against summarySchema and the whole
// document against rpc.MaxSummaryBytes before anything uses them; the
// final heartbeat carries the result to choird, which stores it with the
// session. The call is the edge's model with the edge's settings, bounded by
// the caller's context (session_summary_timeout_ms); its tokens count
// against total_session_tokens, and a spent budget skips it without a call.

// SummaryTool is the one function a session summary call offers and
// requires: its arguments are the summary.
const SummaryTool = "session_summary"

// SessionSummary is the document SummaryTool produces: a title, a few
// paragraphs, and the decisions made, the items left open and the durable
// facts learnt, each one short sentence.
type SessionSummary struct {
	Title     string   `json:"title"`
	Summary   string   `json:"summary"`
	Decisions []string `json:"decisions"`
	OpenItems []string `json:"open_items"`
	Facts     []string `json:"facts"`
}

// Bounds of a summary, in characters; the whole document must also fit in
// rpc.MaxSummaryBytes.
const (
	summaryTitleMax = 200
	summaryTextMax  = 8000
	summaryItemMax  = 1000
)

// summaryParameters is the JSON Schema of SummaryTool's arguments.
var summaryParameters = fmt.Sprintf(`{"type":"object","additionalProperties":false,"required":["title","summary","decisions","open_items","facts"],"properties":{`+
	`"title":{"type":"string","minLength":1,"maxLength":%d,"description":"a few words naming what the session was about"},`+
	`"summary":{"type":"string","minLength":1,"maxLength":%d,"description":"what happened and what came of it, in a few short paragraphs"},`+
	`"decisions":{"type":"array","items":{"type":"string","minLength":1,"maxLength":%[3]d},"description":"decisions the user or the agent made, one sentence each"},`+
	`"open_items":{"type":"array","items":{"type":"string","minLength":1,"maxLength":%[3]d},"description":"what is left to do or to answer"},`+
	`"facts":{"type":"array","items":{"type":"string","minLength":1,"maxLength":%[3]d},"description":"durable facts worth remembering in later sessions: names, paths, preferences"}}}`,
	summaryTitleMax, summaryTextMax, summaryItemMax)

var summarySchema = jsonschema.MustCompile(summaryParameters)

// summaryInstructions is the system prompt of a session summary call.
const summaryInstructions = `The session of a personal agent with its user is ending. Below are the lane's reference summary (what left its context earlier) and its most recent events. ` +
	`Write the session summary by calling ` + SummaryTool + ` exactly once: a short title, what happened and what came of it, the decisions made, the items left open, ` +
	`and the durable facts a later session should know. Use only what the events and the reference summary say; leave a list empty when there is nothing for it.`

// Reasons a summary is not made, for errors.Is.
var (
	// ErrNothingToSummarize: the edge lane holds no event and no summary.
	ErrNothingToSummarize = errors.New("the session has nothing to summarise: the edge lane holds no event")
	// ErrNoSummaryCall: the model answered without calling SummaryTool.
	ErrNoSummaryCall = errors.New("the model answered without calling " + SummaryTool)
	// ErrBadSummary: SummaryTool's arguments were refused.
	ErrBadSummary = errors.New("the session summary was refused")
)

// maxSummaryEntryBytes is how much of one event a summary prompt shows.
const maxSummaryEntryBytes = 2048

// SessionSummary makes the session summary: one model call, bounded by ctx,
// that must call SummaryTool. It returns the summary as compact JSON (a
// SessionSummary, every list present), or an error saying why there is
// none: a spent token budget (*BudgetError, no call made),
// ErrNothingToSummarize (no call made), the call's failure (ctx's deadline
// included), ErrNoSummaryCall, or ErrBadSummary naming every refused field.
// It reads the edge's working memory, which is safe while the lanes run,
// and is meant for a stopped lane.
func (l *Lane) SessionSummary(ctx context.Context) (json.RawMessage, error) {
	if err := l.session.checkTokens(); err != nil {
		return nil, err
	}
	sum, window := l.edge.mem.View()
	if sum.Empty() && len(window) == 0 {
		return nil, ErrNothingToSummarize
	}
	set, model := l.cfg.Settings(), l.cfg.Model
	if l.cfg.SummaryModel != nil && l.cfg.SummarySettings != nil {
		set, model = l.cfg.SummarySettings(), l.cfg.SummaryModel
	}
	req := summaryRequest(sum, window, set)
	began := time.Now()
	ctx, info := l.edge.metered(ctx, purposeSummary)
	resp, err := model.Chat(ctx, req)
	l.edge.observe(info, req, resp, err, time.Since(began)) // counts the tokens, logs the call
	if err != nil {
		return nil, fmt.Errorf("session summary call: %w", err)
	}
	for _, tc := range resp.ToolCalls {
		if tc.Name == SummaryTool {
			return parseSummary(tc.Arguments)
		}
	}
	return nil, ErrNoSummaryCall
}

// summaryRequest is the summary call: instructions, then the reference
// summary and the newest events of the window that fit in half the
// model's context window (estimated at 4 bytes a token), oldest first,
// with SummaryTool required.
func summaryRequest(sum memory.Summary, window []memory.Entry, set Settings) openai.ChatRequest {
	ctxWindow := set.ContextWindow
	if ctxWindow <= 0 {
		ctxWindow = memory.DefaultContextWindow
	}
	budget := ctxWindow / 2 * 4
	var b strings.Builder
	if !sum.Empty() {
		ref := string(sum.JSON())
		if len(ref) > budget/2 {
			ref = ref[:budget/2] + "…"
		}
		fmt.Fprintf(&b, "Reference summary of what left the lane's context earlier:\n%s\n\n", ref)
	}
	budget -= b.Len()
	var lines []string
	for i := len(window) - 1; i >= 0; i-- {
		line := memory.EntryText(window[i], maxSummaryEntryBytes)
		if budget -= len(line) + 1; budget < 0 && len(lines) > 0 {
			break
		}
		lines = append(lines, line)
	}
	slices.Reverse(lines)
	if left := len(window) - len(lines); left > 0 {
		fmt.Fprintf(&b, "(%d older events are left out for length.)\n", left)
	}
	b.WriteString("Events of the session, oldest first:\n")
	for _, line := range lines {
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return openai.ChatRequest{
		Model: set.Model, Temperature: set.Temperature, ReasoningEffort: set.ReasoningEffort,
		Messages: []openai.Message{
			openai.SystemMessage(summaryInstructions),
			openai.UserMessage(b.String()),
		},
		Tools: []openai.Tool{{
			Name:        SummaryTool,
			Description: "Record the summary of the session that is ending.",
			Parameters:  json.RawMessage(summaryParameters),
		}},
		ToolChoice: &openai.ToolChoice{Function: SummaryTool},
	}
}

// parseSummary checks SummaryTool's arguments against its schema and
// returns the summary as compact JSON, trimmed, every list present.
func parseSummary(args string) (json.RawMessage, error) {
	if err := summarySchema.Validate(json.RawMessage(args)); err != nil {
		return nil, fmt.Errorf("%w: %s's arguments: %v", ErrBadSummary, SummaryTool, err)
	}
	var s SessionSummary
	dec := json.NewDecoder(strings.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil { // the schema passed: not expected
		return nil, fmt.Errorf("%w: %v", ErrBadSummary, err)
	}
	trim := func(list []string) []string {
		out := []string{}
		for _, x := range list {
			if x = strings.TrimSpace(x); x != "" {
				out = append(out, x)
			}
		}
		return out
	}
	s.Title, s.Summary = strings.TrimSpace(s.Title), strings.TrimSpace(s.Summary)
	s.Decisions, s.OpenItems, s.Facts = trim(s.Decisions), trim(s.OpenItems), trim(s.Facts)
	if s.Title == "" || s.Summary == "" {
		return nil, fmt.Errorf("%w: /title and /summary must hold more than white space", ErrBadSummary)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // strings and lists of them always encode
	out := bytes.TrimSpace(buf.Bytes())
	if len(out) > rpc.MaxSummaryBytes {
		return nil, fmt.Errorf("%w: it is %d bytes; the limit is %d bytes", ErrBadSummary, len(out), rpc.MaxSummaryBytes)
	}
	return out, nil
}
