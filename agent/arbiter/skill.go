package arbiter

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"choir/agent/skill"
	"choir/agent/tool"
)

// StartTool starts a skill from the registry: {"skill": name, "input": any}.
// It sits in the engine's reserved choir.skill. namespace beside
// choir.skill.transition and choir.skill.finish, so no registered tool can
// take its name and no skill can list it in allowed_tools: a skill cannot
// start another (design §10.2). The arbiter handles it; a lane offers it
// (see StartToolDef) while no skill runs.
const StartTool = skill.ControlToolPrefix + "start"

// Error codes of the skill control calls, beside the tool package's.
const (
	// CodeUnknownSkill: choir.skill.start named no skill of the registry.
	CodeUnknownSkill = "unknown_skill"
	// CodeSkillActive: a skill already runs in the lane.
	CodeSkillActive = "skill_active"
	// CodeNoSkill: choir.skill.transition or finish without a running
	// skill (a lane offers them at every call, for a stable prompt prefix).
	CodeNoSkill = "no_skill_running"
)

// StartToolDef is the LLM view of StartTool for the skills of reg: its
// "skill" member is an enum of their names.
func StartToolDef(reg *skill.Registry) skill.ToolDef {
	names, _ := json.Marshal(reg.Names())
	return skill.ToolDef{
		Name: StartTool,
		Description: "Start one of the skills listed in the system prompt. While it runs you are guided " +
			"state by state: each state has an objective and its own tools, and you leave it with " +
			skill.TransitionTool + ". One skill runs at a time.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"skill":{"type":"string","enum":` + string(names) + `,"description":"The skill to start."},` +
			`"input":{"description":"The skill's input, when it takes one."}},` +
			`"required":["skill"],"additionalProperties":false}`),
	}
}

// startSkill handles StartTool.
func (a *Arbiter) startSkill(inv *invocation, active *skill.Run) Outcome {
	if active != nil {
		return errorOutcome(tool.Errorf(CodeSkillActive, "the skill %q is running; finish it before starting another", active.Skill()))
	}
	if inv.badInput != nil {
		return errorOutcome(tool.Errorf(tool.CodeInvalidInput, "the arguments of %s are not one JSON object: %v", StartTool, inv.badInput))
	}
	var args struct {
		Skill string          `json:"skill"`
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(inv.input, &args); err != nil || args.Skill == "" {
		return errorOutcome(tool.Errorf(tool.CodeInvalidInput, `%s takes {"skill": name, "input": ...}`, StartTool))
	}
	run, err := a.cfg.Skills.Start(args.Skill, args.Input)
	switch {
	case errors.Is(err, skill.ErrUnknownSkill):
		return errorOutcome(tool.Errorf(CodeUnknownSkill, "there is no skill %q; the skills are: %s",
			args.Skill, strings.Join(a.cfg.Skills.Names(), ", ")))
	case err != nil:
		return errorOutcome(tool.Errorf(tool.CodeInvalidInput, "%v", err))
	}
	a.commit(inv.lane, SkillTransition, SkillTransitionPayload{
		ID: inv.p.ID, Job: inv.job, Skill: run.Skill(), On: "start", To: run.State(), Status: string(run.Status()),
	})
	out := stateOutcome(run, fmt.Sprintf("started the skill %s in the state %s", run.Skill(), run.State()))
	out.Started = run
	return out
}

// transition handles choir.skill.transition.
func (a *Arbiter) transition(inv *invocation, run *skill.Run) Outcome {
	var args skill.TransitionArgs
	if inv.badInput != nil || json.Unmarshal(inv.input, &args) != nil {
		return errorOutcome(tool.Errorf(tool.CodeInvalidInput, `%s takes {"on": event}`, skill.TransitionTool))
	}
	from := run.State()
	to, err := run.Transition(args.On)
	if err != nil {
		return a.violation(inv, run, err)
	}
	a.commit(inv.lane, SkillTransition, SkillTransitionPayload{
		ID: inv.p.ID, Job: inv.job, Skill: run.Skill(), From: from, On: args.On, To: to, Status: string(run.Status()),
	})
	return stateOutcome(run, fmt.Sprintf("moved from %s to %s on %s", from, to, args.On))
}

// finishSkill handles choir.skill.finish.
func (a *Arbiter) finishSkill(inv *invocation, run *skill.Run) Outcome {
	var args skill.FinishArgs
	if inv.badInput != nil || json.Unmarshal(inv.input, &args) != nil {
		return errorOutcome(tool.Errorf(tool.CodeInvalidInput, `%s takes {"output": ...}`, skill.FinishTool))
	}
	state := run.State()
	if err := run.Finish(args.Output); err != nil {
		return a.violation(inv, run, err)
	}
	a.commit(inv.lane, SkillTransition, SkillTransitionPayload{
		ID: inv.p.ID, Job: inv.job, Skill: run.Skill(), From: state, On: "finish", To: state, Status: string(run.Status()),
	})
	return stateOutcome(run, "finished the skill "+run.Skill())
}

// violation answers a proposal the skill engine refused. A violation that
// exhausted the retry budget ended the run: that is a transition too.
func (a *Arbiter) violation(inv *invocation, run *skill.Run, err error) Outcome {
	var v *skill.Violation
	if !errors.As(err, &v) {
		// The run ended under us (max_steps, cancel): say so as a tool error.
		return errorOutcome(tool.Errorf(tool.CodeInvalidInput, "the skill %s: %v", run.Skill(), err))
	}
	if v.SkillFailed {
		a.commit(inv.lane, SkillTransition, SkillTransitionPayload{
			ID: inv.p.ID, Job: inv.job, Skill: run.Skill(), From: v.State, On: "fail", To: v.State,
			Status: string(run.Status()), Reason: run.Reason(),
		})
	}
	raw, _ := json.Marshal(v)
	raw, _ = Canonical(raw)
	return Outcome{Status: tool.StatusError, Output: raw}
}

// stateOutcome reports where a run stands after a control call.
func stateOutcome(run *skill.Run, summary string) Outcome {
	fields := map[string]any{"skill": run.Skill(), "skill_status": string(run.Status())}
	if !run.Ended() {
		fields["state"] = run.State()
		fields["objective"] = run.Objective()
		fields["allowed_tools"] = run.AllowedTools()
		fields["transitions"] = run.Transitions()
	}
	return resultOutcome(tool.Success(summary, fields))
}
