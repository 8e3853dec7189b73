package main

// choirctl logs <choird|agent-id> [--no-follow]
//
// Prints the current log (a snapshot), then keeps printing new lines as
// they are written, like tail -f, until Ctrl-C. The lines are JSON; filter
// them with grep or jq.

import (
	"context"
	"errors"
	"fmt"

	"choir/internal/ctl"
)

func runLogs(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "logs", "logs <choird|agent-id> [--no-follow]")
	noFollow := fs.Bool("no-follow", false, "print the snapshot and exit")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want one log source: choird or an agent id")
	}
	c := e.client()
	defer c.Close()
	err := c.Logs(ctx, fs.Arg(0), !*noFollow, e.stdout)
	if errors.Is(err, ctl.ErrNotRunning) {
		return fmt.Errorf("%w; the log files are in %s", err, e.home.LogsDir())
	}
	return err
}
