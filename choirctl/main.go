// Command choirctl is choir's stateless admin CLI. It talks to choird over
// the admin socket (~/.choir.d/socks/ctl.sock) and edits the operator's own
// files in ~/.choir.d (init, secrets, agent init).
//
// Exit status: 0 ok, 1 failed, 2 usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"choir/internal/config"
	"choir/internal/ctl"
)

const usage = `usage: choirctl [--home DIR] <command> [arguments]

Commands:
  init [--global-repo DIR]      create ~/.choir.d with a skeleton config (and the global repo)
  status                        choird health, config version, loaded resources
  config show                   the running configuration (secret names only)
  secret list                   secret names (never values)
  secret set <name> [value]     set a secret (value from stdin when omitted)
  secret delete <name>          delete a secret
  secret apply                  make choird reload secrets and refresh agents
  logs <choird|agent-id>        print a log, then follow it until Ctrl-C
  agent init <agent-id>         add a placeholder agent and scaffold its repo
  agent build <agent-id>        build the agent's image from its repos
  agent start <agent-id> --dm=  start an agent (flags override its defaults)
  agent stop|restart <agent-id> stop gracefully, or stop and start again
  agent status <agent-id>       state, session, bindings, lanes, heartbeat
  agent list                    every configured agent and its state
  chat <agent-id> [--once]      talk to a running agent from the terminal
  session list|events|cores|cancel|compact   sessions, their logs and core jobs
  model list|get|set            models (set: until the agent restarts)
  voice list|get|set            voice profiles
  approval list|show|approve|reject   the proposals waiting for a human
  workspace list                workspaces, paths and lease holders
  workspace reset <name>        empty a workspace (stops its holder first)

--home defaults to $CHOIR_HOME, else ~/.choir.d.
Run 'choirctl <command> --help' for a command's flags.
`

// env is what every command gets: where the home is, and its streams.
type env struct {
	home   config.Home
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

func (e *env) client() *ctl.Client { return ctl.NewClient(e.home.AdminSocket()) }

type command struct {
	run  func(ctx context.Context, e *env, args []string) error
	help string
}

// commands is the table of top-level commands; groups dispatch again.
var commands = map[string]command{
	"init":      {runInit, "create ~/.choir.d"},
	"status":    {runStatus, "choird health"},
	"config":    {runConfig, "config show"},
	"secret":    {runSecret, "secret list|set|delete"},
	"logs":      {runLogs, "print and follow a log"},
	"agent":     {runAgent, "agent lifecycle"},
	"workspace": {runWorkspace, "workspace list|reset"},
	"chat":      {runChat, "console DM"},
	"approval":  {runApproval, "approval list|show|approve|reject"},
	"session":   {runSession, "session list|events|cores|cancel|compact"},
	"model":     {runModel, "model list|get|set"},
	"voice":     {runVoice, "voice list|get|set"},
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
			fmt.Fprint(stdout, usage)
			return 0
		}
		if err != nil {
			fmt.Fprintf(stderr, "choirctl: %v\n", err)
		}
		fmt.Fprint(stderr, usage)
		return 2
	}
	name, rest := fs.Arg(0), fs.Args()[1:]
	cmd, ok := commands[name]
	if !ok {
		if name == "help" {
			fmt.Fprint(stdout, usage)
			return 0
		}
		fmt.Fprintf(stderr, "choirctl: unknown command %q\n%s", name, usage)
		return 2
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
		fmt.Fprintf(stderr, "choirctl %s: %v\n", name, err)
		return 2
	default:
		fmt.Fprintf(stderr, "choirctl %s: %v\n", name, err)
		return 1
	}
}

func resolveHome(flagValue string) (config.Home, error) {
	if flagValue != "" {
		return config.Home{Dir: flagValue}, nil
	}
	return config.DefaultHome()
}

// newFlags returns a flag set for a command whose help goes to stderr.
func newFlags(e *env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: choirctl %s\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses a command's flags wherever they appear among its
// arguments (`logs choird --no-follow` as well as `logs --no-follow choird`),
// turning a flag error into a usage error. "--" ends the flags.
func parseFlags(fs *flag.FlagSet, args []string) error {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
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

// subcommand dispatches a two-level command such as `secret set`.
func subcommand(ctx context.Context, e *env, group string, args []string, subs map[string]func(context.Context, *env, []string) error) error {
	names := make([]string, 0, len(subs))
	for n := range subs {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(args) == 0 {
		return usagef("want a subcommand: %s", strings.Join(names, ", "))
	}
	run, ok := subs[args[0]]
	if !ok {
		return usagef("unknown subcommand %q: want %s", args[0], strings.Join(names, ", "))
	}
	return run(ctx, e, args[1:])
}
