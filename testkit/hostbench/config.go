package hostbench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"choir/internal/config"
	"choir/testkit"
)

// Fleet is the agents a benchmark configures: <Prefix>-1 … <Prefix>-N,
// each with its own workspace, git identity and Telegram DM (leases are
// exclusive), all from one agent repo and on one model.
type Fleet struct {
	N        int
	Prefix   string // agent ids: "sc" for sc-1 …
	Name     string // in the git identities and the unused secrets: "scale"
	PoolSize int    // choird's Postgres pool
	Model    string // the model's endpoint, http://host:port/v1
	Telegram string // the fake Telegram's host:port
	// Set, when not nil, sets further keys of config.json.
	Set func(cfg map[string]any)
}

// AgentID is the id of the fleet's ith agent, from 1.
func (f Fleet) AgentID(i int) string { return f.Prefix + "-" + strconv.Itoa(i) }

// Configure makes the home with choirctl init and agent init (one agent
// repo for all, in Work/repos), then writes the fleet into its
// config.json and sets the secrets it names.
func (h *Host) Configure(ctx context.Context, f Fleet) error {
	repos := filepath.Join(h.Work, "repos")
	if err := h.Ctl(ctx, nil, io.Discard, "init", "--global-repo", filepath.Join(repos, "global.git")); err != nil {
		return err
	}
	agentRepo := filepath.Join(repos, f.Prefix+".git")
	if err := h.Ctl(ctx, nil, io.Discard, "agent", "init", f.AgentID(1), "--repo", agentRepo); err != nil {
		return err
	}
	db, err := ParsePostgres(h.DBURL)
	if err != nil {
		return err
	}
	path := config.Home{Dir: h.Home}.ConfigPath()
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	cfg["postgres"] = db.Config(f.PoolSize, "postgres")
	cfg["models"] = map[string]any{"m": map[string]any{"provider": "demo", "model": "choir-demo", "endpoint": f.Model}}
	cfg["gateways"] = map[string]any{"bot": map[string]any{"type": "telegram", "secret": "tg", "api_base": "http://" + f.Telegram}}
	title := strings.ToUpper(f.Name[:1]) + f.Name[1:]
	workspaces, idents, dms, agents := map[string]any{}, map[string]any{}, map[string]any{}, map[string]any{}
	for i := 1; i <= f.N; i++ {
		id := f.AgentID(i)
		ws := filepath.Join(h.Work, "ws", strconv.Itoa(i))
		if err := testkit.MakeWorkspace(ws); err != nil {
			return err
		}
		workspaces["ws-"+id] = map[string]any{"path": ws}
		idents["git-"+id] = map[string]any{"name": title + " " + id, "email": id + "@choir.local", "secret": "git-token"}
		dms["dm-"+id] = map[string]any{"gateway": "bot", "user_id": strconv.Itoa(700000 + i), "admin": i == 1}
		agents[id] = map[string]any{"repo": map[string]any{"url": agentRepo, "ref": "main"},
			"defaults": map[string]any{"workspace": "ws-" + id, "llm": "m", "git_identity": "git-" + id, "dm": "dm-" + id}}
	}
	cfg["workspaces"], cfg["git_identities"], cfg["dms"], cfg["agents"] = workspaces, idents, dms, agents
	if f.Set != nil {
		f.Set(cfg)
	}
	// Indented, as a person writes it: 10,000 agents take 5.6 MiB, within
	// config.json's 16 MiB limit.
	out, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return err
	}
	secrets := map[string]string{"postgres": db.Secret(), "git-token": f.Name + "-git-token-unused", "tg": "7001:" + f.Name + "-bench-Token"}
	for name, value := range secrets {
		if err := h.Ctl(ctx, strings.NewReader(value), io.Discard, "secret", "set", name); err != nil {
			return err
		}
	}
	return nil
}
