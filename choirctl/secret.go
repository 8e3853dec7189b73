package main

// choirctl secret list
// choirctl secret set <name> [value]
// choirctl secret delete <name>
// choirctl secret apply
//
// Edits secrets.json, the authoritative store of secret values, under a
// lock, rewriting it atomically and keeping it mode 0600. A secrets.json
// that choird would refuse (not 0600, not this user's, too large, not valid
// JSON or UTF-8) is refused here too, and left as it is. When secrets.json
// is a symbolic link, the edit goes through it: the new file is written
// beside the link's target and renamed over it, so the link stays (a link
// to nothing is refused). `set` reads the value from stdin when it is not
// given (so it stays out of shell history); one trailing newline is dropped;
// a value must be valid UTF-8 and at most 1 MiB. Values are never printed.
// Running agents
// see changes after `choirctl secret apply`, which makes choird reload the
// file (refusing it, and keeping the old secrets, if the running config
// names a secret it lacks) and tells each running agent to fetch its
// secrets again.

import (
	"context"
	"fmt"
	"io"
	"strings"

	"choir/internal/config"
)

// secretCommands are the subcommands of `choirctl secret`.
var secretCommands = []command{
	{name: "list", summary: "secret names (never values)", run: secretList},
	{name: "set", args: "<name> [value]", summary: "set a secret (value from stdin when omitted)", run: secretSet},
	{name: "delete", args: "<name>", summary: "delete a secret", run: secretDelete},
	{name: "apply", summary: "make choird reload secrets and refresh running agents", run: secretApply},
}

func secretApply(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "secret apply", "secret apply")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c := e.client()
	defer c.Close()
	res, err := c.ApplySecrets(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%d secrets applied; %d running agents told to refresh theirs\n", res.Secrets, res.AgentsNotified)
	return nil
}

func secretList(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "secret list", "secret list")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	s, err := config.LoadSecrets(e.home)
	if err != nil {
		return err
	}
	for _, n := range s.Names() {
		fmt.Fprintln(e.stdout, n)
	}
	return nil
}

func secretSet(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "secret set", "secret set <name> [value]   (value from stdin when omitted)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return usagef("want a secret name and optionally its value")
	}
	name := fs.Arg(0)
	if err := config.ValidSecretName(name); err != nil {
		return usageError{err.Error()}
	}
	var value string
	if fs.NArg() == 2 {
		value = fs.Arg(1)
	} else {
		data, err := io.ReadAll(io.LimitReader(e.stdin, 1<<20+1))
		if err != nil {
			return fmt.Errorf("read the value from stdin: %w", err)
		}
		if len(data) > 1<<20 {
			return fmt.Errorf("the value on stdin is larger than 1 MiB")
		}
		value = strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
	}
	if value == "" {
		return fmt.Errorf("refusing to set %q to an empty value (use secret delete to remove it)", name)
	}
	existed := false
	err := config.EditSecrets(e.home, func(s config.Secrets) error {
		_, existed = s[name]
		s[name] = value
		return nil
	})
	if err != nil {
		return err
	}
	verb := "set"
	if existed {
		verb = "updated"
	}
	fmt.Fprintf(e.stdout, "secret %q %s in %s; running agents get it after `choirctl secret apply`\n", name, verb, e.home.SecretsPath())
	return nil
}

func secretDelete(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "secret delete", "secret delete <name>")
	name, err := oneArg(fs, args, "secret name")
	if err != nil {
		return err
	}
	err = config.EditSecrets(e.home, func(s config.Secrets) error {
		if _, ok := s[name]; !ok {
			return fmt.Errorf("no secret named %q (see choirctl secret list)", name)
		}
		delete(s, name)
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "secret %q deleted\n", name)
	return nil
}
