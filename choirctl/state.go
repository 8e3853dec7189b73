package main

// choirctl state [--agent A] [--json]
//
// The AHDB state vector of seed 002 §5, as choird rebuilds it from the
// receipts of headless runs alone: ASSERT (promoted atoms, each citing
// receipts), HYPOTHESIZE (with test and budget), DRIVE (with anti-drive),
// BELIEVE (with trigger and effect), the hyperthesis (with its bound), the
// conjectures, plan_next (the conjecture the director tests next, and the
// rule that chose it), open requests, what was refuted or retracted, and
// what the ASSERT rule refused. Each entry names the receipt that made it
// (<run id>#<seq>; see `choirctl run receipts`).

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
)

func runState(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "state", "state [--agent A] [--json]")
	agent := fs.String("agent", "", "only the state built from this agent's runs")
	asJSON := fs.Bool("json", false, "print the state vector as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("state takes no arguments")
	}
	c := e.client()
	defer c.Close()
	st, err := c.AHDB(ctx, *agent)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, st)
	}
	w := e.stdout
	fmt.Fprintf(w, "state vector from %d receipts of %d runs\n", st.Receipts, len(st.Runs))
	section := func(name string, n int) bool {
		fmt.Fprintf(w, "\n%s (%d)\n", name, n)
		return n > 0
	}
	if section("ASSERT", len(st.Assert)) {
		for _, a := range st.Assert {
			fmt.Fprintf(w, "  %s  %s\n      cites %s\n", a.Ref, a.Text, strings.Join(a.Cites, ", "))
		}
	}
	if section("HYPOTHESIZE", len(st.Hypothesize)) {
		for _, h := range st.Hypothesize {
			fmt.Fprintf(w, "  %s  %s\n      test: %s; budget: %s\n", h.Ref, h.Text, h.Test, budgetLine(h.Budget))
		}
	}
	if section("DRIVE", len(st.Drive)) {
		for _, d := range st.Drive {
			fmt.Fprintf(w, "  %s  %s\n      anti-drive: %s\n", d.Ref, d.Text, d.AntiDrive)
		}
	}
	if section("BELIEVE", len(st.Believe)) {
		for _, b := range st.Believe {
			fmt.Fprintf(w, "  %s  %s\n      trigger: %s; effect: %s\n", b.Ref, b.Text, b.Trigger, b.Effect)
		}
	}
	if section("HYPERTHESIS", len(st.Hyperthesis)) {
		for _, h := range st.Hyperthesis {
			state := "unbounded"
			if h.Mitigated != "" {
				state = "mitigated by " + h.Mitigated
			}
			fmt.Fprintf(w, "  %s  %s\n      bound: %s (%s)\n", h.Ref, h.Text, h.Bound, state)
		}
	}
	if section("CONJECTURES", len(st.Conjectures)) {
		for _, c := range st.Conjectures {
			fmt.Fprintf(w, "  %s  %s\n      test: %s; edge: %s; ΔO: %s; scope: %s; cited %d", c.Ref, c.Claim, c.Test, c.Edge, c.DeltaO, c.Scope, c.Cited)
			if c.Outcome != "" {
				fmt.Fprintf(w, "; %s by %s", c.Outcome, c.By)
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprint(w, "\nPLAN NEXT\n")
	if p := st.PlanNext; p != nil {
		fmt.Fprintf(w, "  test %s  %s\n      by: %s; scope: %s\n      rule: %s\n", p.Conjecture, p.Claim, p.Test, p.Scope, p.Rule)
	} else {
		fmt.Fprint(w, "  no untested conjecture\n")
	}
	if len(st.Requests) > 0 {
		section("OPEN REQUESTS", len(st.Requests))
		for _, r := range st.Requests {
			fmt.Fprintf(w, "  %s  %s  %s\n", r.Ref, r.Type, r.Text)
		}
	}
	if len(st.Refuted) > 0 {
		section("REFUTED", len(st.Refuted))
		for _, r := range st.Refuted {
			fmt.Fprintf(w, "  %s  %s (by %s)\n", r.Ref, r.Text, r.By)
		}
	}
	if len(st.Retracted) > 0 {
		section("RETRACTED", len(st.Retracted))
		for _, r := range st.Retracted {
			fmt.Fprintf(w, "  %s  (by %s)\n", r.Ref, r.By)
		}
	}
	if len(st.Refused) > 0 {
		section("REFUSED", len(st.Refused))
		for _, r := range st.Refused {
			fmt.Fprintf(w, "  %s  %s\n", r.Ref, r.Why)
		}
	}
	if len(st.Runs) > 0 {
		section("RUNS", len(st.Runs))
		for _, id := range slices.Sorted(maps.Keys(st.Runs)) {
			fmt.Fprintf(w, "  %s  %s  %d changes\n", id, st.Runs[id], st.Deltas[id])
		}
	}
	if len(st.Skipped) > 0 {
		section("UNREADABLE RECEIPTS", len(st.Skipped))
		for _, s := range st.Skipped {
			fmt.Fprintf(w, "  %s  %s\n", s.Ref, s.Why)
		}
	}
	return nil
}
