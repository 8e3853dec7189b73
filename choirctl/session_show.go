package main

// choirctl session show <session-id> [--json]
//
// show prints one session: its agent, status, times, why it ended, and the
// session summary the agent wrote at its last graceful stop (§11.8), when
// it wrote one: title, summary, decisions, open items and facts. --json
// prints the same as choird sends it.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

func sessionShow(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "session show", "session show <session-id> [--json]")
	asJSON := fs.Bool("json", false, "print the session as JSON")
	id, err := oneArg(fs, args, "session id")
	if err != nil {
		return err
	}
	c := e.client()
	defer c.Close()
	s, err := c.Session(ctx, id)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, s)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	ended := "-"
	if !s.EndedAt.IsZero() {
		ended = s.EndedAt.Local().Format(time.DateTime)
	}
	fmt.Fprintf(tw, "session\t%s\n", s.SessionID)
	fmt.Fprintf(tw, "agent\t%s\n", s.AgentID)
	fmt.Fprintf(tw, "status\t%s\n", s.Status)
	fmt.Fprintf(tw, "started\t%s\n", s.StartedAt.Local().Format(time.DateTime))
	fmt.Fprintf(tw, "ended\t%s\n", ended)
	if s.EndReason != "" {
		fmt.Fprintf(tw, "end reason\t%s\n", s.EndReason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout)
	if len(s.Summary) == 0 {
		fmt.Fprintln(e.stdout, "no session summary (one is written at a graceful stop: choirctl agent stop)")
		return nil
	}
	return printSummary(e.stdout, s.Summary)
}

// printSummary prints a session summary: the members the agent writes
// today as text, any other member as JSON after them.
func printSummary(w io.Writer, raw json.RawMessage) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("the session summary choird sent is not a JSON object: %w", err)
	}
	text := func(name string) string {
		var s string
		json.Unmarshal(m[name], &s)
		delete(m, name)
		return strings.TrimSpace(s)
	}
	list := func(name, heading string) {
		var items []string
		json.Unmarshal(m[name], &items)
		delete(m, name)
		if len(items) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s:\n", heading)
		for _, it := range items {
			fmt.Fprintf(w, "  - %s\n", it)
		}
	}
	title := text("title")
	if title == "" {
		title = "(untitled)"
	}
	fmt.Fprintf(w, "Summary: %s\n\n", title)
	if s := text("summary"); s != "" {
		fmt.Fprintln(w, s)
	}
	list("decisions", "Decisions")
	list("open_items", "Open items")
	list("facts", "Facts")
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(w, "\n%s: %s\n", k, m[k])
	}
	return nil
}
