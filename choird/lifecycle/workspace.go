package lifecycle

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"choir/choird/lease"
	"choir/internal/config"
	"choir/internal/ctl"
)

// Workspaces lists the configured workspaces and who leases each.
func (m *Manager) Workspaces() []ctl.Workspace {
	l, _ := m.Config()
	var out []ctl.Workspace
	for _, name := range config.SortedNames(l.Config.Workspaces) {
		holder, _ := m.Leases.Holder(lease.Resource{Kind: lease.Workspace, Name: name})
		out = append(out, ctl.Workspace{Name: name, Path: l.Config.Workspaces[name].Path, Holder: holder})
	}
	return out
}

// ResetWorkspace empties a workspace (WS-1: it is never authoritative),
// stopping the agent that leases it first. The directory itself stays;
// symlinks inside are removed, never followed.
func (m *Manager) ResetWorkspace(ctx context.Context, name string) (ctl.ResetResult, error) {
	l, _ := m.Config()
	ws, ok := l.Config.Workspaces[name]
	if !ok {
		return ctl.ResetResult{}, fmt.Errorf("no workspace named %q in config.json (have: %s)", name, strings.Join(config.SortedNames(l.Config.Workspaces), ", "))
	}
	res := ctl.ResetResult{Workspace: name}
	if holder, held := m.Leases.Holder(lease.Resource{Kind: lease.Workspace, Name: name}); held {
		if err := m.Stop(ctx, holder); err != nil {
			return res, fmt.Errorf("stop %s, which leases workspace %q: %w", holder, name, err)
		}
		res.StoppedAgent = holder
	}
	entries, err := os.ReadDir(ws.Path)
	if err != nil {
		return res, fmt.Errorf("read workspace %q: %w", name, err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(ws.Path, e.Name())); err != nil {
			return res, fmt.Errorf("empty workspace %q: %w", name, err)
		}
		res.RemovedEntries++
	}
	m.Log.Info("workspace reset", "workspace", name, "path", ws.Path, "stopped_agent", res.StoppedAgent, "removed_entries", res.RemovedEntries)
	return res, nil
}
