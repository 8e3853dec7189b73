package gateway

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"choir/choird/lease"
	"choir/internal/ctl"
)

// startKeys are /start's key=value overrides (§6.4), with short aliases.
var startKeys = map[string]func(o *lease.Overrides, v string){
	"workspace":     func(o *lease.Overrides, v string) { o.Workspace = v },
	"llm":           func(o *lease.Overrides, v string) { o.LLM = v },
	"core_llm":      func(o *lease.Overrides, v string) { o.CoreLLM = v },
	"summary_llm":   func(o *lease.Overrides, v string) { o.SummaryLLM = v },
	"voice_profile": func(o *lease.Overrides, v string) { o.VoiceProfile = v },
	"voice":         func(o *lease.Overrides, v string) { o.VoiceProfile = v },
	"git_identity":  func(o *lease.Overrides, v string) { o.GitIdentity = v },
	"git":           func(o *lease.Overrides, v string) { o.GitIdentity = v },
	"notion":        func(o *lease.Overrides, v string) { o.Notion = v },
	"email":         func(o *lease.Overrides, v string) { o.Email = v },
}

// parseOverrides reads key=value words; the DM is never one of them: the
// DM that sends /start is the binding (§19.4).
func parseOverrides(words []string) (lease.Overrides, error) {
	var o lease.Overrides
	for _, w := range words {
		if f := strings.ToLower(strings.TrimPrefix(w, "--")); f == "fresh" {
			o.Fresh = true // a new session, not the last one resumed
			continue
		}
		k, v, ok := strings.Cut(w, "=")
		k = strings.ToLower(strings.TrimPrefix(k, "--"))
		if k == "dm" {
			return o, fmt.Errorf("%q: /start always binds the DM it is sent from", w)
		}
		set, known := startKeys[k]
		if !ok || v == "" || !known {
			keys := make([]string, 0, len(startKeys))
			for k := range startKeys {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			return o, fmt.Errorf("%q: want fresh, or key=value with a key among %s", w, strings.Join(keys, ", "))
		}
		set(&o, v)
	}
	return o, nil
}

// cmdStart starts an agent bound to this DM; a DM already bound to a
// running agent is refused (one agent per DM).
func cmdStart(ctx context.Context, c *call) {
	if len(c.args) == 0 {
		c.say(ctx, "Usage: /start <agent> [fresh] [workspace=… llm=… voice_profile=… git_identity=… notion=… email=…]\n"+
			"The agent's last session resumes where it was saved; fresh starts a new one.\n"+c.boundLine())
		return
	}
	agent := c.args[0]
	if bound, ok := c.g.control.AgentForDM(c.dm.name); ok {
		c.say(ctx, fmt.Sprintf("This DM is already bound to %s; /stop it first (one agent per DM).", bound))
		return
	}
	o, err := parseOverrides(c.args[1:])
	if err != nil {
		c.say(ctx, "Cannot start: "+err.Error())
		return
	}
	o.DM = c.dm.name
	c.say(ctx, fmt.Sprintf("Starting %s…", agent))
	st, err := c.g.control.Start(ctx, agent, o)
	if err != nil {
		c.controlErr(ctx, "start "+agent, err)
		return
	}
	if r := st.Resumed; r != nil {
		c.say(ctx, fmt.Sprintf("%s is running again: its last session (which %s) resumed at event %d. Messages here now go to it. /start %s fresh begins a new session instead.", agent, r.From, r.Rev, agent))
		return
	}
	c.say(ctx, fmt.Sprintf("%s is running (session %s). Messages here now go to it.", agent, st.SessionID))
}

// formatStatus renders `agent status` for a DM.
func formatStatus(st ctl.AgentStatus) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: %s\n", st.AgentID, st.State)
	for _, why := range st.Degraded {
		fmt.Fprintf(&sb, "degraded: %s\n", why)
	}
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&sb, "%s: %s\n", k, v)
		}
	}
	line("session", st.SessionID)
	line("spend", st.Spend)
	line("uptime", st.Uptime)
	line("image", st.Image)
	if st.ConfigVersion != 0 {
		line("config version", fmt.Sprint(st.ConfigVersion))
	}
	if b := st.Bindings; b != nil {
		var parts []string
		for _, kv := range [][2]string{{"workspace", b.Workspace}, {"llm", b.LLM}, {"core_llm", b.CoreLLM}, {"summary_llm", b.SummaryLLM}, {"voice", b.VoiceProfile},
			{"git", b.GitIdentity}, {"notion", b.Notion}, {"email", b.Email}, {"dm", b.DM}} {
			if kv[1] != "" {
				parts = append(parts, kv[0]+"="+kv[1])
			}
		}
		line("bindings", strings.Join(parts, " "))
	}
	lanes := make([]string, 0, len(st.Lanes))
	for name := range st.Lanes {
		lanes = append(lanes, name)
	}
	sort.Strings(lanes)
	for _, name := range lanes {
		l := st.Lanes[name]
		s := l.State
		if l.Skill != "" {
			s += fmt.Sprintf(", skill %s step %d", l.Skill, l.Step)
		}
		if len(l.BudgetRemaining) > 0 {
			keys := make([]string, 0, len(l.BudgetRemaining))
			for k := range l.BudgetRemaining {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var bs []string
			for _, k := range keys {
				bs = append(bs, fmt.Sprintf("%s %d", k, l.BudgetRemaining[k]))
			}
			s += " (left: " + strings.Join(bs, ", ") + ")"
		}
		line("lane "+name, s)
		line("MCP servers down", l.MCPDown)
		line("MCP calls in progress", l.MCPProgress)
		var withheld []string
		for _, srv := range l.MCPServers {
			if len(srv.Withheld) > 0 {
				withheld = append(withheld, srv.Server+" "+strings.Join(srv.Withheld, " "))
			}
		}
		if len(withheld) > 0 {
			line("MCP tool changes withheld", strings.Join(withheld, "; ")+" (accept: choirctl agent build "+st.AgentID+")")
		}
	}
	return strings.TrimRight(sb.String(), "\n")
}
