package main

// choirctl approval list [--agent=<id>] [--json]
// choirctl approval show <id> [--json]
// choirctl approval approve <id>
// choirctl approval reject <id>
//
// The approval pipeline of §8.10 from the terminal, through the same code
// as the Telegram buttons: a decision is recorded once (deciding again is
// refused and says who decided), and the agent is told the outcome.

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"
)

// approvalCommands are the subcommands of `choirctl approval`.
var approvalCommands = []command{
	{name: "list", args: "[--agent=<id>] [--json]", summary: "the proposals waiting for a decision", run: approvalList},
	{name: "show", args: "<id> [--json]", summary: "one proposal in full", run: approvalShow},
	{name: "approve", args: "<id>", summary: "approve a proposal", run: func(ctx context.Context, e *env, args []string) error { return approvalDecide(ctx, e, args, true) }},
	{name: "reject", args: "<id>", summary: "reject a proposal", run: func(ctx context.Context, e *env, args []string) error { return approvalDecide(ctx, e, args, false) }},
}

func approvalList(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "approval list", "approval list [--agent=<id>] [--json]")
	agent := fs.String("agent", "", "only this agent's approvals")
	asJSON := fs.Bool("json", false, "print the list as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c := e.client()
	defer c.Close()
	list, err := c.Approvals(ctx, *agent)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, list)
	}
	if len(list) == 0 {
		fmt.Fprintln(e.stdout, "no approvals")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAGENT\tTYPE\tSTATUS\tAGE\tSUMMARY")
	for _, a := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, a.AgentID, a.RequestType, a.Status, time.Since(a.CreatedAt).Round(time.Second), a.Summary)
	}
	return tw.Flush()
}

func approvalShow(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "approval show", "approval show <id> [--json]")
	asJSON := fs.Bool("json", false, "print the approval as JSON")
	arg, err := oneArg(fs, args, "approval id")
	if err != nil {
		return err
	}
	c := e.client()
	defer c.Close()
	a, err := c.Approval(ctx, arg)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, a)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "id\t%s\nagent\t%s\nsession\t%s\ntype\t%s\nstatus\t%s\nrequested\t%s\n", a.ID, a.AgentID, dash(a.SessionID), a.RequestType, a.Status, a.CreatedAt.Format(time.RFC3339))
	if !a.ResolvedAt.IsZero() {
		fmt.Fprintf(tw, "decided\t%s by %s\n", a.ResolvedAt.Format(time.RFC3339), a.ResolvedBy)
	}
	fmt.Fprintf(tw, "summary\t%s\n", a.Summary)
	tw.Flush()
	if len(a.Payload) > 0 {
		fmt.Fprintf(e.stdout, "payload:\n%s\n", a.Payload)
	}
	return nil
}

func approvalDecide(ctx context.Context, e *env, args []string, approve bool) error {
	verb := "reject"
	if approve {
		verb = "approve"
	}
	fs := newFlags(e, "approval "+verb, "approval "+verb+" <id>")
	arg, err := oneArg(fs, args, "approval id")
	if err != nil {
		return err
	}
	c := e.client()
	defer c.Close()
	a, err := c.Decide(ctx, arg, approve)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%s %s: %s\n", a.ID, a.Status, a.Summary)
	return nil
}
