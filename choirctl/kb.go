package main

// choirctl kb search <query> [--agent ID] [--kind K] [--limit N] [--json]
//
// The local knowledge base of headless runs (seed 002 §2.4): the typed
// objects runs produced (claims, hypotheses, conjectures, hypertheses,
// verifier results, patches, sources), found by words and meaning. Each
// hit is a pointer: the object's hash, cited as sha256:<hash> in notes and
// reports, its kind, score and a short snippet (untrusted data written by
// a run); never the object's content.

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"choir/internal/ctl"
)

// kbCommands are the subcommands of `choirctl kb`.
var kbCommands = []command{
	{name: "search", args: "<query> [--agent ID] [--kind K] [--limit N] [--json]", summary: "find objects of the runs' knowledge base: pointers to cite, with snippets", run: kbSearch},
}

func kbSearch(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "kb search", "kb search <query> [--agent ID] [--kind K] [--limit N] [--json]")
	agent := fs.String("agent", "", "only objects of this agent's runs")
	kind := fs.String("kind", "", "only objects of this kind: claim, hypothesis, hyperthesis, conjecture, drive, belief, attestation, patch, source, extract")
	limit := fs.Int("limit", 0, "how many pointers, 1 to 100 (default 10)")
	asJSON := fs.Bool("json", false, "print choird's answer as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	q := strings.Join(fs.Args(), " ")
	if strings.TrimSpace(q) == "" {
		return usagef("give a query: the words to look for")
	}
	if *limit < 0 || *limit > 100 {
		return usagef("--limit %d: want 1 to 100", *limit)
	}
	c := e.client()
	defer c.Close()
	ans, err := c.KBSearch(ctx, ctl.KBSearch{Query: q, Agent: *agent, Kind: *kind, Limit: *limit})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, ans)
	}
	if ans.Note != "" {
		fmt.Fprintln(e.stdout, "note: "+ans.Note)
	}
	if len(ans.Pointers) == 0 {
		fmt.Fprintln(e.stdout, "nothing found")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCORE\tCITE\tKIND\tSNIPPET")
	for _, p := range ans.Pointers {
		snippet := strings.Join(strings.Fields(p.Snippet), " ")
		if len(snippet) > 100 {
			snippet = strings.ToValidUTF8(snippet[:100], "") + "…"
		}
		fmt.Fprintf(tw, "%.4f\tsha256:%s\t%s\t%s\n", p.Score, p.Object, p.Kind, snippet)
	}
	return tw.Flush()
}
