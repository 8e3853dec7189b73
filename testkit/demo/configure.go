package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"choir/testkit/hostbench"
)

// The demo's own content: a user, a personality and an example skill.
const (
	demoUser = `# USER

Someone trying choir for the first time, from ` + "`make demo`" + `. Keep answers
short, say what you did, and mention what else you can do.
`
	demoSoul = `# SOUL

A calm, brief assistant that works in the workspace: it lists and reads
files, writes notes, and hands longer work to a core job.
`
	demoSkill = `{
  "name": "take-note",
  "description": "Write a note to notes.md in the workspace.",
  "initial_state": "write",
  "states": {
    "write": {
      "objective": "Append the note to notes.md with choir.fs.write (op append).",
      "allowed_tools": ["choir.fs.write"],
      "transitions": [{"on": "complete", "to": "done"}]
    },
    "done": {"terminal": true}
  },
  "max_steps": 4,
  "interruptible": true
}
`
)

// configure makes the home with choirctl init and agent init, adds the
// demo's content to the repos, and fills config.json and secrets.
func (d *demo) configure(ctx context.Context) error {
	d.agent = "demo"
	repos := filepath.Join(d.work, "repos")
	global, agentRepo := filepath.Join(repos, "global.git"), filepath.Join(repos, "demo.git")
	workspace := filepath.Join(d.work, "workspace")
	if err := os.MkdirAll(workspace, 0o755); err != nil {
		return err
	}
	os.WriteFile(filepath.Join(workspace, "README.txt"), []byte("This is the demo agent's workspace.\n"), 0o644)
	if err := d.giveWorkspace(workspace); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(d.home, "config.json")); err == nil {
		return fmt.Errorf("%s already has a config.json: point CHOIR_DEMO_HOME at a new directory", d.home)
	}
	d.say("choirctl init and agent init in %s", d.home)
	if err := d.ctl(ctx, nil, d.stdout, "init", "--global-repo", global); err != nil {
		return err
	}
	if err := d.ctl(ctx, nil, d.stdout, "agent", "init", d.agent, "--repo", agentRepo); err != nil {
		return err
	}
	if err := commit(ctx, global, map[string]string{"identity/USER.md": demoUser, "skills/take-note.json": demoSkill}); err != nil {
		return err
	}
	if err := commit(ctx, agentRepo, map[string]string{"identity/SOUL.md": demoSoul}); err != nil {
		return err
	}
	db, err := hostbench.ParsePostgres(d.database)
	if err != nil {
		return err
	}
	model := map[string]any{"provider": "demo", "model": d.llm.model, "endpoint": d.llm.endpoint}
	secrets := map[string]string{"demo-git": "demo-git-token-unused"}
	if d.llm.key != "" {
		model["provider"] = "openai-compatible"
		model["secret"] = "llm-key"
		if d.llm.model == "" {
			model["model"] = "gpt-4o-mini"
		}
		secrets["llm-key"] = d.llm.key
	}
	secrets["postgres"] = db.Secret()
	path := filepath.Join(d.home, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		return err
	}
	cfg["postgres"] = db.Config(1, "postgres")
	cfg["workspaces"] = map[string]any{"demo-ws": map[string]any{"path": workspace}}
	cfg["models"] = map[string]any{"demo-model": model}
	cfg["git_identities"] = map[string]any{"demo": map[string]any{"name": "Demo Agent", "email": "demo@choir.local", "secret": "demo-git"}}
	cfg["gateways"] = map[string]any{"console": map[string]any{"type": "console"}}
	cfg["dms"] = map[string]any{"operator": map[string]any{"gateway": "console", "admin": true}}
	agents := cfg["agents"].(map[string]any)
	agent := agents[d.agent].(map[string]any)
	agent["defaults"] = map[string]any{"workspace": "demo-ws", "llm": "demo-model", "git_identity": "demo", "dm": "operator"}
	d.addMail(cfg, agent["defaults"].(map[string]any), secrets)
	out, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return err
	}
	for name, value := range secrets {
		if err := d.ctl(ctx, strings.NewReader(value), nil, "secret", "set", name); err != nil {
			return err
		}
	}
	return exec.CommandContext(ctx, filepath.Join(d.bin, "choird"), "--check", "--home", d.home).Run()
}

// commit adds files to a bare repo's main branch through a scratch clone.
func commit(ctx context.Context, bare string, files map[string]string) error {
	work, err := os.MkdirTemp("", "choir-demo-repo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	git := func(dir string, args ...string) error {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := git("", "clone", "-q", bare, work); err != nil {
		return err
	}
	for name, content := range files {
		p := filepath.Join(work, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	if err := git(work, "add", "-A"); err != nil {
		return err
	}
	if err := git(work, "-c", "user.name=choir demo", "-c", "user.email=demo@choir.local", "commit", "-q", "-m", "The demo's identity and example skill"); err != nil {
		return err
	}
	return git(work, "push", "-q", "origin", "HEAD:main")
}

// giveWorkspace gives the demo's workspace to an unprivileged user when the
// demo runs as root: an agent's tools run as the workspace's owner, and
// choird refuses a root-owned workspace. It is the user behind sudo when
// there is one, else nobody (65534).
func (d *demo) giveWorkspace(dir string) error {
	if os.Getuid() != 0 {
		return nil
	}
	uid, gid := 65534, 65534
	if u, err := strconv.Atoi(os.Getenv("SUDO_UID")); err == nil && u > 0 {
		uid = u
		if g, err := strconv.Atoi(os.Getenv("SUDO_GID")); err == nil {
			gid = g
		}
	}
	d.say("the workspace %s belongs to uid %d (the agent's tools run as its owner, never root)", dir, uid)
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}
