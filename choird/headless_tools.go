package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"choir/choird/headless"
	"choir/choird/headless/objects"
	"choir/choird/lifecycle"
	"choir/choird/store"
	"choir/internal/config"
	"choir/internal/rpc"
)

// Host tools of a headless run session's agent (seed 002 §6, §9): typed
// notes, SPLIT_REQUEST and SPEC_CHANGE_REQUEST. Each finds its run from
// the calling session (a session of kind run names the run it performs),
// never from the input, and answers a refusal with the director's error,
// which says what is wrong, where and what to do, so the model can mend
// the call and try again.

// runToolError is a host tool's refusal, with the tool result's code.
type runToolError struct{ code, msg string }

func (e *runToolError) Error() string    { return e.msg }
func (e *runToolError) ToolCode() string { return e.code }

// sessionRuns finds the run a session performs.
type sessionRuns interface {
	GetSession(ctx context.Context, sessionID string) (store.Session, error)
}

// runHostTools returns the handlers of the run tools; notify sends a text
// to an agent's DM (REQUEST_HELP).
func runHostTools(sessions sessionRuns, d *headless.Director, objs *objects.Store, notify func(agentID, text string)) map[string]func(ctx context.Context, agentID, sessionID string, input json.RawMessage) (json.RawMessage, error) {
	t := &runTools{sessions: sessions, d: d, objs: objs, notify: notify}
	return map[string]func(ctx context.Context, agentID, sessionID string, input json.RawMessage) (json.RawMessage, error){
		rpc.HostToolRunNote:       t.note,
		rpc.HostToolRunSplit:      t.split,
		rpc.HostToolRunSpecChange: t.specChange,
	}
}

type runTools struct {
	sessions sessionRuns
	d        *headless.Director
	objs     *objects.Store
	notify   func(agentID, text string)
}

// run is the run the calling session performs; refused for any session
// that is not an active run session of agentID.
func (t *runTools) run(ctx context.Context, tool, agentID, sessionID string) (headless.Run, error) {
	s, err := t.sessions.GetSession(ctx, sessionID)
	if err != nil {
		return headless.Run{}, &runToolError{"forbidden", fmt.Sprintf("%s: this session is not known to choird: %v", tool, err)}
	}
	if s.Kind != store.SessionRun || s.RunID == "" || s.AgentID != agentID || s.Status != store.SessionActive {
		return headless.Run{}, &runToolError{"forbidden", tool + " is offered only in a headless run session, for the run it performs"}
	}
	r, err := t.d.Run(ctx, s.RunID)
	if err != nil {
		return headless.Run{}, &runToolError{"not_found", fmt.Sprintf("%s: run %s: %v", tool, s.RunID, err)}
	}
	return r, nil
}

// runDecode reads a tool's input strictly: an unknown field (a run id, say)
// is refused, not ignored.
func runDecode(tool string, input json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &runToolError{"invalid_input", fmt.Sprintf("%s input: %v; send the fields its schema lists, and nothing else", tool, err)}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &runToolError{"invalid_input", tool + " input: more than one JSON value; send one object"}
	}
	return nil
}

// runRefusal turns the director's error into the tool's.
func runRefusal(tool string, err error) error {
	code := "host_error"
	switch {
	case errors.Is(err, headless.ErrInvalidInput):
		code = "invalid_input"
	case errors.Is(err, headless.ErrConflict), errors.Is(err, headless.ErrRunEnded):
		code = "conflict"
	}
	return &runToolError{code, fmt.Sprintf("%s refused: %v", tool, err)}
}

func runResult(summary string, fields map[string]any) (json.RawMessage, error) {
	out := map[string]any{"status": "success", "summary": summary}
	for k, v := range fields {
		out[k] = v
	}
	return json.Marshal(out)
}

