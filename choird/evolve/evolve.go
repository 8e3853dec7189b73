// Package evolve carries out approved proposals (design §8.10, §20): what
// happens after a human approves an agent's request to change its own
// capabilities. Nothing here runs without that approval, and the model
// never supplies code that runs:
//
//   - skill: the proposed SkillSpec is committed as skills/<name>.json onto
//     the agent repo's configured branch, as the agent's git identity;
//     then the agent is built and updated, and has the skill.
//   - tool: the proposed manifest is committed to a branch
//     proposal/<session>/<tool> of the agent repo, never to the configured
//     branch: a person writes and reviews the implementation there (§8.10,
//     two-phase registration), merges it, and runs agent update.
//   - repo_change: the agent pushed a branch proposal/<session>/<what> of
//     its repo; it is merged into the configured branch (a conflict merges
//     nothing), then the agent is built and updated. A rejected branch is
//     left for inspection.
//   - config_change: config.json is the operator's; the approval tells
//     them what to do (config load, diff, apply).
//
// Each step and its outcome is told in the agent's DM.
package evolve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"choir/agent/skill"
	"choir/agent/tool"
	"choir/choird/approval"
	"choir/choird/repo"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/rpc"
)

// Request types of the proposals an Applier knows.
const (
	TypeSkill        = "skill"
	TypeTool         = "tool"
	TypeRepoChange   = "repo_change"
	TypeConfigChange = "config_change"
)

// Applier carries out approved proposals.
type Applier struct {
	// Config is the running configuration.
	Config func() *config.Loaded
	// Bindings are a running agent's bindings (its git identity); false
	// when it does not run.
	Bindings func(agentID string) (rpc.ResourceBindings, bool)
	// Update builds the agent's image and, when it runs, restarts it on
	// the new one (agent update).
	Update func(ctx context.Context, agentID string, progress func(string)) ctl.UpdateResult
	// Tell sends a notice to the agent's DM.
	Tell func(ctx context.Context, agentID, text string)
	Log  *slog.Logger

	mu     sync.Mutex
	agents map[string]*sync.Mutex // one apply at a time per agent
}

// Apply carries out one approved proposal, telling the DM as it goes. It
// is approval.Config.Apply.
func (a *Applier) Apply(ctx context.Context, ap approval.Approval) {
	lk := a.agentLock(ap.AgentID)
	lk.Lock()
	defer lk.Unlock()
	log := a.Log.With("approval_id", ap.ID, "agent_id", ap.AgentID, "request_type", ap.RequestType)
	say := func(format string, args ...any) { a.Tell(ctx, ap.AgentID, fmt.Sprintf(format, args...)) }
	var err error
	switch ap.RequestType {
	case TypeSkill:
		err = a.skill(ctx, ap, say)
	case TypeTool:
		err = a.tool(ctx, ap, say)
	case TypeRepoChange:
		err = a.repoChange(ctx, ap, say)
	case TypeConfigChange:
		var p struct{ Change string }
		json.Unmarshal(ap.Payload, &p)
		say("Approved configuration change: %s\nconfig.json is the operator's to edit: make the change, then run choirctl config load, config diff and config apply.", p.Change)
	default:
		log.Info("approved; nothing for choird to apply")
		return
	}
	if err != nil {
		log.Warn("approved proposal not applied", "error", err.Error())
		say("The approved %s was not applied: %v", ap.RequestType, err)
		return
	}
	log.Info("approved proposal applied")
}

func (a *Applier) agentLock(id string) *sync.Mutex {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.agents == nil {
		a.agents = map[string]*sync.Mutex{}
	}
	if a.agents[id] == nil {
		a.agents[id] = new(sync.Mutex)
	}
	return a.agents[id]
}

// target is the agent's repo and the identity its commits are made as:
// the running session's git identity, else the agent's default.
func (a *Applier) target(agentID string) (config.Repo, repo.Author, error) {
	l := a.Config()
	ag, ok := l.Config.Agents[agentID]
	if !ok {
		return config.Repo{}, repo.Author{}, fmt.Errorf("agent %s is no longer in config.json", agentID)
	}
	name := ag.Defaults.GitIdentity
	if b, ok := a.Bindings(agentID); ok && b.GitIdentity != "" {
		name = b.GitIdentity
	}
	id, ok := l.Config.GitIdentities[name]
	if !ok {
		return config.Repo{}, repo.Author{}, fmt.Errorf("agent %s has no git identity to commit as (git_identities.%q)", agentID, name)
	}
	return ag.Repo, repo.Author{Name: id.Name, Email: id.Email}, nil
}

