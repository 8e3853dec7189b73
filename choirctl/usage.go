package main

// choirctl usage [--agent A] [--since T] [--by agent|model|session|day] [--json]
// choirctl usage allow <agent> <amount> [--tokens] --until <time>
//
// The usage ledger (issue 23): every model call attempt choird recorded,
// grouped, with tokens (cached ones apart), cost in the installation's
// currency and, per agent, today's spend against its daily caps. `usage
// allow` raises an agent's caps by an amount (currency, or tokens with
// --tokens) until a time; choird logs who granted it. A time is RFC 3339
// (2026-11-25T18:00:00Z), a UTC date (2026-11-25), or a duration: ago for
// --since (24h, 7d), ahead for --until (2h, 1d).

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"choir/internal/ctl"
)

// usageCommands are the subcommands of `choirctl usage`, which otherwise
// runs itself.
var usageCommands = []command{
	{name: "allow", args: "<agent> <amount> [--tokens] --until <time>", summary: "raise an agent's daily caps by an amount until a time", run: usageAllow},
}

func runUsage(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "usage", "usage [--agent A] [--since T] [--by agent|model|session|day] [--json]\n       choirctl usage allow <agent> <amount> [--tokens] --until <time>")
	agent := fs.String("agent", "", "only this agent's calls")
	since := fs.String("since", "", "only calls since this time (RFC 3339, a UTC date, or a duration ago like 24h or 7d)")
	by := fs.String("by", "agent", "group by agent, model, session or day")
	asJSON := fs.Bool("json", false, "print choird's answer as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("usage takes no arguments (did you mean `usage allow <agent> <amount> --until <time>`?)")
	}
	switch *by {
	case "agent", "model", "session", "day":
	default:
		return usagef("--by %q: want agent, model, session or day", *by)
	}
	q := ctl.UsageQuery{Agent: *agent, By: *by}
	if *since != "" {
		t, err := parseWhen(*since, -1)
		if err != nil {
			return usagef("--since: %v", err)
		}
		q.Since = t
	}
	c := e.client()
	defer c.Close()
	rep, err := c.Usage(ctx, q)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printUsage(e, rep)
	return nil
}

func printUsage(e *env, rep *ctl.UsageReport) {
	if len(rep.Rows) == 0 {
		fmt.Fprintln(e.stdout, "no model calls recorded")
	} else {
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		head := strings.ToUpper(rep.By)
		if rep.By == "session" {
			head = "SESSION\tAGENT"
		}
		fmt.Fprintf(tw, "%s\tCALLS\tFAILED\tPROMPT\tCACHED\tCOMPLETION\tCOST (%s)\n", head, rep.Currency)
		for _, r := range rep.Rows {
			key := r.Key
			if rep.By == "session" {
				key += "\t" + r.Agent
			}
			cost := strconv.FormatFloat(r.Cost, 'f', 4, 64)
			if r.Unpriced > 0 {
				cost += fmt.Sprintf(" (+%d calls unpriced)", r.Unpriced)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\n", key, r.Calls, r.Failed, r.PromptTokens, r.CachedTokens, r.CompletionTokens, cost)
		}
		tw.Flush()
	}
	for _, a := range slices.Sorted(maps.Keys(rep.Today)) {
		fmt.Fprintf(e.stdout, "%s: %s\n", a, rep.Today[a])
	}
}

func usageAllow(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "usage allow", "usage allow <agent> <amount> [--tokens] --until <time>")
	tokens := fs.Bool("tokens", false, "the amount is tokens, not the installation's currency")
	until := fs.String("until", "", "when the raise ends (RFC 3339, a UTC date, or a duration ahead like 2h or 1d); required")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usagef("usage allow takes the agent and the amount: usage allow <agent> <amount> [--tokens] --until <time>")
	}
	amount, err := strconv.ParseFloat(fs.Arg(1), 64)
	if err != nil || !(amount > 0) {
		return usagef("amount %q: want a positive number (in the installation's currency, or tokens with --tokens)", fs.Arg(1))
	}
	if *until == "" {
		return usagef("say until when with --until <time> (for example --until 6h)")
	}
	t, err := parseWhen(*until, +1)
	if err != nil {
		return usagef("--until: %v", err)
	}
	c := e.client()
	defer c.Close()
	if err := c.AllowUsage(ctx, ctl.UsageAllow{Agent: fs.Arg(0), Amount: amount, Tokens: *tokens, Until: t}); err != nil {
		return err
	}
	unit := "in the installation's currency"
	if *tokens {
		unit = "tokens"
	}
	fmt.Fprintf(e.stdout, "%s may spend %s more (%s) until %s\n", fs.Arg(0), fs.Arg(1), unit, t.UTC().Format("2006-01-02 15:04 UTC"))
	return nil
}

// parseWhen reads a time: RFC 3339, a UTC date, or a duration (with d for
// days) before now (sign -1) or after it (+1).
func parseWhen(s string, sign int) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	d, err := parseDays(strings.TrimPrefix(s, "+"))
	if err != nil || d <= 0 {
		return time.Time{}, fmt.Errorf("%q: want RFC 3339 (2026-11-25T18:00:00Z), a date (2026-11-25) or a duration (2h, 7d)", s)
	}
	return time.Now().Add(time.Duration(sign) * d), nil
}

func parseDays(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days > 3660 {
			return 0, fmt.Errorf("bad days")
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}
