package lifecycle

import (
	"fmt"
	"sort"
	"strings"

	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/rpc"
)

// SessionOf returns the running agent whose session this is.
func (m *Manager) SessionOf(sessionID string) (agentID string, ok bool) {
	r := m.bySession(sessionID)
	if r == nil {
		return "", false
	}
	return r.AgentID, true
}

// Cores lists an agent's core jobs as its lanes last reported them (lanes
// named core:<job>).
func (m *Manager) Cores(agentID string) ([]rpc.StatusReq, error) {
	r := m.run(agentID)
	if r == nil {
		return nil, fmt.Errorf("%s: %w", agentID, ErrNotRunning)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []rpc.StatusReq
	for name, st := range r.lanes {
		if strings.HasPrefix(name, "core:") {
			out = append(out, st)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Lane < out[j].Lane })
	return out, nil
}

// CancelCore asks the agent to cancel one core job by name.
func (m *Manager) CancelCore(agentID, job string) error {
	return m.push(agentID, rpc.EventCancel, rpc.CancelCore{JobName: job})
}

// Compact asks the agent to compact its working memory now.
func (m *Manager) Compact(agentID string) error {
	return m.push(agentID, rpc.EventCompact, struct{}{})
}

func (m *Manager) push(agentID, typ string, data any) error {
	r := m.run(agentID)
	if r == nil || r.getState() != StateRunning {
		return fmt.Errorf("%s: %w", agentID, ErrNotRunning)
	}
	if _, ok := m.Sessions.Publish(r.SessionID, typ, data); !ok {
		return fmt.Errorf("%s: %w", agentID, ErrNotRunning)
	}
	return nil
}

// Model returns the model and voice profile a running agent uses now.
func (m *Manager) Model(agentID string) (llm, voice string, err error) {
	r := m.run(agentID)
	if r == nil {
		return "", "", fmt.Errorf("%s: %w", agentID, ErrNotRunning)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Bindings.LLM, r.Bindings.VoiceProfile, nil
}

// SetModel switches a running agent's models (edge, core jobs, summary)
// or its voice profile until it restarts (§17.1: overrides are
// transient); an empty name leaves that binding as it is. Every name is
// checked before any is applied, so a bad one changes nothing. The caller
// bumps the config version so the agent fetches the change (and the new
// models' keys) at once.
func (m *Manager) SetModel(agentID string, c ctl.ModelChoice) error {
	l, _ := m.Config()
	for _, name := range []string{c.LLM, c.CoreLLM, c.SummaryLLM} {
		if _, ok := l.Config.Models[name]; name != "" && !ok {
			return fmt.Errorf("no model named %q (have: %s)", name, strings.Join(config.SortedNames(l.Config.Models), ", "))
		}
	}
	if _, ok := l.Config.VoiceProfiles[c.VoiceProfile]; c.VoiceProfile != "" && !ok {
		return fmt.Errorf("no voice profile named %q (have: %s)", c.VoiceProfile, strings.Join(config.SortedNames(l.Config.VoiceProfiles), ", "))
	}
	r := m.run(agentID)
	if r == nil {
		return fmt.Errorf("%s: %w", agentID, ErrNotRunning)
	}
	r.mu.Lock()
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&r.Bindings.LLM, c.LLM)
	set(&r.Bindings.CoreLLM, c.CoreLLM)
	set(&r.Bindings.SummaryLLM, c.SummaryLLM)
	set(&r.Bindings.VoiceProfile, c.VoiceProfile)
	r.mu.Unlock()
	m.logf(r, "model settings changed", "llm", c.LLM, "core_llm", c.CoreLLM, "summary_llm", c.SummaryLLM, "voice_profile", c.VoiceProfile)
	return nil
}
