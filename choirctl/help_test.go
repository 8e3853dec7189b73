package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// helpForms are the ways a user asks for help.
var helpForms = []string{"--help", "-h"}

// assertHelp runs choirctl with args and checks that it printed a usage on
// stdout, nothing on stderr, exited 0, and left the home untouched.
func assertHelp(t *testing.T, args ...string) string {
	t.Helper()
	home := t.TempDir()
	out, stderr, code := ctlRun(t, home, "", args...)
	if code != 0 || stderr != "" || !strings.HasPrefix(out, "usage: choirctl") {
		t.Errorf("choirctl %s = exit %d, stdout %q, stderr %q; want its usage on stdout and exit 0", strings.Join(args, " "), code, out, stderr)
	}
	if ents, _ := os.ReadDir(home); len(ents) != 0 {
		t.Errorf("choirctl %s wrote %d entries into the home; help must change nothing", strings.Join(args, " "), len(ents))
	}
	return out
}

func TestTopLevelHelpListsEveryCommand(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		out := assertHelp(t, args...)
		for _, c := range commands {
			if !regexp.MustCompile(`(?m)^  ` + c.name + ` .*` + regexp.QuoteMeta(c.summary) + `$`).MatchString(out) {
				t.Errorf("choirctl %s does not list %q with its summary:\n%s", args[0], c.name, out)
			}
		}
	}
}

func TestEveryCommandAnswersHelp(t *testing.T) {
	for _, c := range commands {
		for _, h := range helpForms {
			out := assertHelp(t, c.name, h)
			if c.run != nil && !strings.HasPrefix(out, "usage: choirctl "+c.name) {
				t.Errorf("choirctl %s %s = %q; want the usage of %s", c.name, h, out, c.name)
			}
			// A group, or a command with subcommands, lists each
			// subcommand on one line with its summary.
			for _, s := range c.subs {
				line := regexp.MustCompile(`(?m)^  ` + s.name + `\b.*` + regexp.QuoteMeta(s.summary) + `$`)
				if !line.MatchString(out) {
					t.Errorf("choirctl %s %s does not list %q with its summary on one line:\n%s", c.name, h, s.name, out)
				}
			}
			for _, s := range c.subs {
				sub := assertHelp(t, c.name, s.name, h)
				if !strings.HasPrefix(sub, "usage: choirctl "+c.name+" "+s.name) || !strings.Contains(sub, sentence(s.summary)) {
					t.Errorf("choirctl %s %s %s = %q; want its usage and summary", c.name, s.name, h, sub)
				}
			}
		}
	}
	// `help <command> [subcommand]` is the same as --help, and so is a
	// --help after the arguments.
	assertHelp(t, "help", "agent")
	if out := assertHelp(t, "help", "agent", "start"); !strings.Contains(out, "-dm") {
		t.Errorf("choirctl help agent start = %q; want its flags", out)
	}
	assertHelp(t, "agent", "start", "agent-1", "--help")
	assertHelp(t, "--home", "/nonexistent", "secret", "-h")
}

func TestWrongCommandPrintsUsageOnStderr(t *testing.T) {
	home := t.TempDir()
	for _, args := range [][]string{
		{}, {"frobnicate"}, {"--bogus"}, {"--home"}, {"help", "frobnicate"},
		{"agent"}, {"agent", "frob"}, {"agent", "--bogus"}, {"secret"}, {"secret", "rotate"},
		{"completion"}, {"completion", "zsh"}, {"completion", "bash", "extra"},
		{"status", "--bogus"}, {"agent", "init"}, {"agent", "start", "--nope=1", "a"},
		{"help", "agent", "frob"}, {"Agent", "--help"},
		{"usage", "frob"}, {"usage", "allow"}, {"usage", "allow", "agent-1", "5"},
	} {
		out, stderr, code := ctlRun(t, home, "", args...)
		if code != 2 || out != "" || !strings.Contains(stderr, "usage: choirctl") {
			t.Errorf("choirctl %q = exit %d, stdout %q, stderr %q; want exit 2 with the usage on stderr only", args, code, out, stderr)
		}
	}
}

func TestCommandTableIsWellFormed(t *testing.T) {
	// Words a bash case pattern and compgen -W take as they are
	// (update-all is one).
	word := regexp.MustCompile(`^[a-z]+(-[a-z]+)*$`)
	check := func(level string, list []command) {
		seen := map[string]bool{}
		for _, c := range list {
			if !word.MatchString(c.name) || seen[c.name] || c.name == "help" {
				t.Errorf("%s: command name %q is not a unique plain word (the completion script relies on it)", level, c.name)
			}
			seen[c.name] = true
			if c.summary == "" || strings.ContainsAny(c.summary, "\n\t") {
				t.Errorf("%s %s: summary %q is not one line", level, c.name, c.summary)
			}
			if c.run == nil && c.subs == nil {
				t.Errorf("%s %s: want run, subcommands or both", level, c.name)
			}
		}
	}
	check("choirctl", commands)
	for _, c := range commands {
		check("choirctl "+c.name, c.subs)
		for _, s := range c.subs {
			if s.subs != nil {
				t.Errorf("choirctl %s %s: more than two levels", c.name, s.name)
			}
		}
	}
}

