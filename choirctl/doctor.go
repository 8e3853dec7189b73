package main

// choirctl doctor [--json]
//
// Checks the installation and prints one line a check: ok, warn, fail or
// skip, what was found, and for anything not ok what to do. It works
// whether or not choird is running, and changes nothing. Checked: the config
// (as `choird --check`), the secrets file's owner and mode, the socket
// directory and sockets, choird running and healthy (with its uptime), the
// Docker engine (version, API version, storage driver, free space of its
// data root), Postgres (reached with the configured secret, its version,
// the vector extension), the base image and each agent's image (present,
// built from its repos' heads), the size of the log directory, and the
// clock (against a model endpoint's Date header; skipped offline). A check
// that hangs is cut off after a few seconds and reported as failed.
//
// The checks run in `choird --doctor`, which this command runs: the engine
// and Postgres are reached through choird's own clients, which choirctl
// does not link (DESIGN.md, "choirctl doctor"). choird is looked for beside
// choirctl's executable, then on PATH.
//
// Exit status 0 when nothing failed, 1 otherwise. --json prints the report
// as JSON for scripts.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

func runDoctor(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "doctor", "doctor [--json]")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("doctor takes no arguments")
	}
	bin, err := findChoird()
	if err != nil {
		return err
	}
	cmdArgs := []string{"--doctor", "--home", e.home.Dir}
	if *asJSON {
		cmdArgs = append(cmdArgs, "--json")
	}
	cmd := exec.CommandContext(ctx, bin, cmdArgs...)
	cmd.Stdout, cmd.Stderr = e.stdout, e.stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return errors.New("the installation has problems: see the fail lines")
	case errors.As(err, &exit) && exit.ExitCode() == 2:
		return fmt.Errorf("%s does not know --doctor: it is older than this choirctl; install the choird built with it", bin)
	}
	return fmt.Errorf("run %s --doctor: %w", bin, err)
}

// findChoird returns the choird beside choirctl's own executable, else the
// one on PATH.
func findChoird() (string, error) {
	var dir string
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		dir = filepath.Dir(exe)
		p := filepath.Join(dir, "choird")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath("choird"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("cannot find choird beside choirctl (in %s) or on PATH: the doctor's checks run in choird, which holds the Docker and Postgres clients; install both (make install) or put choird on PATH", dir)
}
