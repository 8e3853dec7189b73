package tool

import (
	"context"
	"encoding/json"
	"fmt"

	"choir/agent/skill"
)

// The meta tools of §8.10: they never change anything themselves, never
// hold locks, and only submit a proposal for a human to approve.
const (
	ProposeToolName   = "choir.propose.tool"
	ProposeSkillName  = "choir.propose.skill"
	ProposeConfigName = "choir.propose.config_change"
)

// ProposeFunc submits a proposal for approval (REQUEST_APPROVAL) and says
// how it was recorded: its id and status (pending, unless decided at once).
type ProposeFunc func(ctx context.Context, requestType string, payload json.RawMessage) (approvalID, status string, err error)

// ProposeTool is one meta tool. Its input is checked before anything is
// submitted: a proposed tool must be a valid manifest, a proposed skill a
// valid state machine over known tools.
type ProposeTool struct {
	llm         LLMTool
	requestType string
	check       func(json.RawMessage) error
	submit      ProposeFunc
}

var _ Tool = (*ProposeTool)(nil)

// ProposeTools returns choir.propose.tool, choir.propose.skill and
// choir.propose.config_change, submitting through submit. known tells which
// tool names a proposed skill may use.
func ProposeTools(submit ProposeFunc, known func(string) bool) []Tool {
	return []Tool{
		&ProposeTool{
			llm: LLMTool{Name: ProposeToolName, Description: "Propose a new or changed tool for human approval: its manifest (the LLM view and the runtime view) and why. Nothing is installed until a human approves and the image is rebuilt.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"manifest":{"type":"object","description":"{\"llm\":{name, description, input_schema}, \"runtime\":{timeout_ms, locks, network, secret_resources, side_effect, idempotent, version}}"},"rationale":{"type":"string","minLength":1}},"required":["manifest","rationale"],"additionalProperties":false}`)},
			requestType: "tool",
			check:       checkProposedManifest,
			submit:      submit,
		},
		&ProposeTool{
			llm: LLMTool{Name: ProposeSkillName, Description: "Propose a new or changed skill (a SkillSpec state machine) for human approval, with why. Nothing is installed until a human approves and the image is rebuilt.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"spec":{"type":"object","description":"the SkillSpec: name, description, initial_state, states, max_steps"},"rationale":{"type":"string","minLength":1}},"required":["spec","rationale"],"additionalProperties":false}`)},
			requestType: "skill",
			check:       func(in json.RawMessage) error { return checkProposedSkill(in, known) },
			submit:      submit,
		},
		&ProposeTool{
			llm: LLMTool{Name: ProposeConfigName, Description: "Propose a configuration change for human approval: what to change and why.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"change":{"type":"string","minLength":1},"rationale":{"type":"string","minLength":1}},"required":["change","rationale"],"additionalProperties":false}`)},
			requestType: "config_change",
			check:       func(json.RawMessage) error { return nil },
			submit:      submit,
		},
	}
}

func (t *ProposeTool) Name() string { return t.llm.Name }
func (t *ProposeTool) LLM() LLMTool { return t.llm }
func (t *ProposeTool) Runtime() Runtime {
	return Runtime{Timeout: DefaultTimeout, SideEffect: SideEffectExternal, Exposure: ExposeBoth, Version: "1"}
}

// Locks: meta tools never hold locks (§8.10).
func (t *ProposeTool) Locks(json.RawMessage) ([]LockReq, error) { return nil, nil }

// Execute checks the proposal and submits it.
func (t *ProposeTool) Execute(ctx context.Context, input json.RawMessage, env Env) (Result, error) {
	if err := t.check(input); err != nil {
		return Result{}, err
	}
	id, status, err := t.submit(ctx, t.requestType, input)
	if err != nil {
		return Result{}, Errorf(CodeHost, "the proposal was not submitted: %v", err)
	}
	return Success(fmt.Sprintf("proposal %s submitted for approval (%s); a human decides", id, status),
		map[string]any{"approval_id": id, "approval_status": status}), nil
}

func checkProposedManifest(input json.RawMessage) error {
	var in struct {
		Manifest json.RawMessage `json:"manifest"`
	}
	json.Unmarshal(input, &in)
	m, err := ParseManifest("proposed manifest", in.Manifest)
	if err != nil {
		return Errorf(CodeInvalidInput, "the proposed manifest is not valid: %v", err)
	}
	if msg := NameProblem(m.LLM.Name); msg != "" {
		return PathErrorf(CodeInvalidInput, "/manifest/llm/name", "%s", msg)
	}
	return nil
}

func checkProposedSkill(input json.RawMessage, known func(string) bool) error {
	var in struct {
		Spec json.RawMessage `json:"spec"`
	}
	json.Unmarshal(input, &in)
	spec, err := skill.Parse("proposed skill", in.Spec)
	if err != nil {
		return Errorf(CodeInvalidInput, "the proposed skill does not parse: %v", err)
	}
	if known == nil {
		known = func(string) bool { return false }
	}
	if err := skill.Validate(spec, known); err != nil {
		return Errorf(CodeInvalidInput, "the proposed skill is not a valid state machine: %v", err)
	}
	return nil
}
