package main

// choirctl workspace list
// choirctl workspace reset <name>
//
// list shows each workspace's host path and the agent leasing it. reset
// empties a workspace (it is never authoritative: §15.4), stopping the agent
// that leases it first.

import (
	"context"
	"fmt"
	"text/tabwriter"
)

// workspaceCommands are the subcommands of `choirctl workspace`.
var workspaceCommands = []command{
	{name: "list", args: "[--json]", summary: "workspaces, host paths and lease holders", run: workspaceList},
	{name: "reset", args: "<name>", summary: "empty a workspace (stops its holder first)", run: workspaceReset},
}

func workspaceList(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "workspace list", "workspace list [--json]")
	asJSON := fs.Bool("json", false, "print the list as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c := e.client()
	defer c.Close()
	list, err := c.Workspaces(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, list)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKSPACE\tPATH\tLEASED TO")
	for _, w := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", w.Name, w.Path, dash(w.Holder))
	}
	return tw.Flush()
}

func workspaceReset(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "workspace reset", "workspace reset <name>")
	arg, err := oneArg(fs, args, "workspace name")
	if err != nil {
		return err
	}
	c := e.client()
	defer c.Close()
	res, err := c.ResetWorkspace(ctx, arg)
	if err != nil {
		return err
	}
	if res.StoppedAgent != "" {
		fmt.Fprintf(e.stdout, "stopped %s, which leased it\n", res.StoppedAgent)
	}
	fmt.Fprintf(e.stdout, "workspace %s emptied (%d entries removed)\n", res.Workspace, res.RemovedEntries)
	return nil
}
