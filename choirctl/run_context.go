package main

// choirctl run context <id> [--json]
//
// The context pack a headless run was given (seed 002 §2.1), rebuilt by
// choird from the run's ContextFootprint receipt and the object store:
// each part of the prompt by name, content hash and token estimate, what
// the budget left out, the evidence pointers and receipts it cites, then
// the prompt itself, exactly as the agent got it. choird refuses when an
// object the receipt names is missing or changed.

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
)

func runContextCmd(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "run context", "run context <id> [--json]")
	asJSON := fs.Bool("json", false, "print the footprint and the prompt as JSON")
	id, err := oneArg(fs, args, "run id")
	if err != nil {
		return err
	}
	c := e.client()
	defer c.Close()
	rc, err := c.RunContext(ctx, id)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, rc)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "run\t%s\nfootprint\t%s\nmood\t%s\ntokens\t%d of a budget of %d\nobjective\tsha256:%s\n", rc.Run, rc.Receipt, rc.Mood, rc.Tokens, rc.Budget, rc.Objective)
	fmt.Fprintf(tw, "repo\t%s (%s at %s)\ntools\t%s\nnetwork\t%t\n", dash(rc.Repo), dash(rc.Target), dash(rc.Base), dash(strings.Join(rc.Tools, ", ")), rc.Network)
	for _, o := range rc.LeftOut {
		fmt.Fprintf(tw, "left out\t%d %s\n", o.Count, o.What)
	}
	if len(rc.Evidence) > 0 {
		fmt.Fprintf(tw, "evidence\t%s\n", strings.Join(rc.Evidence, " "))
	}
	if len(rc.Cites) > 0 {
		fmt.Fprintf(tw, "cites\t%s\n", strings.Join(rc.Cites, " "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rc.Parts) > 0 {
		fmt.Fprintln(e.stdout)
		tw = tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PART\tOBJECT\tTOKENS")
		for _, p := range rc.Parts {
			fmt.Fprintf(tw, "%s\tsha256:%s\t%d\n", p.Name, p.Object, p.Tokens)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.stdout, "\n--- prompt ---\n%s", rc.Prompt)
	if !strings.HasSuffix(rc.Prompt, "\n") {
		fmt.Fprintln(e.stdout)
	}
	return nil
}
