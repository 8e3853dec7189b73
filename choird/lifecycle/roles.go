package lifecycle

import (
	"fmt"
	"strings"

	"choir/internal/config"
)

// Roles returns the core jobs' and the session summary's models a running
// agent uses now ("" means the edge's llm).
func (m *Manager) Roles(agentID string) (core, summary string, err error) {
	r := m.run(agentID)
	if r == nil {
		return "", "", fmt.Errorf("%s: %w", agentID, ErrNotRunning)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Bindings.CoreLLM, r.Bindings.SummaryLLM, nil
}

// SetRoles switches a running agent's core or summary model until it
// restarts, as SetModel does the edge's; an empty name leaves that role as
// it is. The caller bumps the config version so the agent fetches the
// change and the new models' keys.
func (m *Manager) SetRoles(agentID, core, summary string) error {
	if core == "" && summary == "" {
		return nil
	}
	l, _ := m.Config()
	for _, name := range []string{core, summary} {
		if _, ok := l.Config.Models[name]; name != "" && !ok {
			return fmt.Errorf("no model named %q (have: %s)", name, strings.Join(config.SortedNames(l.Config.Models), ", "))
		}
	}
	r := m.run(agentID)
	if r == nil {
		return fmt.Errorf("%s: %w", agentID, ErrNotRunning)
	}
	r.mu.Lock()
	if core != "" {
		r.Bindings.CoreLLM = core
	}
	if summary != "" {
		r.Bindings.SummaryLLM = summary
	}
	r.mu.Unlock()
	m.logf(r, "model settings changed", "core_llm", core, "summary_llm", summary)
	return nil
}
