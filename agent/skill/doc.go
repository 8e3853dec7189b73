// Package skill loads SkillSpecs and runs them: the skill state machine of
// design §10, pure and in-process.
//
// A skill is a deterministic state machine that constrains a lane. Each state
// has an objective, the only tools the model may call there and the events
// that leave it; terminal states end the skill. Skills own no locks and commit
// nothing: the arbiter asks the skill's Run whether a proposal is allowed, and
// still validates, locks and executes the tool itself.
//
// Loading (§8.8): LoadDir parses every *.json file in /choir/skills/ against
// the SkillSpec schema (unknown fields refused, faults named by file and JSON
// pointer), validates each machine (initial and target states exist, terminal
// states exist and are dead ends, every state is reachable, every allowed tool
// is registered, schemas compile) and adds the embedded built-ins tool-builder
// and skill-builder. Any fault in any file fails startup, with every fault
// listed at once. The Registry is immutable afterwards.
//
// Running (§10.2): a lane owns at most one *Run at a time, and nothing here
// starts another skill. Before each LLM call the lane calls Step, which
// enforces max_steps, and offers the model the current state's Objective, its
// AllowedTools plus the engine's own Tools: choir.skill.transition, whose "on"
// enum lists the current state's events, or, in a terminal state of a skill
// with an output_schema, choir.skill.finish. The model's proposal goes to
// CheckTool, Transition or Finish. An invalid proposal returns a *Violation,
// which marshals to the structured error the model sees: what was wrong, the
// current state, its allowed tools and its valid transitions.
//
// Violations draw on a retry budget (DefaultRetryBudget, 2): the budget counts
// consecutive rejected proposals and refills when a proposal is accepted, so
// it bounds a correction loop without punishing a long state for an
// occasional slip. The seed (design §10.2, the skill page) says exceeding it
// "triggers a skill-level error transition" but defines no error state in the
// SkillSpec, so the run ends StatusFailed with the reason, and the violation
// that exhausted the budget says skill_failed. Exceeding max_steps likewise
// ends the run failed. Reaching a terminal state ends it StatusDone, at once
// or, when the skill declares an output_schema, once Finish has accepted an
// output that matches it.
//
// Snapshot and Restore carry a run across a crash (§13.4 skill_state): skill
// name, state, status, steps, retries, input, local context and output.
package skill
