package main

// choirctl run start <work-item> [--mood M] [--trigger T] [--tokens N] [--wall D] [--tool-calls N] [--json]
// choirctl run list [--agent A] [--work ID] [--json]
// choirctl run show <id> [--json]
// choirctl run receipts <id> [--after SEQ] [--json]
//
// Headless runs (seed 002): one bounded episode of one work item, in one
// mood, under budgets, leaving an append-only log of receipts. `run start`
// records a queued run only: the executor that performs runs is not built
// yet, so nothing picks the run up in this version.

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"choir/internal/ctl"
)

// runCommands are the subcommands of `choirctl run`.
var runCommands = []command{
	{name: "start", args: "<work-item> [--mood M] [--trigger T] [--tokens N] [--wall D] [--tool-calls N] [--json]", summary: "queue a run of a ready work item (recorded only: no executor picks it up yet)", run: runStartCmd},
	{name: "list", args: "[--agent A] [--work ID] [--json]", summary: "runs, newest first, with their status", run: runListCmd},
	{name: "show", args: "<id> [--json]", summary: "one run with its commit check", run: runShowCmd},
	{name: "receipts", args: "<id> [--after SEQ] [--json]", summary: "a run's receipts in order", run: runReceiptsCmd},
}

func runStartCmd(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "run start", "run start <work-item> [--mood M] [--trigger T] [--tokens N] [--wall D] [--tool-calls N] [--json]\n\n"+
		"This version records the run as queued, bound to the work item, and\n"+
		"nothing more: the executor that performs runs comes later, so no agent\n"+
		"picks the run up yet. A work item has at most one run that has not ended.")
	mood := fs.String("mood", "CALM", "the run's mood (CALM, CURIOUS, SKEPTICAL, PARANOID, CONTRITE, ...)")
	trigger := fs.String("trigger", "manual", "what asked for the run, recorded with it")
	tokens := fs.Int64("tokens", 0, "token budget (0: the mood's default)")
	wall := fs.Duration("wall", 0, "wall-clock budget, e.g. 20m (0: the mood's default)")
	tools := fs.Int64("tool-calls", 0, "tool-call budget (0: the mood's default)")
	asJSON := fs.Bool("json", false, "print the run as JSON")
	id, err := oneArg(fs, args, "work item id")
	if err != nil {
		return err
	}
	if *tokens < 0 || *wall < 0 || *tools < 0 {
		return usagef("budgets cannot be negative (0 takes the mood's default)")
	}
	c := e.client()
	defer c.Close()
	r, err := c.StartRun(ctx, ctl.RunRequest{WorkItem: id, Mood: *mood, Trigger: *trigger,
		Budgets: ctl.Budgets{Tokens: *tokens, WallSeconds: int64(wall.Seconds()), ToolCalls: *tools}})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, r)
	}
	fmt.Fprintf(e.stdout, "%s queued for %s (%s, %s); no executor runs it in this version\n", r.ID, r.WorkItem, r.Agent, r.Mood)
	return nil
}

func runListCmd(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "run list", "run list [--agent A] [--work ID] [--json]")
	agent := fs.String("agent", "", "only this agent's runs")
	work := fs.String("work", "", "only the runs of this work item")
	asJSON := fs.Bool("json", false, "print the list as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("run list takes no arguments")
	}
	c := e.client()
	defer c.Close()
	runs, err := c.Runs(ctx, *agent, *work)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, runs)
	}
	if len(runs) == 0 {
		fmt.Fprintln(e.stdout, "no runs")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tWORK ITEM\tAGENT\tSTATUS\tMOOD\tTRIGGER\tCREATED")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.WorkItem, r.Agent, r.Status, r.Mood, oneLine(r.Trigger, 30), r.Created.Format(time.RFC3339))
	}
	return tw.Flush()
}

func runShowCmd(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "run show", "run show <id> [--json]")
	asJSON := fs.Bool("json", false, "print the run and its commit check as JSON")
	id, err := oneArg(fs, args, "run id")
	if err != nil {
		return err
	}
	c := e.client()
	defer c.Close()
	d, err := c.Run(ctx, id)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, d)
	}
	r := d.Run
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "id\t%s\nwork item\t%s\nagent\t%s\nstatus\t%s\nmood\t%s\ntrigger\t%s\n", r.ID, r.WorkItem, r.Agent, r.Status, r.Mood, r.Trigger)
	fmt.Fprintf(tw, "budgets\t%s\nbase\t%s\nworktree\t%s\ncreated\t%s\n", budgetLine(r.Budgets), dash(r.Base), dash(r.Worktree), r.Created.Format(time.RFC3339))
	if !r.Ended.IsZero() {
		fmt.Fprintf(tw, "ended\t%s\n", r.Ended.Format(time.RFC3339))
	}
	fmt.Fprintf(tw, "receipts\t%d (choirctl run receipts %s)\n", d.Receipts, r.ID)
	if d.Check.Ready {
		fmt.Fprintf(tw, "commit\tready (%s)\n", strings.Join(d.Check.Passing, ", "))
	} else {
		fmt.Fprintf(tw, "commit\tnot ready: %s\n", strings.Join(d.Check.Missing, "; "))
	}
	return tw.Flush()
}

func budgetLine(b ctl.Budgets) string {
	var parts []string
	if b.Tokens > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens", b.Tokens))
	}
	if b.WallSeconds > 0 {
		parts = append(parts, (time.Duration(b.WallSeconds) * time.Second).String())
	}
	if b.ToolCalls > 0 {
		parts = append(parts, fmt.Sprintf("%d tool calls", b.ToolCalls))
	}
	if len(parts) == 0 {
		return "the mood's defaults"
	}
	return strings.Join(parts, ", ")
}

func runReceiptsCmd(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "run receipts", "run receipts <id> [--after SEQ] [--json]")
	after := fs.Int64("after", 0, "only receipts after this seq")
	asJSON := fs.Bool("json", false, "print the receipts as JSON")
	id, err := oneArg(fs, args, "run id")
	if err != nil {
		return err
	}
	if *after < 0 {
		return usagef("--after %d: want a receipt seq, 0 or more", *after)
	}
	c := e.client()
	defer c.Close()
	rs, err := c.Receipts(ctx, id, *after)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, rs)
	}
	if len(rs) == 0 {
		fmt.Fprintln(e.stdout, "no receipts")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REF\tKIND\tAT\tOBJECTS\tBODY")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", r.Ref(), r.Kind, r.At.Format(time.RFC3339), len(r.Objects), oneLine(string(r.Body), 80))
	}
	return tw.Flush()
}