// compgenWords returns the words offered by the script's compgen line that
// follows prefix.
func compgenWords(t *testing.T, script, prefix string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(prefix) + `.*compgen -W "([^"]*)"`).FindStringSubmatch(script)
	if m == nil {
		t.Fatalf("the completion script has no compgen line after %q:\n%s", prefix, script)
	}
	words := strings.Fields(m[1])
	sort.Strings(words)
	return words
}

func TestCompletionBashNamesTheWholeTable(t *testing.T) {
	out, stderr, code := ctlRun(t, t.TempDir(), "", "completion", "bash")
	if code != 0 || stderr != "" {
		t.Fatalf("choirctl completion bash = %d %q", code, stderr)
	}
	want := []string{"--help", "--home", "help"}
	for _, c := range commands {
		want = append(want, c.name)
	}
	sort.Strings(want)
	if got := compgenWords(t, out, "if [[ $pos -eq 0 ]]; then\n\t\tCOMPREPLY="); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("top-level completion = %v; want %v", got, want)
	}
	groups := 0
	for _, c := range commands {
		if c.subs == nil {
			if strings.Contains(out, "\t"+c.name+") ") {
				t.Errorf("the script offers subcommands for %q, which has none", c.name)
			}
			continue
		}
		groups++
		want := []string{"--help"}
		for _, s := range c.subs {
			want = append(want, s.name)
		}
		sort.Strings(want)
		if got := compgenWords(t, out, c.name+") "); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("completion of %q = %v; want %v", c.name, got, want)
		}
	}
	if groups < 8 {
		t.Errorf("only %d groups in the table; the test expects agent, secret, session, model, voice, approval, workspace, config", groups)
	}

	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Log("no bash: the script is not run")
		return
	}
	if msg, err := exec.Command(bash, "-n", "-c", out).CombinedOutput(); err != nil {
		t.Fatalf("bash -n refuses the completion script: %v\n%s", err, msg)
	}
	// What a user sees on Tab: the script sourced and its function called
	// the way bash calls it.
	for _, tc := range []struct{ line, want string }{
		{"choirctl ag", "agent"},
		{"choirctl --home /tmp ag", "agent"},
		{"choirctl agent st", "start status stop"},
		{"choirctl --home /tmp secret ", "--help apply delete list set"},
		{"choirctl completion ", "--help bash"},
		{"choirctl usage ", "--help allow"},
		{"choirctl --home /tmp usage al", "allow"},
		{"choirctl help wo", "work workspace"},
		{"choirctl status ", ""},
		{"choirctl agent start ", ""},
	} {
		script := out + `
COMP_WORDS=(` + tc.line + `)
[[ "` + tc.line + `" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMPREPLY=()
_choirctl
printf '%s\n' "${COMPREPLY[@]}" | LC_ALL=C sort | tr '\n' ' '
`
		got, err := exec.Command(bash, "--norc", "--noprofile", "-c", script).Output()
		if err != nil {
			t.Fatalf("bash running the completion for %q: %v", tc.line, err)
		}
		if strings.TrimSpace(string(got)) != tc.want {
			t.Errorf("Tab after %q offers %q; want %q", tc.line, strings.TrimSpace(string(got)), tc.want)
		}
	}
}

// synopsis matches a line of the help at the top of a command's file:
// "// choirctl <command> [<subcommand>|<subcommand>...] ...".
var synopsis = regexp.MustCompile(`^// choirctl ([a-z-]+)(?: ([a-z-]+(?:\|[a-z-]+)*))?(?:\s|$)`)

// The help at the top of each command's file and the table are written by
// hand, apart; completion, help and dispatch read only the table. Every
// command and subcommand a file's help documents must be in the table (a
// subcommand dispatched by its command's own code, as `usage allow` once
// was, is missing from completion and help), and every row of the table
// must be documented.
func TestEveryDocumentedCommandIsInTheTable(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]string{} // "cmd" or "cmd sub" -> file
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		// The help is the comment after the package clause.
		_, head, _ := strings.Cut(string(src), "package main\n")
		for _, l := range strings.Split(strings.TrimLeft(head, "\n"), "\n") {
			if !strings.HasPrefix(l, "//") {
				break
			}
			m := synopsis.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			documented[m[1]] = file
			c, ok := find(commands, m[1])
			if !ok {
				t.Errorf("%s documents choirctl %s, which is not in the command table (main.go)", file, m[1])
				continue
			}
			if m[2] == "" {
				if c.run == nil {
					t.Errorf("%s documents choirctl %s without a subcommand, but it is a group", file, m[1])
				}
				continue
			}
			for _, sub := range strings.Split(m[2], "|") {
				documented[m[1]+" "+sub] = file
				if _, ok := find(c.subs, sub); !ok {
					t.Errorf("%s documents choirctl %s %s, which is not among %s's subcommands in the table: completion and help do not know it", file, m[1], sub, m[1])
				}
			}
		}
	}
	for _, c := range commands {
		if documented[c.name] == "" {
			t.Errorf("choirctl %s is in the table but no file's help documents it", c.name)
		}
		for _, s := range c.subs {
			if documented[c.name+" "+s.name] == "" {
				t.Errorf("choirctl %s %s is in the table but no file's help documents it", c.name, s.name)
			}
		}
	}
}