func (t *runTools) note(ctx context.Context, agentID, sessionID string, input json.RawMessage) (json.RawMessage, error) {
	const tool = rpc.HostToolRunNote
	r, err := t.run(ctx, tool, agentID, sessionID)
	if err != nil {
		return nil, err
	}
	var n headless.Note
	if err := runDecode(tool, input, &n); err != nil {
		return nil, err
	}
	rec, _, err := t.d.AddNote(ctx, r.ID, n, "")
	if err != nil {
		return nil, runRefusal(tool, err)
	}
	summary := fmt.Sprintf("%s noted as %s", n.Type, rec.Ref())
	if n.Type == headless.NoteRequestHelp && t.notify != nil {
		t.notify(r.Agent, fmt.Sprintf("Run %s of %s asks for help: %s (receipt %s; choirctl run show %s).",
			r.ID, r.WorkItem, clipRunes(n.Text, 1500), rec.Ref(), r.ID))
		summary += "; your DM has it"
	}
	return runResult(summary, map[string]any{"receipt": rec.Ref()})
}

func (t *runTools) split(ctx context.Context, agentID, sessionID string, input json.RawMessage) (json.RawMessage, error) {
	const tool = rpc.HostToolRunSplit
	r, err := t.run(ctx, tool, agentID, sessionID)
	if err != nil {
		return nil, err
	}
	var p headless.SplitProposal
	if err := runDecode(tool, input, &p); err != nil {
		return nil, err
	}
	rec, _, err := t.d.RequestSplit(ctx, r.ID, p, "")
	if err != nil {
		return nil, runRefusal(tool, err)
	}
	return runResult(fmt.Sprintf("split request recorded as %s: answer now; the run ends without a commit and the director splits %s (or asks a human)", rec.Ref(), r.WorkItem),
		map[string]any{"receipt": rec.Ref()})
}

func (t *runTools) specChange(ctx context.Context, agentID, sessionID string, input json.RawMessage) (json.RawMessage, error) {
	const tool = rpc.HostToolRunSpecChange
	r, err := t.run(ctx, tool, agentID, sessionID)
	if err != nil {
		return nil, err
	}
	var in struct {
		Paths    []string `json:"paths"`
		Change   string   `json:"change"`
		Evidence []string `json:"evidence"`
	}
	if err := runDecode(tool, input, &in); err != nil {
		return nil, err
	}
	rec, _, err := t.d.RequestSpecChange(ctx, r.ID, headless.SpecChange{Paths: in.Paths, Change: in.Change, Evidence: in.Evidence}, t.exists, "")
	if err != nil {
		return nil, runRefusal(tool, err)
	}
	return runResult(fmt.Sprintf("spec change merged as %s: this run's commit may change %d SPECS file(s)", rec.Ref(), len(in.Paths)),
		map[string]any{"receipt": rec.Ref()})
}

// exists checks an object cited as evidence: present, and its content
// still hashing to its name.
func (t *runTools) exists(h string) error {
	if t.objs == nil {
		return errors.New("no object store")
	}
	rc, err := t.objs.Open(h)
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = io.Copy(io.Discard, rc)
	return err
}

func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// registerRunTools adds the run tools to the lifecycle's host tools.
func registerRunTools(agents *lifecycle.Manager, st *store.Store, d *headless.Director, home config.Home, log *slog.Logger) error {
	objs, err := objects.Open(filepath.Join(home.Dir, "objects"))
	if err != nil {
		return fmt.Errorf("run tools: %w", err)
	}
	for name, h := range runHostTools(st, d, objs, func(agentID, text string) { helpToDM(agents, agentID, text, log) }) {
		agents.HostTools[name] = h
	}
	return nil
}

// helpToDM sends a run's REQUEST_HELP to its agent's DM (the interactive
// session's, else the configured default), through the outbox.
func helpToDM(agents *lifecycle.Manager, agentID, text string, log *slog.Logger) {
	if agents.Outbox == nil {
		return
	}
	dm := ""
	if st, err := agents.Status(agentID); err == nil && st.Bindings != nil {
		dm = st.Bindings.DM
	}
	if dm == "" {
		l, _ := agents.Config()
		dm = l.Config.Agents[agentID].Defaults.DM
	}
	if dm == "" {
		log.Warn("a run's request for help has no DM to go to", "agent_id", agentID)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := agents.Outbox.Deliver(ctx, agentID, dm, rpc.DMSend{Kind: rpc.DMNotice, Text: text}); err != nil {
		log.Warn("a run's request for help was not delivered", "agent_id", agentID, "dm", dm, "error", err.Error())
	}
}
