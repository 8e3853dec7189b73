package lifecycle

import "fmt"

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
