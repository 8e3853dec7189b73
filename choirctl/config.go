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

func runConfig(ctx context.Context, e *env, args []string) error {
	return subcommand(ctx, e, "config", args, map[string]func(context.Context, *env, []string) error{
		"show": configShow,
	})
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
