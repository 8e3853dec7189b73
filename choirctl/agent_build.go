package main

// choirctl agent build <agent-id> [--json]
//
// Builds the agent's image (§17.3): choird fetches the global and agent
// repos, checks every manifest and skill, builds the base image when the
// global repo or choir-agent changed, merges tools, skills and identity,
// and builds and tags choir-agent-<id>:<version>. Progress is printed as it
// happens. The agent is not started or restarted.

import (
	"context"
	"fmt"
)

func agentBuild(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "agent build", "agent build <agent-id> [--json]")
	asJSON := fs.Bool("json", false, "print the result as JSON (progress still goes to stderr)")
	arg, err := oneArg(fs, args, "agent id")
	if err != nil {
		return err
	}
	c := e.client()
	defer c.Close()
	progressTo := e.stdout
	if *asJSON {
		progressTo = e.stderr
	}
	res, err := c.BuildAgent(ctx, arg, func(line string) { fmt.Fprintln(progressTo, line) })
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, res)
	}
	verb := "built"
	if !res.AgentBuilt {
		verb = "already up to date"
	}
	fmt.Fprintf(e.stdout, "%s: %s %s (base %s)\n", res.AgentID, res.Image, verb, res.BaseImage)
	for _, w := range res.Warnings {
		fmt.Fprintf(e.stdout, "warning: %s\n", w)
	}
	return nil
}
