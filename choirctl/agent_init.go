package main

// choirctl agent init <agent-id> [--repo DIR]
//
// Adds a placeholder entry for the agent to config.json (§17.8): repo.url
// (the --repo path, else empty), ref main, and empty defaults to fill in.
// With --repo, it also creates the per-agent repo there as a bare git
// repository whose first commit is the skeleton: Dockerfile (FROM
// choir-base), identity/SOUL.md, identity/SOUL-CORE.md, tools/ and skills/.
// Without --repo it prints how to create the repo. It never builds or
// starts anything, and it never overwrites an existing agent or repo.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"choir/internal/config"
	"choir/internal/skeleton"
)

func agentInit(ctx context.Context, e *env, args []string) error {
	fset := newFlags(e, "agent init", "agent init <agent-id> [--repo DIR]")
	repo := fset.String("repo", "", "create the per-agent repo as a bare git repository at DIR (new or empty)")
	id, err := oneArg(fset, args, "agent id")
	if err != nil {
		return err
	}
	data, err := os.ReadFile(e.home.ConfigPath())
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s does not exist: run `choirctl init` first", e.home.ConfigPath())
		}
		return err
	}
	repoURL := ""
	if *repo != "" {
		if repoURL, err = filepath.Abs(*repo); err != nil {
			return err
		}
	}
	updated, err := config.AddAgent(data, id, repoURL)
	if err != nil {
		return err
	}
	if repoURL != "" {
		if err := scaffoldBareRepo(ctx, repoURL, skeleton.Agent(), "Agent skeleton from choirctl agent init"); err != nil {
			return fmt.Errorf("create the agent repo at %s: %w", repoURL, err)
		}
	}
	if err := config.WriteFileAtomic(e.home.ConfigPath(), updated, fileMode(e.home.ConfigPath())); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Added agent %q to %s with placeholder defaults.\n", id, e.home.ConfigPath())
	if repoURL != "" {
		fmt.Fprintf(e.stdout, "Created its repo at %s (branch main) with the skeleton:\n", repoURL)
	} else {
		fmt.Fprintf(e.stdout, `No --repo given. Create the agent's repo (any git URL choird can fetch) with
this skeleton, then set agents.%s.repo.url in config.json:
`, id)
	}
	fmt.Fprint(e.stdout, `  Dockerfile            FROM choir-base, plus agent-specific packages and tool builds
  identity/SOUL.md      the edge lane's personality
  identity/SOUL-CORE.md the core lane's personality
  tools/ skills/        agent-specific tools and skills (override global ones by name)
`)
	fmt.Fprintf(e.stdout, `
Next: fill in agents.%s.defaults in config.json (workspace, llm, git_identity
and dm are required; voice_profile, notion and email are optional), and, to
have choird start it again after a crash, agents.%s.restart
({"policy": "on-crash"}; it is off by default). Check with
`+"`choird --check`"+`, then build and start the agent.
`, id, id)
	return nil
}

func fileMode(path string) os.FileMode {
	if fi, err := os.Stat(path); err == nil {
		return fi.Mode().Perm()
	}
	return 0o644
}

// scaffoldBareRepo creates a bare repository at dir (absent, or an empty
// directory) whose first commit on main holds the files of tree.
func scaffoldBareRepo(ctx context.Context, dir string, tree fs.FS, message string) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s exists and is not empty; give a new or empty directory", dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := git(ctx, "", "init", "--quiet", "--bare", "--initial-branch=main", dir); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "choir-agent-init-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if err := git(ctx, "", "init", "--quiet", "--initial-branch=main", work); err != nil {
		return err
	}
	err = fs.WalkDir(tree, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(tree, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(work, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		return err
	}
	if err := git(ctx, work, "add", "--all"); err != nil {
		return err
	}
	if err := git(ctx, work, "-c", "user.name=choirctl", "-c", "user.email=choirctl@localhost", "commit", "--quiet", "-m", message); err != nil {
		return err
	}
	return git(ctx, work, "push", "--quiet", dir, "main:main")
}

// git runs the git CLI, returning its stderr in the error.
func git(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return errors.New("git is not installed (apt-get install git)")
		}
		return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
