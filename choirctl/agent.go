package main

import "context"

func runAgent(ctx context.Context, e *env, args []string) error {
	return subcommand(ctx, e, "agent", args, map[string]func(context.Context, *env, []string) error{
		"init":    agentInit,
		"build":   agentBuild,
		"start":   agentStart,
		"stop":    agentStop,
		"restart": agentRestart,
		"status":  agentStatus,
		"list":    agentList,
	})
}
