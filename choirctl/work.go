package main

// choirctl work add <agent> <description> --accept C [--accept C]... [--verifier V]... [--risk low|medium|high] [--depends ID]... [--json]
// choirctl work list [--agent A] [--status S] [--json]
// choirctl work show <id> [--json]
// choirctl work update <id> [--description D] [--accept C]... [--verifier V]... [--no-verifiers] [--risk R] [--depends ID]... [--no-depends] [--json]
// choirctl work split <id> --file F|- [--json]
// choirctl work split <id> --request <run id>#<seq> [--json]
// choirctl work cancel <id> [--json]
//
// The director's work queue (seed 002 §6): each work item is one objective
// a single run can satisfy, with acceptance criteria, the verifiers that
// must pass, a risk tier (a high one needs a human to approve its commit)
// and the work items it depends on. An open item is ready when every
// dependency is done; one too big for a run is split into children that
// together carry every criterion and verifier of the parent. A run that
// asked to split a medium- or high-risk item waits for a human to accept
// its proposal with --request.

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"choir/internal/ctl"
)

// workCommands are the subcommands of `choirctl work`.
var workCommands = []command{
	{name: "add", args: "<agent> <description> --accept C [--verifier V] [--risk R] [--depends ID] [--json]", summary: "add a work item to an agent's queue", run: workAdd},
	{name: "list", args: "[--agent A] [--status S] [--json]", summary: "work items, oldest first, with their status", run: workList},
	{name: "show", args: "<id> [--json]", summary: "one work item with its children and runs", run: workShow},
	{name: "update", args: "<id> [--description D] [--accept C] [--verifier V] [--risk R] [--depends ID] [--json]", summary: "change an open work item", run: workUpdate},
	{name: "split", args: "<id> --file F|- | --request R [--json]", summary: "split a work item into children that cover it", run: workSplit},
	{name: "cancel", args: "<id> [--json]", summary: "cancel a work item (and its queued run)", run: workCancel},
}

// listFlag is a flag that may be given several times.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ", ") }
func (l *listFlag) Set(s string) error {
	*l = append(*l, s)
	return nil
}

func workAdd(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "work add", "work add <agent> <description> --accept C [--accept C]... [--verifier V]... [--risk low|medium|high] [--depends ID]... [--json]")
	var accept, verifiers, depends listFlag
	fs.Var(&accept, "accept", "an acceptance criterion (repeat for several; at least one)")
	fs.Var(&verifiers, "verifier", "a verifier that must pass before a commit (repeat for several)")
	fs.Var(&depends, "depends", "a work item this one waits for (repeat for several)")
	risk := fs.String("risk", "low", "risk tier: low, medium or high (high needs a human to approve the commit)")
	asJSON := fs.Bool("json", false, "print the new work item as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usagef("work add takes the agent and the description (quote it): work add <agent> \"<description>\" --accept \"<criterion>\"")
	}
	if len(accept) == 0 {
		return usagef("give at least one acceptance criterion with --accept \"<criterion>\"")
	}
	c := e.client()
	defer c.Close()
	res, err := c.WorkItemOp(ctx, ctl.WorkItemRequest{Op: "create", Item: &ctl.WorkItemSpec{Agent: fs.Arg(0), Description: fs.Arg(1),
		Acceptance: accept, Verifiers: verifiers, Risk: *risk, DependsOn: depends}})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, res.Item)
	}
	fmt.Fprintf(e.stdout, "%s added for %s (%s)\n", res.Item.ID, res.Item.Agent, res.Item.Status)
	return nil
}

func workList(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "work list", "work list [--agent A] [--status S] [--json]")
	agent := fs.String("agent", "", "only this agent's work items")
	status := fs.String("status", "", "only work items with this status (open, ready, running, done, split, cancelled, blocked)")
	asJSON := fs.Bool("json", false, "print the list as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("work list takes no arguments")
	}
	switch *status {
	case "", "open", "ready", "running", "done", "split", "cancelled", "blocked":
	default:
		return usagef("--status %q: want open, ready, running, done, split, cancelled or blocked", *status)
	}
	c := e.client()
	defer c.Close()
	list, err := c.WorkItems(ctx, *agent, *status)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, list)
	}
	if len(list) == 0 {
		fmt.Fprintln(e.stdout, "no work items")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAGENT\tSTATUS\tRISK\tDEPENDS ON\tDESCRIPTION")
	for _, it := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", it.ID, it.Agent, it.Status, it.Risk, dash(strings.Join(it.DependsOn, ",")), oneLine(it.Description, 60))
	}
	return tw.Flush()
}

