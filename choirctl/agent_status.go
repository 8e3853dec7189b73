package main

// choirctl agent status <agent-id> [--json]
// choirctl agent list [--json]
//
// status shows one agent in detail: state, what is degraded (heartbeats
// refused, the engine or Postgres unreachable), session, container, image,
// uptime, last heartbeat, config version, resource bindings, the restart
// policy (restarts so far, the next one, or why it gave up) and, per
// lane, its state, tokens and tool calls used and budget left (the edge's
// are the session's: every lane's tokens and tool calls, and the session
// budgets). list shows every configured agent with its state.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"text/tabwriter"
	"time"

	"choir/internal/ctl"
)

func agentStatus(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "agent status", "agent status <agent-id> [--json]")
	asJSON := fs.Bool("json", false, "print the status as JSON")
	arg, err := oneArg(fs, args, "agent id")
	if err != nil {
		return err
	}
	c := e.client()
	defer c.Close()
	st, err := c.Agent(ctx, arg)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, st)
	}
	return writeAgentStatus(e.stdout, st)
}

// restartLine says what the restart policy is and has done.
func restartLine(r *ctl.RestartStatus, now time.Time) string {
	if r.Policy != "on-crash" {
		return r.Policy + " (a crashed session stays ended)"
	}
	line := fmt.Sprintf("on-crash, %d restart(s) in a row so far of at most %d", r.Restarts, r.MaxRestarts)
	switch {
	case r.GaveUp != "":
		line += "; GAVE UP: " + r.GaveUp + "; start it again by hand"
	case r.Restarting:
		line += "; restarting now"
	case !r.NextAt.IsZero():
		wait := max(r.NextAt.Sub(now), 0).Round(time.Second)
		line += fmt.Sprintf("; next restart in %s (at %s, after a wait of %s)", wait, r.NextAt.Local().Format("15:04:05"), r.Backoff)
	}
	if r.LastCrash != "" && r.GaveUp == "" {
		line += "; last crash: " + r.LastCrash
	}
	if r.LastError != "" && r.GaveUp == "" {
		line += "; last restart failed: " + r.LastError
	}
	return line
}

// outboxLine says what one DM's outbox holds: "3 queued, the oldest for
// 4s; 2 failed; REFUSED by Telegram: ...".
func outboxLine(o ctl.DMOutbox) string {
	line := fmt.Sprintf("%d queued", o.Queued)
	if o.Queued > 0 {
		line += ", the oldest for " + (time.Duration(o.OldestAgeSeconds * float64(time.Second))).Round(time.Second).String()
	}
	if o.Failed > 0 {
		line += fmt.Sprintf("; %d failed", o.Failed)
	}
	if o.Refused != "" {
		line += "; REFUSED by Telegram since " + o.RefusedAt.Local().Format("2006-01-02 15:04:05") + ": " + o.Refused
	}
	return line
}

// writeAgentStatus renders one agent's status for people.
func writeAgentStatus(w io.Writer, st *ctl.AgentStatus) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "agent\t%s\n", st.AgentID)
	fmt.Fprintf(tw, "state\t%s\n", st.State)
	for _, why := range st.Degraded {
		fmt.Fprintf(tw, "DEGRADED\t%s\n", why)
	}
	if r := st.Restart; r != nil {
		fmt.Fprintf(tw, "restart\t%s\n", restartLine(r, time.Now()))
	}
	if st.Spend != "" {
		fmt.Fprintf(tw, "spend\t%s\n", st.Spend)
	}
	for _, o := range st.Outbox {
		fmt.Fprintf(tw, "outbox %s\t%s\n", o.DM, outboxLine(o))
	}
	if st.SessionID != "" {
		fmt.Fprintf(tw, "session\t%s\n", st.SessionID)
		fmt.Fprintf(tw, "container\t%s\n", st.Container)
		fmt.Fprintf(tw, "image\t%s\n", st.Image)
		fmt.Fprintf(tw, "uptime\t%s\n", st.Uptime)
		if !st.LastHeartbeat.IsZero() {
			fmt.Fprintf(tw, "last heartbeat\t%s ago\n", time.Since(st.LastHeartbeat).Round(time.Millisecond))
		}
		fmt.Fprintf(tw, "config version\t%d\n", st.ConfigVersion)
		if r := st.Resumed; r != nil {
			fmt.Fprintf(tw, "resumed\tat event %d, after it %s (%d time(s))\n", r.Rev, r.From, r.Resumes)
		}
	}
	if b := st.Bindings; b != nil {
		fmt.Fprintf(tw, "bindings\tworkspace=%s llm=%s git_identity=%s dm=%s", b.Workspace, b.LLM, b.GitIdentity, b.DM)
		for _, kv := range [][2]string{{"core_llm", b.CoreLLM}, {"summary_llm", b.SummaryLLM}, {"voice_profile", b.VoiceProfile}, {"notion", b.Notion}, {"email", b.Email}} {
			if kv[1] != "" {
				fmt.Fprintf(tw, " %s=%s", kv[0], kv[1])
			}
		}
		fmt.Fprintln(tw)
	}
	for _, o := range st.Overrides {
		fmt.Fprintf(tw, "override\t%s\n", o)
	}
	lanes := make([]string, 0, len(st.Lanes))
	for name := range st.Lanes {
		lanes = append(lanes, name)
	}
	sort.Strings(lanes)
	for _, name := range lanes {
		l := st.Lanes[name]
		fmt.Fprintf(tw, "lane %s\t%s", name, l.State)
		if l.Skill != "" {
			fmt.Fprintf(tw, " skill=%s step=%d", l.Skill, l.Step)
		}
		fmt.Fprintf(tw, " tokens=%d tool_calls=%d", l.TokensUsed, l.ToolCalls)
		if len(l.BudgetRemaining) > 0 {
			fmt.Fprint(tw, " budget_left:")
			for _, k := range slices.Sorted(maps.Keys(l.BudgetRemaining)) {
				fmt.Fprintf(tw, " %s=%d", k, l.BudgetRemaining[k])
			}
		}
		fmt.Fprintln(tw)
		if l.MCPDown != "" {
			fmt.Fprintf(tw, "mcp down\t%s\n", l.MCPDown)
		}
		if l.MCPProgress != "" {
			fmt.Fprintf(tw, "mcp progress\t%s\n", l.MCPProgress)
		}
	}
	return tw.Flush()
}

func agentList(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "agent list", "agent list [--json]")
	asJSON := fs.Bool("json", false, "print the list as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c := e.client()
	defer c.Close()
	list, err := c.Agents(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, list)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tSTATE\tSESSION\tUPTIME\tWORKSPACE")
	for _, st := range list {
		ws := ""
		if st.Bindings != nil {
			ws = st.Bindings.Workspace
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", st.AgentID, st.State, dash(st.SessionID), dash(st.Uptime), dash(ws))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func printJSON(e *env, v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func printJSONLine(e *env, v any) error {
	return json.NewEncoder(e.stdout).Encode(v)
}
