package lane

import (
	"context"
	"errors"
	"fmt"

	"choir/agent/arbiter"
	"choir/agent/lock"
	"choir/agent/tool"
	"choir/internal/openai"
)

// cycle answers one user message: IDLE -> CONTEXT_READY -> REASONING ⇄
// WAITING_TOOL -> FINALIZING -> IDLE. The error is fatal to the lane (ctx
// ended, the arbiter stopped); a failed model call is not an error but the
// reply (§7.7).
func (l *Lane) cycle(ctx context.Context, it item) error {
	a := l.edge
	a.takeHalt()
	l.sm.to(EdgeContextReady, "UserMessage")
	l.mu.Lock()
	l.turnCores = nil
	l.mu.Unlock()
	if it.resumed > 0 {
		a.pin = it.resumed
	} else {
		ev, err := l.cfg.Arbiter.Record(ctx, lock.Edge, arbiter.UserMsg, userPayload{Attachments: it.msg.Attachments, ID: it.msg.ID, Text: it.msg.Text})
		if err != nil {
			return l.abort(it, err)
		}
		a.pin = ev.Rev
	}
	a.sync()
	l.sm.to(EdgeReasoning, "inject memory context, call LLM")
	text, failed, err := l.reason(ctx)
	if err != nil {
		return l.abort(it, err)
	}
	l.mu.Lock()
	r := Reply{ReplyTo: it.msg.ID, Text: text, Error: failed, Cores: l.turnCores}
	l.mu.Unlock()
	switch {
	case it.reply != nil:
		it.reply <- r
	case l.cfg.Reply != nil:
		l.cfg.Reply(r)
	}
	l.sm.to(EdgeIdle, "result delivered")
	return nil
}

// abort ends a cycle the lane cannot finish; Handle's caller learns that
// the lane stopped.
func (l *Lane) abort(it item, err error) error {
	if it.reply != nil {
		close(it.reply)
	}
	return err
}

// reason runs the model and the tools it asks for until the model answers
// in text (REASONING -> FINALIZING on Finish), a call fails (on LLM error),
// or the turn reaches MaxSteps. failed marks a reply that reports a
// failure.
func (l *Lane) reason(ctx context.Context) (text string, failed bool, err error) {
	a := l.edge
	for step := 0; ; step++ {
		if err := a.deliverInjections(ctx); err != nil {
			return "", false, err
		}
		if step == l.cfg.MaxSteps {
			text = fmt.Sprintf("I stopped after %d model calls without finishing; tell me how to go on.", step)
			l.sm.to(EdgeFinalizing, "Finish")
			return text, true, a.fail(ctx, "", "max_steps exceeded", text)
		}
		a.setSteps(step + 1)
		if err := a.stepSkill(ctx); err != nil {
			return "", false, err
		}
		set := a.settings()
		req, names, err := a.request(set)
		if err != nil {
			l.sm.to(EdgeFinalizing, "LLM error")
			return "the lane failed: " + err.Error(), true, a.fail(ctx, set.Model, err.Error(), err.Error())
		}
		resp, err := a.call(ctx, req, set)
		if err != nil {
			if ctx.Err() != nil {
				return "", false, ctx.Err()
			}
			text = "the model failed: " + err.Error()
			var be *BudgetError
			if errors.As(err, &be) {
				text = "I cannot call the model: " + be.Error() + ". Budgets are never reset during a session; start a new session to go on."
			}
			l.sm.to(EdgeFinalizing, "LLM error")
			return text, true, a.fail(ctx, req.Model, err.Error(), text)
		}
		ev, err := a.recordOutput(ctx, req.Model, resp)
		if err != nil {
			return "", false, err
		}
		a.sync()
		a.maybeCompact()
		if len(resp.ToolCalls) == 0 {
			l.sm.to(EdgeFinalizing, "Finish")
			if resp.Content == "" && resp.Refusal != "" {
				return resp.Refusal, false, nil
			}
			return resp.Content, false, nil
		}
		for i, tc := range resp.ToolCalls {
			id := fmt.Sprintf("%s/%d/%d", a.owner, ev.Rev, i)
			name := a.canonical(tc.Name, names)
			if name == SpawnTool {
				// The core starts in the background: no waiting.
				l.sm.to(EdgeReasoning, "choir.core.spawn")
				err = l.edgeTool(ctx, id, tc, name)
			} else {
				l.sm.to(EdgeWaitingTool, "ToolProposal")
				err = l.edgeTool(ctx, id, tc, name)
				l.sm.to(EdgeReasoning, "ToolResult")
			}
			if err != nil {
				return "", false, err
			}
			if why := a.takeHalt(); why != "" {
				// The loop breaker stopped the turn; the calls left are
				// answered as cut short (pairCalls).
				text = "I stopped this turn: " + why + ". Tell me how to go on, or ask me differently."
				l.sm.to(EdgeFinalizing, "Finish")
				return text, true, a.fail(ctx, "", arbiter.CodeLoopHalted, text)
			}
		}
		a.sync()
		a.maybeCompact()
	}
}

// takeHalt returns and clears why the loop breaker stopped the lane.
func (a *actor) takeHalt() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	why := a.halt
	a.halt = ""
	return why
}

// edgeTool runs one of the edge's tool calls, or refuses it: a tool with
// side effects while core jobs run, or any call past
// max_tool_calls_per_session.
func (l *Lane) edgeTool(ctx context.Context, id string, tc openai.ToolCall, name string) error {
	a := l.edge
	if n := l.coresRunning(); n > 0 && !readOnly[name] && a.offered[name] {
		return a.refuse(ctx, id, tc, name, tool.Errorf(CodeCoresRunning,
			"%s is not available while core jobs run (%d running); use read-only tools, or wait for the jobs to end, or cancel them with %s", name, n, CancelTool))
	}
	if err := l.session.takeTool(); err != nil {
		return a.refuse(ctx, id, tc, name, err.(*BudgetError).toolError())
	}
	return a.propose(ctx, id, tc, name)
}

// deliverInjections appends pending /inject texts to the edge's context:
// called at its safe points (idle, and before each model call, once the
// previous reply's tool calls are all answered).
func (a *actor) deliverInjections(ctx context.Context) error {
	if a.job != nil {
		return a.job.deliver(ctx)
	}
	for _, in := range a.l.takeInbox() {
		if _, err := a.l.cfg.Arbiter.Record(ctx, a.owner, arbiter.InjectedInstruction, injectionPayload{From: "user", ID: in.ID, Text: in.Text}); err != nil {
			return err
		}
	}
	a.sync()
	return nil
}