// oneLine shortens s to one line of at most n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func workShow(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "work show", "work show <id> [--json]")
	asJSON := fs.Bool("json", false, "print the work item, its children and runs as JSON")
	id, err := oneArg(fs, args, "work item id")
	if err != nil {
		return err
	}
	c := e.client()
	defer c.Close()
	d, err := c.WorkItem(ctx, id)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, d)
	}
	it := d.Item
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "id\t%s\nagent\t%s\nstatus\t%s\nrisk\t%s\n", it.ID, it.Agent, it.Status, it.Risk)
	if it.Parent != "" {
		fmt.Fprintf(tw, "parent\t%s\n", it.Parent)
	}
	fmt.Fprintf(tw, "depends on\t%s\nverifiers\t%s\ncreated\t%s\nupdated\t%s\n", dash(strings.Join(it.DependsOn, ", ")),
		dash(strings.Join(it.Verifiers, ", ")), it.Created.Format(time.RFC3339), it.Updated.Format(time.RFC3339))
	if len(d.Children) > 0 {
		fmt.Fprintf(tw, "children\t%s\n", strings.Join(d.Children, ", "))
	}
	tw.Flush()
	fmt.Fprintf(e.stdout, "description:\n  %s\nacceptance:\n", it.Description)
	for _, a := range it.Acceptance {
		fmt.Fprintf(e.stdout, "  - %s\n", a)
	}
	if len(d.Runs) > 0 {
		fmt.Fprintln(e.stdout, "runs:")
		for _, r := range d.Runs {
			fmt.Fprintf(e.stdout, "  %s  %s  %s  %s\n", r.ID, r.Status, r.Mood, r.Created.Format(time.RFC3339))
		}
	}
	return nil
}

// maxSplitFile bounds the children file of work split.
const maxSplitFile = 512 << 10

func workSplit(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "work split", "work split <id> --file F|- [--json]\n"+
		"work split <id> --request <run id>#<seq> [--json]\n\n"+
		"The file (or - for standard input) is a JSON array of children:\n"+
		"  [{\"description\": \"...\", \"acceptance\": [\"...\"], \"verifiers\": [\"...\"], \"risk\": \"low\", \"depends_on\": [\"w-...\"]}, ...]\n"+
		"Together they must carry every acceptance criterion and verifier of the parent;\n"+
		"each takes the parent's agent and dependencies.\n"+
		"--request accepts the children a run proposed (its SplitRequest receipt, as the DM named it).")
	file := fs.String("file", "", "the children, a JSON array (- reads standard input)")
	request := fs.String("request", "", "a run's SplitRequest receipt (<run id>#<seq>) whose children to accept")
	asJSON := fs.Bool("json", false, "print the parent and its children as JSON")
	id, err := oneArg(fs, args, "work item id")
	if err != nil {
		return err
	}
	if (*file == "") == (*request == "") {
		return usagef("give the children with --file F (a JSON array; - reads standard input), or a run's proposal with --request <run id>#<seq>")
	}
	var children []ctl.WorkItemSpec
	if *file != "" {
		if children, err = readChildren(e, *file); err != nil {
			return err
		}
	}
	c := e.client()
	defer c.Close()
	res, err := c.WorkItemOp(ctx, ctl.WorkItemRequest{Op: "split", ID: id, Children: children, Request: *request})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, res)
	}
	fmt.Fprintf(e.stdout, "%s split into %d:\n", res.Item.ID, len(res.Children))
	for _, k := range res.Children {
		fmt.Fprintf(e.stdout, "  %s  %s  %s\n", k.ID, k.Status, oneLine(k.Description, 60))
	}
	return nil
}

