package main

// choirctl session list [agent-id] [--json]
// choirctl session show <session-id> [--json]
// choirctl session events <session-id> [--follow] [--json]
// choirctl session cores <session-id>
// choirctl session cancel <session-id> <job-name>
// choirctl session compact <session-id>
//
// list shows sessions newest first; show prints one session with why it
// ended and its session summary (session_show.go); events prints a session's replicated
// event log (and with --follow keeps printing new events until Ctrl-C);
// cores lists a running session's core jobs; cancel stops one of them by
// name; compact makes the agent fold its working memory now.

import (
	"cmp"
	"context"
	"fmt"
	"text/tabwriter"
	"time"
)

// sessionCommands are the subcommands of `choirctl session`.
var sessionCommands = []command{
	{name: "list", args: "[agent-id] [--json]", summary: "sessions, newest first", run: sessionList},
	{name: "show", args: "<session-id> [--json]", summary: "one session, why it ended and its summary", run: sessionShow},
	{name: "events", args: "<session-id> [--follow] [--json]", summary: "a session's replicated event log", run: sessionEvents},
	{name: "cores", args: "<session-id>", summary: "a running session's core jobs", run: sessionCores},
	{name: "cancel", args: "<session-id> <job-name>", summary: "stop one of a session's core jobs", run: sessionCancel},
	{name: "compact", args: "<session-id>", summary: "make the agent fold its working memory now", run: sessionCompact},
}

func sessionList(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "session list", "session list [agent-id] [--json]")
	asJSON := fs.Bool("json", false, "print the list as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return usagef("want at most one agent id")
	}
	c := e.client()
	defer c.Close()
	list, err := c.Sessions(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, list)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tAGENT\tKIND\tSTATUS\tSTARTED\tENDED")
	for _, s := range list {
		ended := "-"
		if !s.EndedAt.IsZero() {
			ended = s.EndedAt.Local().Format(time.DateTime)
		}
		kind := cmp.Or(s.Kind, "interactive")
		if s.RunID != "" {
			kind += " " + s.RunID
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.SessionID, s.AgentID, kind, s.Status, s.StartedAt.Local().Format(time.DateTime), ended)
	}
	return tw.Flush()
}

func sessionEvents(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "session events", "session events <session-id> [--follow] [--json]")
	follow := fs.Bool("follow", false, "keep printing new events until Ctrl-C")
	asJSON := fs.Bool("json", false, "print each event as a JSON line")
	id, err := oneArg(fs, args, "session id")
	if err != nil {
		return err
	}
	c := e.client()
	defer c.Close()
	var after int64
	for {
		evs, err := c.SessionEvents(ctx, id, after)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		for _, ev := range evs {
			if *asJSON {
				printJSONLine(e, ev)
			} else {
				fmt.Fprintf(e.stdout, "%6d %s %-22s %-6s %s\n", ev.Rev, ev.Time.Local().Format(time.TimeOnly), ev.Type, ev.Lane, ev.Payload)
			}
			after = ev.Rev
		}
		if !*follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

func sessionCores(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "session cores", "session cores <session-id>")
	id, err := oneArg(fs, args, "session id")
	if err != nil {
		return err
	}
	c := e.client()
	defer c.Close()
	cores, err := c.Cores(ctx, id)
	if err != nil {
		return err
	}
	if len(cores) == 0 {
		fmt.Fprintln(e.stdout, "no core jobs running")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSTATE\tSTEP\tSKILL")
	for _, st := range cores {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", st.Lane[len("core:"):], st.State, st.Step, dash(st.Skill))
	}
	return tw.Flush()
}

func sessionCancel(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "session cancel", "session cancel <session-id> <job-name>")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usagef("want a session id and a core job name")
	}
	c := e.client()
	defer c.Close()
	if err := c.CancelCore(ctx, fs.Arg(0), fs.Arg(1)); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "cancelling core job %s\n", fs.Arg(1))
	return nil
}

func sessionCompact(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "session compact", "session compact <session-id>")
	id, err := oneArg(fs, args, "session id")
	if err != nil {
		return err
	}
	c := e.client()
	defer c.Close()
	if err := c.Compact(ctx, id); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "compaction requested")
	return nil
}
