package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"choir/internal/telegram"
)

// call is one command a DM sent.
type call struct {
	g    *Gateway
	b    *bot
	dm   dmInfo
	m    *telegram.Message
	name string   // without the slash, lower case
	args []string // the words after it
	rest string   // the text after it, as typed
}

func (c *call) say(ctx context.Context, text string) { c.b.reply(ctx, c.dm, text) }

// command is one entry of the command table (§19.3).
type command struct {
	name  string
	admin bool   // admin DMs only
	menu  string // the regular menu's description; "" keeps it out of that menu
	// adminMenu is the admin menu's description, when it differs.
	adminMenu string
	run       func(ctx context.Context, c *call)
}

// commands is the table, in menu order. Names are Telegram's command
// syntax (a-z, 0-9, _); aliases maps the spellings of §19.3 onto them.
var commands = []command{
	{name: "status", menu: "Show the agent's status", adminMenu: "Show an agent's status: /status [agent]", run: cmdStatus},
	{name: "stop", menu: "Stop the agent", adminMenu: "Stop an agent: /stop [agent]", run: cmdStop},
	{name: "restart", menu: "Restart the agent", adminMenu: "Restart an agent: /restart [agent]", run: cmdRestart},
	{name: "cores", menu: "List active core jobs", run: cmdControl(true)},
	{name: "cancel", menu: "Cancel a core job: /cancel <name>", run: cmdControl(false)},
	{name: "compact", menu: "Compact working memory", run: cmdControl(true)},
	{name: "events", menu: "Show the last events", run: cmdControl(true)},
	{name: "model", menu: "Show or switch a model: /model llm|core_llm|summary_llm <name>", run: cmdControl(false)},
	{name: "voice", menu: "Show or switch the voice: /voice <name>", run: cmdControl(false)},
	{name: "usage", menu: "What the agent's model calls cost today and this month", adminMenu: "What model calls cost: /usage [agent]", run: cmdUsage},
	{name: "inject", menu: "Inject a message at the next safe point", run: cmdInject},
	{name: "approvals", menu: "List pending approvals", adminMenu: "List all pending approvals", run: cmdApprovals},
	{name: "approve", menu: "Approve: /approve [id]", run: cmdDecide(true)},
	{name: "reject", menu: "Reject: /reject [id]", run: cmdDecide(false)},
	{name: "start", admin: true, adminMenu: "Start an agent here: /start <agent> [key=value…]", run: cmdStart},
	{name: "update", admin: true, adminMenu: "Build and redeploy: /update [agent]", run: cmdControl(true)},
	{name: "update_all", admin: true, adminMenu: "Build and redeploy every agent", run: cmdUpdateAll},
	{name: "config", admin: true, adminMenu: "/config load | diff | apply | show", run: cmdConfig},
	{name: "workspace", admin: true, adminMenu: "/workspace list | reset <name>", run: cmdWorkspace},
	{name: "secret", admin: true, adminMenu: "/secret list", run: cmdSecret},
	{name: "agent", admin: true, adminMenu: "/agent list | build <agent>", run: cmdAgent},
}

// help comes last; it is added at init because it lists the table.
func init() {
	commands = append(commands, command{name: "help", menu: "List the commands", run: cmdHelp})
}

var aliases = map[string]string{"update-all": "update_all", "updateall": "update_all"}

