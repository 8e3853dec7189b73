// Command choirctl is choir's stateless admin CLI. It talks to choird over
// the admin socket (~/.choir.d/socks/ctl.sock) and edits the operator's own
// files in ~/.choir.d (init, secrets, agent init).
//
// Exit status: 0 ok, 1 failed, 2 usage.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"

	"choir/internal/config"
	"choir/internal/ctl"
)

// env is what every command gets: where the home is, and its streams.
type env struct {
	home   config.Home
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

func (e *env) client() *ctl.Client { return ctl.NewClient(e.home.AdminSocket()) }

// command is one row of the command table: a command, or a group whose
// subcommands dispatch again (at most two levels), or a command with
// subcommands of its own (usage, usage allow), which runs itself when its
// first argument names none of them. The table is the one source of
// dispatch, of `choirctl --help`, of each group's help and of `choirctl
// completion bash`, so none of them can drift from the others.
type command struct {
	name    string
	args    string                                                 // what follows the name in the help listing
	summary string                                                 // one line
	run     func(ctx context.Context, e *env, args []string) error // nil for a group
	subs    []command                                              // subcommands
}

// commands is the table of top-level commands. It is filled in init because
// `completion` reads it.
var commands []command

func init() {
	commands = []command{
		{name: "init", args: "[--global-repo DIR]", summary: "create ~/.choir.d with a skeleton config (and the global repo)", run: runInit},
		{name: "status", args: "[--json] [--wait D]", summary: "choird health, config version, loaded resources", run: runStatus},
		{name: "doctor", args: "[--json]", summary: "check the installation, one line a check, with what to do", run: runDoctor},
		{name: "config", summary: "the running configuration", subs: configCommands},
		{name: "secret", summary: "secret names and values in secrets.json", subs: secretCommands},
		{name: "logs", args: "<choird|agent-id> [--no-follow]", summary: "print a log, then follow it until Ctrl-C", run: runLogs},
		{name: "agent", summary: "agents: scaffold, build, start, stop, inspect", subs: agentCommands},
		{name: "chat", args: "<agent-id> [--once]", summary: "talk to a running agent from the terminal", run: runChat},
		{name: "session", summary: "sessions, their event logs and core jobs", subs: sessionCommands},
		{name: "memory", summary: "an agent's long-term memory: list, search, add, delete", subs: memoryCommands},
		{name: "usage", args: "[--agent A] [--since T] [--by agent|model|session|day] [--json] | allow <agent> <amount> --until T", summary: "what model calls cost, and one-off raises of an agent's caps", run: runUsage, subs: usageCommands},
		{name: "model", summary: "models (set: until the agent restarts)", subs: modelCommands},
		{name: "voice", summary: "voice profiles (set: until the agent restarts)", subs: voiceCommands},
		{name: "approval", summary: "the proposals waiting for a human", subs: approvalCommands},
		{name: "work", summary: "headless work items: add, list, show, update, split, cancel", subs: workCommands},
		{name: "run", summary: "headless runs of work items and their receipts", subs: runCommands},
		{name: "state", args: "[--agent A] [--json]", summary: "the AHDB state vector rebuilt from the runs' receipts", run: runState},
		{name: "kb", summary: "the runs' knowledge base: search for pointers to cite", subs: kbCommands},
		{name: "mcp", summary: "MCP servers: check a declaration, list an agent's", subs: mcpCommands},
		{name: "workspace", summary: "workspaces, paths and lease holders", subs: workspaceCommands},
		{name: "completion", summary: "print a shell completion script", subs: completionCommands},
	}
}

// find returns the command named name in list.
func find(list []command, name string) (command, bool) {
	for _, c := range list {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// isHelp reports whether a is a request for help in a command's place.
func isHelp(a string) bool {
	switch a {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

// writeUsage prints choirctl's usage: every command and group, one line each.
func writeUsage(w io.Writer) {
	fmt.Fprint(w, "usage: choirctl [--home DIR] <command> [arguments]\n\nCommands:\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range commands {
		synopsis := c.args
		if c.run == nil {
			names := make([]string, len(c.subs))
			for i, s := range c.subs {
				names[i] = s.name
			}
			synopsis = strings.Join(names, "|")
		}
		fmt.Fprintf(tw, "  %s\t%s\n", strings.TrimSpace(c.name+" "+synopsis), c.summary)
	}
	tw.Flush()
	fmt.Fprint(w, "\n--home defaults to $CHOIR_HOME, else ~/.choir.d.\n"+
		"Run 'choirctl <command> --help' for a command's subcommands or flags.\n")
}

// writeGroupUsage prints a group's usage: each subcommand on one line.
func writeGroupUsage(w io.Writer, g command) {
	fmt.Fprintf(w, "usage: choirctl %s <subcommand> [arguments]\n\n%s.\n\nSubcommands:\n", g.name, sentence(g.summary))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, s := range g.subs {
		fmt.Fprintf(tw, "  %s\t%s\n", strings.TrimSpace(s.name+" "+s.args), s.summary)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nRun 'choirctl %s <subcommand> --help' for its flags.\n", g.name)
}

// sentence capitalises a one-line summary to start a sentence.
func sentence(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// summaryOf returns the one-line summary of "cmd" or "group sub", if any.
func summaryOf(path string) string {
	name, sub, _ := strings.Cut(path, " ")
	c, ok := find(commands, name)
	if ok && sub != "" {
		c, ok = find(c.subs, sub)
	}
	if !ok {
		return ""
	}
	return c.summary
}

// usageError is a mistake in the command line (exit status 2).
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := realMain(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func realMain(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("choirctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	homeFlag := fs.String("home", "", "")
	if err := fs.Parse(args); err != nil || fs.NArg() == 0 {
		if errors.Is(err, flag.ErrHelp) {
			writeUsage(stdout)
			return 0
		}
		if err != nil {
			fmt.Fprintf(stderr, "choirctl: %v\n", err)
		}
		writeUsage(stderr)
		return 2
	}
	name, rest := fs.Arg(0), fs.Args()[1:]
	if name == "help" {
		// `choirctl help [command [subcommand]]` is that command's --help.
		if len(rest) == 0 {
			writeUsage(stdout)
			return 0
		}
		name, rest = rest[0], append(rest[1:len(rest):len(rest)], "--help")
	}
	cmd, ok := find(commands, name)
	if !ok {
		fmt.Fprintf(stderr, "choirctl: unknown command %q\n", name)
		writeUsage(stderr)
		return 2
	}
	label := name
	if len(rest) > 0 && cmd.run != nil {
		if sub, ok := find(cmd.subs, rest[0]); ok {
			cmd, rest, label = sub, rest[1:], name+" "+sub.name
		}
	}
	if cmd.run == nil {
		switch {
		case len(rest) == 0:
			fmt.Fprintf(stderr, "choirctl %s: want a subcommand\n", name)
			writeGroupUsage(stderr, cmd)
			return 2
		case isHelp(rest[0]):
			writeGroupUsage(stdout, cmd)
			return 0
		}
		sub, ok := find(cmd.subs, rest[0])
		if !ok {
			fmt.Fprintf(stderr, "choirctl %s: unknown subcommand %q\n", name, rest[0])
			writeGroupUsage(stderr, cmd)
			return 2
		}
		cmd, rest, label = sub, rest[1:], name+" "+sub.name
	}
	home, err := resolveHome(*homeFlag)
	if err != nil {
		fmt.Fprintf(stderr, "choirctl: %v\n", err)
		return 1
	}
	e := &env{home: home, stdin: stdin, stdout: stdout, stderr: stderr}
	err = cmd.run(ctx, e, rest)
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "choirctl %s: %v\nusage: choirctl %s\nRun 'choirctl %s --help' for its flags.\n", label, err, strings.TrimSpace(label+" "+cmd.args), label)
		return 2
	default:
		fmt.Fprintf(stderr, "choirctl %s: %v\n", label, err)
		return 1
	}
}

func resolveHome(flagValue string) (config.Home, error) {
	if flagValue != "" {
		return config.Home{Dir: flagValue}, nil
	}
	return config.DefaultHome()
}

// newFlags returns a flag set for a command. -h and --help print its usage
// (the synopsis, the command's one-line summary from the table, its flags)
// on stdout; parseFlags turns any other flag error into a usage error, which
// realMain reports on stderr.
func newFlags(e *env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(&flagOut{stdout: e.stdout})
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: choirctl %s\n", synopsis)
		if s := summaryOf(name); s != "" {
			fmt.Fprintf(fs.Output(), "\n%s.\n", sentence(s))
		}
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintln(fs.Output())
			fs.PrintDefaults()
		}
		if c, ok := find(commands, name); ok && c.subs != nil {
			fmt.Fprint(fs.Output(), "\nSubcommands:\n")
			tw := tabwriter.NewWriter(fs.Output(), 0, 4, 2, ' ', 0)
			for _, s := range c.subs {
				fmt.Fprintf(tw, "  %s\t%s\n", strings.TrimSpace(s.name+" "+s.args), s.summary)
			}
			tw.Flush()
		}
	}
	return fs
}

// flagOut holds what the flag package prints until parseFlags knows whether
// it was asked for help (stdout) or met a mistake (reported by realMain).
type flagOut struct {
	bytes.Buffer
	stdout io.Writer
}

// parseFlags parses a command's flags wherever they appear among its
// arguments (`logs choird --no-follow` as well as `logs --no-follow choird`),
// turning a flag error into a usage error. "--" ends the flags.
func parseFlags(fs *flag.FlagSet, args []string) error {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if out, ok := fs.Output().(*flagOut); ok {
				if errors.Is(err, flag.ErrHelp) {
					out.stdout.Write(out.Bytes())
				}
				out.Reset()
			}
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return usageError{err.Error()}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			positional = append(positional, rest...)
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	return fs.Parse(append([]string{"--"}, positional...))
}

// oneArg parses a command's flags and its one positional argument.
func oneArg(fs *flag.FlagSet, args []string, what string) (string, error) {
	if err := parseFlags(fs, args); err != nil {
		return "", err
	}
	if fs.NArg() != 1 {
		return "", usagef("want exactly one %s", what)
	}
	return fs.Arg(0), nil
}
