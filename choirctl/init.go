package main

// choirctl init [--global-repo DIR]
//
// Creates the home directory (~/.choir.d) with socks/, logs/ and repos/, a
// skeleton config.json and an empty secrets.json (mode 0600), then prints
// the next steps. It refuses to touch an existing config.json. It does not
// create Postgres schemas: choird does that on its first start. With
// --global-repo it also creates the global repo there, a bare git repo
// whose first commit holds the reference Dockerfile.base, identity/USER.md,
// SOUL.md, SOUL-CORE.md, tools/ and skills/, and points global_repo.url at it.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"choir/internal/config"
	"choir/internal/skeleton"
)

func runInit(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "init", "init [--global-repo DIR]")
	globalRepo := fs.String("global-repo", "", "create the global repo as a bare git repository at DIR (new or empty)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("init takes no arguments")
	}
	h := e.home
	if _, err := os.Stat(h.ConfigPath()); err == nil {
		return fmt.Errorf("%s already exists; init never overwrites a configuration (edit it, or move it away first)", h.ConfigPath())
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, dir := range []string{h.Dir, h.SocksDir(), h.LogsDir(), filepath.Join(h.ReposDir(), "global"), filepath.Join(h.ReposDir(), "agents")} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
	}
	if _, err := os.Stat(h.SecretsPath()); errors.Is(err, os.ErrNotExist) {
		if err := config.WriteFileAtomic(h.SecretsPath(), []byte("{}\n"), 0o600); err != nil {
			return err
		}
	}
	cfg := config.Skeleton()
	if *globalRepo != "" {
		dir, err := filepath.Abs(*globalRepo)
		if err != nil {
			return err
		}
		if err := scaffoldBareRepo(ctx, dir, skeleton.Global(), "Global skeleton from choirctl init"); err != nil {
			return fmt.Errorf("create the global repo at %s: %w", dir, err)
		}
		if cfg, err = config.SetGlobalRepo(cfg, dir); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "Created the global repo at %s (branch main).\n", dir)
	}
	if err := config.WriteFileAtomic(h.ConfigPath(), cfg, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, `Created %s:
  config.json    static resource configuration (a skeleton: fill it in)
  secrets.json   secret values, mode 0600 (set them with choirctl secret set)
  socks/ logs/ repos/

Next steps:
  1. Run Postgres with pgvector and create the database (CREATE DATABASE choir);
     choird creates the per-agent schemas itself on its first start.
  2. Put the admin credentials in a secret:  choirctl secret set postgres 'user:password'
  3. In config.json, configure at least one model (and its API key secret),
     one workspace, one git identity, one Telegram gateway bot (and its token
     secret), one DM, and the global repo.
  4. Add an agent:  choirctl agent init <agent-id> [--repo DIR]
  5. Check everything:  choird --check
  6. Start the daemon:  choird
`, h.Dir)
	return nil
}