func lookup(name string) (command, bool) {
	if a, ok := aliases[name]; ok {
		name = a
	}
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// menu is the command menu of a regular or an admin DM.
func menu(admin bool) []telegram.BotCommand {
	var out []telegram.BotCommand
	for _, c := range commands {
		desc := c.menu
		if admin && c.adminMenu != "" {
			desc = c.adminMenu
		}
		if desc == "" || (c.admin && !admin) {
			continue
		}
		out = append(out, telegram.BotCommand{Command: c.name, Description: desc})
	}
	return out
}

// command parses and runs "/name[@bot] args…".
func (g *Gateway) command(ctx context.Context, b *bot, dm dmInfo, m *telegram.Message, text string) {
	word, rest, _ := strings.Cut(text[1:], " ")
	if i := strings.IndexAny(word, "\n\t"); i >= 0 {
		rest = word[i+1:] + " " + rest
		word = word[:i]
	}
	word, _, _ = strings.Cut(word, "@")
	name := strings.ToLower(word)
	c := &call{g: g, b: b, dm: dm, m: m, name: name, args: strings.Fields(rest), rest: strings.TrimSpace(rest)}
	cmd, ok := lookup(name)
	if !ok {
		c.say(ctx, fmt.Sprintf("There is no /%s. Send /help for the list.", name))
		return
	}
	b.log.Info("gateway command", keyDM, dm.name, keyCommand, cmd.name, "admin", dm.admin)
	if cmd.admin && !dm.admin {
		if cmd.name == "start" {
			c.say(ctx, "Starting agents is for admin DMs. "+c.boundLine())
			return
		}
		c.say(ctx, fmt.Sprintf("/%s is for admin DMs only; this DM can control only its own agent. Send /help for what it can do.", name))
		return
	}
	cmd.run(ctx, c)
}

// boundLine says which agent this DM talks to.
func (c *call) boundLine() string {
	if a, ok := c.g.control.AgentForDM(c.dm.name); ok {
		return fmt.Sprintf("This DM is bound to %s.", a)
	}
	return noAgentText(c.dm)
}

// target resolves the agent a command acts on: the DM's bound agent, or,
// when takesAgent and the DM is an admin DM, the agent named first. Regular
// DMs cannot name one (§19.3). It returns the remaining arguments; ok false
// means the DM has been answered already.
func (c *call) target(ctx context.Context, takesAgent bool) (agent string, args []string, ok bool) {
	args = c.args
	if takesAgent && len(args) > 0 {
		if !c.dm.admin {
			c.say(ctx, fmt.Sprintf("/%s acts on this DM's own agent and takes no agent name: send /%s alone. Only admin DMs can act on other agents.", c.name, c.name))
			return "", nil, false
		}
		return args[0], args[1:], true
	}
	agent, bound := c.g.control.AgentForDM(c.dm.name)
	if !bound {
		if c.dm.admin && takesAgent {
			c.say(ctx, fmt.Sprintf("This DM has no running agent: name one, /%s <agent> (see /agent list).", c.name))
		} else {
			c.say(ctx, noAgentText(c.dm))
		}
		return "", nil, false
	}
	return agent, args, true
}

// controlErr answers a failed control-plane call.
func (c *call) controlErr(ctx context.Context, what string, err error) {
	if errors.Is(err, ErrNotAvailable) {
		c.say(ctx, fmt.Sprintf("/%s is not available in this choird yet.", c.name))
		return
	}
	c.b.log.Warn("gateway command failed", keyDM, c.dm.name, keyCommand, c.name, keyError, err.Error())
	c.say(ctx, fmt.Sprintf("%s failed: %v", what, err))
}

func cmdHelp(ctx context.Context, c *call) {
	var sb strings.Builder
	sb.WriteString(c.boundLine() + "\nCommands:\n")
	for _, bc := range menu(c.dm.admin) {
		fmt.Fprintf(&sb, "/%s — %s\n", bc.Command, bc.Description)
	}
	c.say(ctx, sb.String())
}

func cmdStatus(ctx context.Context, c *call) {
	agent, _, ok := c.target(ctx, true)
	if !ok {
		return
	}
	st, err := c.g.control.Status(agent)
	if err != nil {
		c.controlErr(ctx, "status of "+agent, err)
		return
	}
	c.say(ctx, formatStatus(st))
}

func cmdStop(ctx context.Context, c *call) {
	agent, _, ok := c.target(ctx, true)
	if !ok {
		return
	}
	c.say(ctx, fmt.Sprintf("Stopping %s…", agent))
	if err := c.g.control.Stop(ctx, agent); err != nil {
		c.controlErr(ctx, "stop "+agent, err)
		return
	}
	c.say(ctx, fmt.Sprintf("%s stopped.", agent))
}

func cmdRestart(ctx context.Context, c *call) {
	agent, _, ok := c.target(ctx, true)
	if !ok {
		return
	}
	c.say(ctx, fmt.Sprintf("Restarting %s…", agent))
	st, err := c.g.control.Restart(ctx, agent)
	if err != nil {
		c.controlErr(ctx, "restart "+agent, err)
		return
	}
	c.say(ctx, fmt.Sprintf("%s restarted (session %s).", agent, st.SessionID))
}

func cmdInject(ctx context.Context, c *call) {
	agent, _, ok := c.target(ctx, false)
	if !ok {
		return
	}
	if c.rest == "" {
		c.say(ctx, "Usage: /inject <message>")
		return
	}
	if err := c.g.control.Inject(agent, c.rest); err != nil {
		c.controlErr(ctx, "inject into "+agent, err)
		return
	}
	c.say(ctx, fmt.Sprintf("Injected into %s at its next safe point.", agent))
}

// cmdControl hands a command the control plane backs (or not yet) to
// Control.Command; takesAgent lets an admin name the agent first.
// cmdUsage shows the usage ledger: a regular DM its own agent's, an admin
// DM every agent's or the one it names.
func cmdUsage(ctx context.Context, c *call) {
	if c.dm.admin {
		cmd := Command{Name: "usage"}
		if len(c.args) > 0 {
			cmd.Agent = c.args[0]
		}
		c.runControl(ctx, cmd)
		return
	}
	agent, _, ok := c.target(ctx, true)
	if !ok {
		return
	}
	c.runControl(ctx, Command{Name: "usage", Agent: agent})
}

func cmdControl(takesAgent bool) func(ctx context.Context, c *call) {
	return func(ctx context.Context, c *call) {
		agent, args, ok := c.target(ctx, takesAgent)
		if !ok {
			return
		}
		c.runControl(ctx, Command{Name: c.name, Agent: agent, Args: args})
	}
}

func (c *call) runControl(ctx context.Context, cmd Command) {
	cmd.DM, cmd.Admin = c.dm.name, c.dm.admin
	cmd.Progress = func(text string) { c.say(ctx, text) }
	out, err := c.g.control.Command(ctx, cmd)
	if err != nil {
		c.controlErr(ctx, "/"+c.name, err)
		return
	}
	if strings.TrimSpace(out) == "" {
		out = "Done."
	}
	c.say(ctx, out)
}

func cmdUpdateAll(ctx context.Context, c *call) {
	c.name = "update-all"
	c.runControl(ctx, Command{Name: "update-all", Args: c.args})
}

func cmdConfig(ctx context.Context, c *call) {
	if len(c.args) != 1 || (c.args[0] != "load" && c.args[0] != "diff" && c.args[0] != "apply" && c.args[0] != "show") {
		c.say(ctx, "Usage: /config load | diff | apply | show")
		return
	}
	c.runControl(ctx, Command{Name: "config", Args: c.args})
}

func cmdSecret(ctx context.Context, c *call) {
	if len(c.args) != 1 || c.args[0] != "list" {
		c.say(ctx, "Usage: /secret list")
		return
	}
	names := c.g.control.SecretNames()
	if len(names) == 0 {
		c.say(ctx, "secrets.json holds no secrets.")
		return
	}
	c.say(ctx, "Secrets (names only):\n"+strings.Join(names, "\n"))
}

func cmdWorkspace(ctx context.Context, c *call) {
	switch {
	case len(c.args) == 1 && c.args[0] == "list":
		var sb strings.Builder
		for _, w := range c.g.control.Workspaces() {
			holder := "free"
			if w.Holder != "" {
				holder = "leased by " + w.Holder
			}
			fmt.Fprintf(&sb, "%s — %s (%s)\n", w.Name, w.Path, holder)
		}
		if sb.Len() == 0 {
			sb.WriteString("No workspaces are configured.")
		}
		c.say(ctx, sb.String())
	case len(c.args) == 2 && c.args[0] == "reset":
		res, err := c.g.control.ResetWorkspace(ctx, c.args[1])
		if err != nil {
			c.controlErr(ctx, "reset workspace "+c.args[1], err)
			return
		}
		msg := fmt.Sprintf("Workspace %s reset: %d entries removed.", res.Workspace, res.RemovedEntries)
		if res.StoppedAgent != "" {
			msg += fmt.Sprintf(" %s, which leased it, was stopped first.", res.StoppedAgent)
		}
		c.say(ctx, msg)
	default:
		c.say(ctx, "Usage: /workspace list | reset <name>")
	}
}

func cmdAgent(ctx context.Context, c *call) {
	switch {
	case len(c.args) == 1 && c.args[0] == "list":
		var sb strings.Builder
		for _, st := range c.g.control.List() {
			fmt.Fprintf(&sb, "%s — %s", st.AgentID, st.State)
			if st.Bindings != nil && st.Bindings.DM != "" {
				fmt.Fprintf(&sb, " (dm %s)", st.Bindings.DM)
			}
			if st.Uptime != "" {
				fmt.Fprintf(&sb, ", up %s", st.Uptime)
			}
			sb.WriteString("\n")
		}
		if sb.Len() == 0 {
			sb.WriteString("No agents are configured.")
		}
		c.say(ctx, sb.String())
	case len(c.args) == 2 && c.args[0] == "build":
		c.name = "agent build"
		c.runControl(ctx, Command{Name: "agent-build", Agent: c.args[1]})
	default:
		c.say(ctx, "Usage: /agent list | build <agent>")
	}
}
