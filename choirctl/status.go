package main

// choirctl status [--json] [--wait D]
//
// Shows whether choird is running and healthy (or degraded, with each
// reason: Postgres or the Docker engine unreachable), the running config
// version, how each startup step went, and how many resources are loaded. With
// --wait it first waits up to D for choird to answer (after `choird &`).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"choir/internal/ctl"
)

func runStatus(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "status", "status [--json] [--wait D]")
	asJSON := fs.Bool("json", false, "print the status as JSON")
	wait := fs.Duration("wait", 0, "wait up to this long for choird to answer")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c := e.client()
	defer c.Close()
	deadline := time.Now().Add(*wait)
	st, err := c.Status(ctx)
	for err != nil && errors.Is(err, ctl.ErrNotRunning) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		st, err = c.Status(ctx)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	health := "healthy"
	switch {
	case len(st.Degraded) > 0:
		health = "DEGRADED"
	case !st.Healthy:
		health = "NOT healthy"
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "choird\t%s (pid %d, up %s)\n", health, st.PID, time.Since(st.StartedAt).Round(time.Second))
	fmt.Fprintf(tw, "home\t%s\n", st.Home)
	fmt.Fprintf(tw, "config\tversion %d (%s)\n", st.ConfigVersion, st.ConfigHash)
	fmt.Fprintf(tw, "agents reach choird\t%s %s\n", st.Transport, st.AgentSocket)
	fmt.Fprintf(tw, "agents running\t%d\n", st.AgentsRunning)
	names := make([]string, 0, len(st.Resources))
	for n := range st.Resources {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %d", n, st.Resources[n]))
	}
	fmt.Fprintf(tw, "resources\t%s\n", strings.Join(parts, ", "))
	fmt.Fprintf(tw, "log archive\t%d files, %.1f MiB\n", st.LogArchive.Files, float64(st.LogArchive.Bytes)/(1<<20))
	tw.Flush()
	for _, why := range st.Degraded {
		fmt.Fprintf(e.stdout, "degraded: %s\n", why)
	}
	for _, g := range st.Gateways {
		state := "polling"
		switch {
		case g.Unauthorized:
			state = "token refused (401): check its secret"
		case g.Conflicts > 0:
			state = fmt.Sprintf("%d conflicts (409): another process polls this bot", g.Conflicts)
		case !g.Polling && g.LastErr != "":
			state = "failing: " + g.LastErr
		}
		fmt.Fprintf(e.stdout, "gateway %-12s %s; %d updates, %d dropped, %d errors\n", g.Gateway, state, g.Updates, g.Dropped, g.Errors)
	}
	fmt.Fprintln(e.stdout, "startup:")
	for _, s := range st.Steps {
		line := fmt.Sprintf("  %2d. %-40s %s", s.N, s.Name, s.Status)
		if s.Detail != "" {
			line += ": " + s.Detail
		}
		fmt.Fprintln(e.stdout, line)
	}
	return nil
}
