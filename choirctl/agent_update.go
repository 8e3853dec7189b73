package main

// choirctl agent update <agent-id> [--json]
// choirctl agent update-all [--json]
//
// update builds the agent's image when its repos or choir-agent changed
// (§17.4; nothing is built when they did not), then, when the agent runs
// an older image, stops it gracefully (its session saved) and starts it on
// the new one with the bindings it started with, resuming its session. A
// stopped agent is only built. update-all does this for every agent, one
// after the other (§17.5). Each agent is reported as built, redeployed,
// skipped or failed; progress is printed as it happens. The exit status is
// 1 when any agent failed.

import (
	"context"
	"fmt"

	"choir/internal/ctl"
)

func agentUpdate(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "agent update", "agent update <agent-id> [--json]")
	asJSON := fs.Bool("json", false, "print each outcome as a JSON line (progress goes to stderr)")
	id, err := oneArg(fs, args, "agent id")
	if err != nil {
		return err
	}
	return runUpdates(ctx, e, id, *asJSON)
}

func agentUpdateAll(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "agent update-all", "agent update-all [--json]")
	asJSON := fs.Bool("json", false, "print each outcome as a JSON line (progress goes to stderr)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("agent update-all takes no arguments (to update one agent: choirctl agent update <agent-id>)")
	}
	return runUpdates(ctx, e, "", *asJSON)
}

func runUpdates(ctx context.Context, e *env, id string, asJSON bool) error {
	c := e.client()
	defer c.Close()
	progressTo := e.stdout
	if asJSON {
		progressTo = e.stderr
	}
	failed := 0
	err := c.UpdateAgents(ctx, id, func(line string) { fmt.Fprintln(progressTo, line) }, func(r ctl.UpdateResult) {
		if r.Outcome == ctl.UpdateFailed {
			failed++
		}
		if asJSON {
			printJSONLine(e, r)
			return
		}
		fmt.Fprintf(e.stdout, "%s: %s", r.AgentID, r.Outcome)
		if r.Image != "" {
			fmt.Fprintf(e.stdout, " %s", r.Image)
		}
		if r.Detail != "" {
			fmt.Fprintf(e.stdout, " (%s)", r.Detail)
		}
		fmt.Fprintln(e.stdout)
	})
	if err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d agent(s) failed to update", failed)
	}
	return nil
}
