// Package hostbench is what the host benchmarks share: testkit/scale
// (make bench-scale) and testkit/sim (make bench-sim) both run a real
// choird, built from the tree, on a throwaway home and Postgres, and report
// a markdown table. Here are the steps they take alike: the signal and
// flag plumbing of their mains, PGlite or CHOIR_DATABASE_URL, the home
// with its config of agents <prefix>-1 … <prefix>-N, choird's process,
// choirctl and testkit's scripts, a minimal fake Telegram Bot API, and
// the table and percentiles they print.
//
// It is for commands, not tests: nothing here takes a testing.TB (the
// full fakes, like testkit/telegramtest, do).
package hostbench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// Host is one benchmark's choird and what it stands on, so that the
// benchmark's teardown removes exactly what it started.
type Host struct {
	Name   string    // the command's name ("scale", "sim"): prefixes what it prints
	Bin    string    // the directory holding choird and choirctl (make build)
	Repo   string    // the choir checkout, for testkit's scripts
	Stderr io.Writer // progress and the scripts' own stderr

	Work  string // scratch directory, removed at the end
	Home  string // choir home, inside Work
	DBURL string // CHOIR_DATABASE_URL, else PGlite's once started
	PGDir string // set when it started PGlite
	DBPID int    // the database server's pid, 0 when not ours

	choird     *exec.Cmd
	choirdDone chan error
}

// Say prints one line of progress.
func (h *Host) Say(format string, args ...any) {
	fmt.Fprintf(h.Stderr, "== "+format+"\n", args...)
}

// Ctl runs choirctl against the home.
func (h *Host) Ctl(ctx context.Context, stdin io.Reader, stdout io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(h.Bin, "choirctl"), append([]string{"--home", h.Home}, args...)...)
	cmd.Stdin, cmd.Stdout = stdin, stdout
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return fmt.Errorf("choirctl %s: %w: %s", strings.Join(args, " "), err, msg)
		}
		return fmt.Errorf("choirctl %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// Script runs one of the project's scripts, in its own process group, and
// returns its stdout.
func (h *Host) Script(ctx context.Context, script string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(h.Repo, script), args...)
	cmd.Stderr = h.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.Output()
	return string(out), err
}

// RemoveWork removes the scratch directory, saying so when it cannot.
func (h *Host) RemoveWork() {
	if err := os.RemoveAll(h.Work); err != nil {
		fmt.Fprintf(h.Stderr, "%s: remove %s: %v\n", h.Name, h.Work, err)
	}
}

// LastLines is the last n lines of b, for an error that quotes a log.
func LastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
