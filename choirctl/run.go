package main

// choirctl run start <work-item> [--mood M] [--trigger T] [--tokens N] [--wall D] [--tool-calls N] [--json]
// choirctl run list [--agent A] [--work ID] [--json]
// choirctl run show <id> [--json]
// choirctl run receipts <id> [--after SEQ] [--json]
// choirctl run context <id> [--json] (run_context.go)
// choirctl run approve <id> [--reason R] [--json]
// choirctl run reject <id> --reason R [--json]
//
// Headless runs (seed 002): one bounded episode of one work item, in one
// mood, under budgets, leaving an append-only log of receipts. choird's
// director loop performs a queued run: a worktree, the agent's run session,
// verifiers apart, and a commit of what passed (a high-risk work item's
// waits for a human: a run_commit approval in the agent's DM and in
// `choirctl approval list`, decided there or by `run approve|reject`).

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"strings"
	"text/tabwriter"
	"time"

	"choir/internal/ctl"
)

// runCommands are the subcommands of `choirctl run`.
var runCommands = []command{
	{name: "start", args: "<work-item> [--mood M] [--trigger T] [--tokens N] [--wall D] [--tool-calls N] [--json]", summary: "queue a run of a ready work item; choird performs it", run: runStartCmd},
	{name: "list", args: "[--agent A] [--work ID] [--json]", summary: "runs, newest first, with their status", run: runListCmd},
	{name: "show", args: "<id> [--json]", summary: "one run with its commit check", run: runShowCmd},
	{name: "receipts", args: "<id> [--after SEQ] [--json]", summary: "a run's receipts in order", run: runReceiptsCmd},
	{name: "context", args: "<id> [--json]", summary: "the context pack a run was given, rebuilt from its receipts: parts by hash, then the prompt", run: runContextCmd},
	{name: "approve", args: "<id> [--reason R] [--json]", summary: "approve the commit of a run that waits for a human", run: runApproveCmd},
	{name: "reject", args: "<id> --reason R [--json]", summary: "reject the commit of a run that waits for a human: it ends, nothing committed", run: runRejectCmd},
}

func runApproveCmd(ctx context.Context, e *env, args []string) error {
	return runDecide(ctx, e, args, true)
}

func runRejectCmd(ctx context.Context, e *env, args []string) error {
	return runDecide(ctx, e, args, false)
}

// runDecide records a human's decision on a run awaiting approval.
func runDecide(ctx context.Context, e *env, args []string, approve bool) error {
	verb := map[bool]string{true: "approve", false: "reject"}[approve]
	fs := newFlags(e, "run "+verb, "run "+verb+" <id> [--reason R] [--json]\n\n"+
		"A run of a high-risk work item (or whose patch changes DOCTRINE) whose\n"+
		"verifiers passed waits for a human, as a run_commit approval of its\n"+
		"agent (its DM's buttons, choirctl approval list). This decides that\n"+
		"same approval: the first decision stands, a later one is refused.\n"+
		"approve: choird commits its patch (the one the verifiers passed);\n"+
		"reject: the run ends and nothing is committed. Recorded as a\n"+
		"CommitDecision receipt by human:<your user name>.")
	reason := fs.String("reason", "", "why (required to reject)")
	asJSON := fs.Bool("json", false, "print the decision's receipt as JSON")
	id, err := oneArg(fs, args, "run id")
	if err != nil {
		return err
	}
	if !approve && strings.TrimSpace(*reason) == "" {
		return usagef("run reject needs --reason: the agent's DM and the receipts say why")
	}
	by := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		by = u.Username
	}
	if by == "" {
		by = "operator"
	}
	c := e.client()
	defer c.Close()
	out, err := c.DecideRun(ctx, id, ctl.RunDecision{Approve: approve, Reason: *reason, By: by})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, out)
	}
	if approve {
		fmt.Fprintf(e.stdout, "%s approved (receipt %s#%d): choird commits it now; see choirctl run show %s\n", id, id, out.Receipt.Seq, id)
	} else {
		fmt.Fprintf(e.stdout, "%s rejected (receipt %s#%d): the run ends with nothing committed\n", id, id, out.Receipt.Seq)
	}
	return nil
}

func runStartCmd(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "run start", "run start <work-item> [--mood M] [--trigger T] [--tokens N] [--wall D] [--tool-calls N] [--json]\n\n"+
		"Queues a run of the work item; choird's director loop performs it: a git\n"+
		"worktree of the agent's workspace, the agent's run session in the mood's\n"+
		"profile, the work item's verifiers in containers of their own, and a\n"+
		"commit only of what passed. A work item has at most one run that has not\n"+
		"ended. Without --mood the run starts in the mood the guards chose for the\n"+
		"work item's next run (after a regression, a crash, repeated failures...),\n"+
		"CALM when they chose none. Follow it with choirctl run show|receipts <id>.")
	mood := fs.String("mood", "", "the run's mood (CALM, CURIOUS, SKEPTICAL, PARANOID, CONTRITE, ...; default: the one the guards chose, else CALM)")
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
	chosen := ""
	if *mood == "" {
		chosen = " by the work item's mood guards"
	}
	fmt.Fprintf(e.stdout, "%s queued for %s (%s, %s%s); follow it with choirctl run show %s\n", r.ID, r.WorkItem, r.Agent, r.Mood, chosen, r.ID)
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
	for _, g := range d.Check.Gates { // the doc tiers the patch touches
		fmt.Fprintf(tw, "doc gate\t%s\n", g)
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
