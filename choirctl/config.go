package main

// choirctl config show
//
// Prints the configuration choird is running (config.json as loaded, with
// defaults filled in). config.json holds secret names only, so no secret
// value can appear.

import (
	"context"
	"fmt"
)

// configCommands are the subcommands of `choirctl config`.
var configCommands = []command{
	{name: "show", summary: "the running configuration (secret names only)", run: configShow},
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