// readChildren reads work split's children file (- is standard input).
func readChildren(e *env, file string) ([]ctl.WorkItemSpec, error) {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(io.LimitReader(e.stdin, maxSplitFile+1))
	} else {
		var f *os.File
		if f, err = os.Open(file); err == nil {
			data, err = io.ReadAll(io.LimitReader(f, maxSplitFile+1))
			f.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read the children: %w", err)
	}
	if len(data) > maxSplitFile {
		return nil, fmt.Errorf("%s: larger than %d bytes; split in fewer, shorter children", file, maxSplitFile)
	}
	var children []ctl.WorkItemSpec
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&children); err != nil {
		return nil, fmt.Errorf("%s: want a JSON array of children ({\"description\", \"acceptance\", ...}): %v", file, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: data after the JSON array", file)
	}
	return children, nil
}

func workCancel(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "work cancel", "work cancel <id> [--json]")
	asJSON := fs.Bool("json", false, "print the cancelled work item as JSON")
	id, err := oneArg(fs, args, "work item id")
	if err != nil {
		return err
	}
	c := e.client()
	defer c.Close()
	res, err := c.WorkItemOp(ctx, ctl.WorkItemRequest{Op: "cancel", ID: id})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, res.Item)
	}
	fmt.Fprintf(e.stdout, "%s cancelled\n", res.Item.ID)
	return nil
}

func workUpdate(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "work update", "work update <id> [--description D] [--accept C]... [--verifier V]... [--no-verifiers] [--risk low|medium|high] [--depends ID]... [--no-depends] [--json]\n\n"+
		"Changes an open work item; what is not given stays. --accept, --verifier and --depends\n"+
		"replace the whole list (repeat them for several); --no-verifiers and --no-depends empty it.")
	var accept, verifiers, depends listFlag
	desc := fs.String("description", "", "the new description")
	fs.Var(&accept, "accept", "an acceptance criterion: the list given replaces the item's (repeat for several)")
	fs.Var(&verifiers, "verifier", "a verifier: the list given replaces the item's (repeat for several)")
	fs.Var(&depends, "depends", "a work item this one waits for: the list given replaces the item's (repeat for several)")
	noVerifiers := fs.Bool("no-verifiers", false, "the item names no verifier")
	noDepends := fs.Bool("no-depends", false, "the item waits for nothing")
	risk := fs.String("risk", "", "risk tier: low, medium or high (high needs a human to approve the commit)")
	asJSON := fs.Bool("json", false, "print the changed work item as JSON")
	id, err := oneArg(fs, args, "work item id")
	if err != nil {
		return err
	}
	var u ctl.WorkItemChange
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["description"] {
		if strings.TrimSpace(*desc) == "" {
			return usagef("--description is empty: give the new description, or leave the flag out to keep it")
		}
		u.Description = desc
	}
	if len(accept) > 0 {
		u.Acceptance = (*[]string)(&accept)
	}
	switch {
	case *noVerifiers && len(verifiers) > 0:
		return usagef("--no-verifiers and --verifier contradict each other: give one")
	case *noVerifiers:
		u.Verifiers = &[]string{}
	case len(verifiers) > 0:
		u.Verifiers = (*[]string)(&verifiers)
	}
	switch {
	case *noDepends && len(depends) > 0:
		return usagef("--no-depends and --depends contradict each other: give one")
	case *noDepends:
		u.DependsOn = &[]string{}
	case len(depends) > 0:
		u.DependsOn = (*[]string)(&depends)
	}
	if set["risk"] {
		switch *risk {
		case "low", "medium", "high":
			u.Risk = risk
		default:
			return usagef("--risk %q: want low, medium or high", *risk)
		}
	}
	if u == (ctl.WorkItemChange{}) {
		return usagef("nothing to change: give --description, --accept, --verifier, --no-verifiers, --risk, --depends or --no-depends")
	}
	c := e.client()
	defer c.Close()
	res, err := c.WorkItemOp(ctx, ctl.WorkItemRequest{Op: "update", ID: id, Update: &u})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, res.Item)
	}
	fmt.Fprintf(e.stdout, "%s updated (%s)\n", res.Item.ID, res.Item.Status)
	return nil
}
