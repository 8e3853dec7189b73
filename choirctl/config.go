package main

// choirctl config load [--json]
// choirctl config diff [--json]
// choirctl config apply [--json]
// choirctl config show
//
// Configuration changes are two-phase (design §16.3, §17.6). `load` has
// choird read and check all of .choir.d/ as one snapshot (config.json,
// secrets.json, and the global and agent repos fetched and checked as a
// build would) and stage it; one problem anywhere stages nothing. `diff`
// lists each staged change against the running configuration with its
// class and what applies it:
//
//	hot-reload        published by config apply; running agents get it at once
//	next-start        published by config apply; takes effect at an agent's next start or build
//	restart-required  never published by config apply: restart choird, or
//	                  agent build / update for the repos' content
//
// `apply` publishes the staged config.json and secrets.json together, or
// nothing when a change needs a restart now (it says which, and what to
// run). `show` prints the running configuration; config.json holds secret
// names only, so no secret value can appear.

import (
	"context"
	"fmt"

	"choir/internal/ctl"
)

// configCommands are the subcommands of `choirctl config`.
var configCommands = []command{
	{name: "load", summary: "stage .choir.d/ (config, secrets, repos) after checking all of it", run: configLoad},
	{name: "diff", summary: "the staged changes against the running configuration", run: configDiff},
	{name: "apply", summary: "publish the staged config.json and secrets.json to choird and agents", run: configApply},
	{name: "show", summary: "the running configuration (secret names only)", run: configShow},
}

func configLoad(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "config load", "config load [--json]")
	asJSON := fs.Bool("json", false, "print the staged diff as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c := e.client()
	defer c.Close()
	d, err := c.LoadConfig(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, d)
	}
	fmt.Fprintf(e.stdout, "staged config %s (running: %s, config version %d)\n", d.StagedHash, d.RunningHash, d.RunningVersion)
	printDiff(e, d)
	return nil
}

func configDiff(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "config diff", "config diff [--json]")
	asJSON := fs.Bool("json", false, "print the diff as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c := e.client()
	defer c.Close()
	d, err := c.DiffConfig(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, d)
	}
	if !d.Staged {
		fmt.Fprintln(e.stdout, "nothing is staged: run choirctl config load")
		return nil
	}
	printDiff(e, d)
	return nil
}

func printDiff(e *env, d *ctl.ConfigDiff) {
	for _, w := range d.Warnings {
		fmt.Fprintf(e.stdout, "warning: %s\n", w)
	}
	if len(d.Changes) == 0 {
		fmt.Fprintln(e.stdout, "no changes: the staged snapshot is what runs")
		return
	}
	for _, c := range d.Changes {
		fmt.Fprintln(e.stdout, c.String())
	}
	if d.Applicable {
		fmt.Fprintln(e.stdout, "config apply would publish the config.json and secrets.json changes")
	} else {
		fmt.Fprintln(e.stdout, "config apply would refuse: see \"blocks config apply\" above")
	}
}

func configApply(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "config apply", "config apply [--json]")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c := e.client()
	defer c.Close()
	res, err := c.ApplyConfig(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, res)
	}
	if res.Published == 0 {
		fmt.Fprintf(e.stdout, "nothing to publish: config.json and secrets.json are as staged (config version %d)\n", res.ConfigVersion)
	} else {
		fmt.Fprintf(e.stdout, "applied %d change(s): config version %d, %d running agent(s) told\n", res.Published, res.ConfigVersion, res.AgentsNotified)
	}
	for _, p := range res.Pending {
		fmt.Fprintf(e.stdout, "pending: %s\n", p.String())
	}
	return nil
}

func configShow(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "config show", "config show")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c := e.client()
	defer c.Close()
	raw, err := c.Config(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%s\n", raw)
	return nil
}