func (a *Applier) skill(ctx context.Context, ap approval.Approval, say func(string, ...any)) error {
	var p struct {
		Spec      json.RawMessage `json:"spec"`
		Rationale string          `json:"rationale"`
	}
	if err := json.Unmarshal(ap.Payload, &p); err != nil {
		return fmt.Errorf("the proposal is not a skill proposal: %v", err)
	}
	spec, err := skill.Parse("the proposed skill", p.Spec)
	if err != nil {
		return err
	}
	body, err := indent(p.Spec)
	if err != nil {
		return err
	}
	r, author, err := a.target(ap.AgentID)
	if err != nil {
		return err
	}
	file := "skills/" + spec.Name + ".json"
	commit, err := repo.Publish(ctx, r, "", map[string][]byte{file: body}, author,
		commitMessage("skill "+spec.Name, p.Rationale, ap))
	if err != nil {
		return fmt.Errorf("commit %s to the agent repo: %w", file, err)
	}
	say("Approved skill %s: committed %s (%s) to the agent repo as %s. Building and updating the agent…", spec.Name, commit[:repo.ShortLen], file, author.Name)
	return a.rollOut(ctx, ap.AgentID, say, "the skill "+spec.Name)
}

func (a *Applier) tool(ctx context.Context, ap approval.Approval, say func(string, ...any)) error {
	var p struct {
		Manifest  json.RawMessage `json:"manifest"`
		Rationale string          `json:"rationale"`
	}
	if err := json.Unmarshal(ap.Payload, &p); err != nil {
		return fmt.Errorf("the proposal is not a tool proposal: %v", err)
	}
	m, err := tool.ParseManifest("the proposed manifest", p.Manifest)
	if err != nil {
		return err
	}
	if msg := tool.NameProblem(m.LLM.Name); msg != "" {
		return errors.New(msg)
	}
	body, err := indent(p.Manifest)
	if err != nil {
		return err
	}
	r, author, err := a.target(ap.AgentID)
	if err != nil {
		return err
	}
	branch := proposalBranch(ap.SessionID, m.LLM.Name)
	file := "tools/" + m.LLM.Name + ".json"
	commit, err := repo.Publish(ctx, r, branch, map[string][]byte{file: body}, author,
		commitMessage("tool "+m.LLM.Name+" (manifest only)", p.Rationale, ap))
	if err != nil {
		return fmt.Errorf("commit %s to branch %s: %w", file, branch, err)
	}
	say("Approved tool %s: its manifest is committed (%s) on branch %s of the agent repo. "+
		"It runs only once a person has written and reviewed its implementation (tools/%s, or a source directory tools/%s/) on that branch and merged it; "+
		"then run choirctl agent update %s.", m.LLM.Name, commit[:repo.ShortLen], branch, m.LLM.Name, m.LLM.Name, ap.AgentID)
	return nil
}

func (a *Applier) repoChange(ctx context.Context, ap approval.Approval, say func(string, ...any)) error {
	var p struct {
		Branch      string `json:"branch"`
		Description string `json:"description"`
	}
	if err := json.Unmarshal(ap.Payload, &p); err != nil {
		return fmt.Errorf("the proposal is not a repo change: %v", err)
	}
	// A session may only have its own proposal branches merged.
	if want := "proposal/" + ap.SessionID + "/"; ap.SessionID == "" || !strings.HasPrefix(p.Branch, want) || len(p.Branch) == len(want) {
		return fmt.Errorf("branch %q is not one of this session's proposal branches (%s<description>)", p.Branch, want)
	}
	r, author, err := a.target(ap.AgentID)
	if err != nil {
		return err
	}
	commit, err := repo.Merge(ctx, r, p.Branch, author, commitMessage("merge "+p.Branch, p.Description, ap))
	if err != nil {
		if errors.Is(err, repo.ErrConflict) {
			return fmt.Errorf("%w; nothing was merged, and the branch is left as it is", err)
		}
		return err
	}
	say("Approved repo change %s: merged as %s into the agent repo. Building and updating the agent…", p.Branch, commit[:repo.ShortLen])
	return a.rollOut(ctx, ap.AgentID, say, "the change")
}

// rollOut builds and updates the agent and says how it went.
func (a *Applier) rollOut(ctx context.Context, agentID string, say func(string, ...any), what string) error {
	res := a.Update(ctx, agentID, nil)
	switch res.Outcome {
	case ctl.UpdateRedeployed:
		say("%s now runs %s with %s (its session resumed).", agentID, res.Image, what)
	case ctl.UpdateBuilt, ctl.UpdateSkipped:
		say("%s's image %s has %s; the agent is stopped and gets it at its next start.", agentID, res.Image, what)
	default:
		return fmt.Errorf("the commit is in the repo, but the update failed: %s", res.Detail)
	}
	return nil
}

// proposalBranch is proposal/<session>/<what>, what cleaned to a branch
// name's characters.
func proposalBranch(session, what string) string {
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '-'
	}, what)
	if session == "" {
		session = "operator"
	}
	return "proposal/" + session + "/" + strings.Trim(clean, ".-")
}

func commitMessage(subject, why string, ap approval.Approval) string {
	msg := subject
	if why = strings.TrimSpace(why); why != "" {
		msg += "\n\n" + why
	}
	return msg + fmt.Sprintf("\n\nProposed by agent %s (session %s), approved by %s (approval %s).", ap.AgentID, ap.SessionID, ap.ResolvedBy, ap.ID)
}

func indent(raw json.RawMessage) ([]byte, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}
