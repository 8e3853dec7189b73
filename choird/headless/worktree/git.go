package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"
)

// GitError is a git command that failed: which command, in which
// repository, and what git printed on stderr.
type GitError struct {
	Args   []string
	Dir    string
	Stderr string
	Err    error
}

func (e *GitError) Error() string {
	msg := e.Stderr
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s (in %s): %s", strings.Join(e.Args, " "), e.Dir, msg)
}

func (e *GitError) Unwrap() error { return e.Err }

// safeConfig is given to every git command with -c. The worktree's files
// were written by an agent, so nothing in them may make git run a program:
// no hooks, no fsmonitor, no external diff or text conversion, no pager,
// no signing (which would need the user's key), no submodule recursion.
// The workspace is usually owned by another user than choird's: instead of
// git's ownership check (safe.directory), which would refuse it, what in
// its config could run a program is overridden here and in
// driverOverrides.
var safeConfig = []string{
	"safe.directory=*",
	"core.hooksPath=/dev/null",
	"core.fsmonitor=false",
	"core.pager=cat",
	"commit.gpgSign=false",
	"tag.gpgSign=false",
	"submodule.recurse=false",
	"credential.helper=",
	"core.askPass=",
	"protocol.ext.allow=never",
	"advice.detachedHead=false",
	"gc.auto=0",
}

// gitEnv is the environment of every git command: choird's own, without
// any GIT_* variable (which could point git at another repository or
// config), with the global and system config files ignored, never a
// prompt, messages in English. extra adds variables (the commit identity).
func gitEnv(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") || k == "LC_ALL" || k == "LANG" || k == "LANGUAGE" || k == "EDITOR" || k == "VISUAL" || k == "PAGER" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0", "LC_ALL=C", "GIT_EDITOR=false")
	return append(env, extra...)
}

// cmd is one git invocation.
type cmd struct {
	dir    string   // working directory
	gitDir string   // --git-dir, when the worktree's own .git file must not be trusted
	work   string   // --work-tree
	env    []string // extra environment
	max    int      // stdout cap in bytes; 0: 16 MiB
}

// errOutputTooLarge is stdout beyond cmd.max.
var errOutputTooLarge = errors.New("output too large")

// run runs git with args and returns its standard output.
func (c cmd) run(ctx context.Context, args ...string) (string, error) {
	b, err := c.bytes(ctx, args...)
	return string(b), err
}

func (c cmd) bytes(ctx context.Context, args ...string) ([]byte, error) {
	full := make([]string, 0, 2*len(safeConfig)+len(args)+4)
	for _, kv := range safeConfig {
		full = append(full, "-c", kv)
	}
	if len(args) > 0 && args[0] != "config" {
		over, err := c.driverOverrides(ctx)
		if err != nil {
			return nil, err
		}
		full = append(full, over...)
	}
	if c.gitDir != "" {
		full = append(full, "--git-dir="+c.gitDir)
	}
	if c.work != "" {
		full = append(full, "--work-tree="+c.work)
	}
	full = append(full, args...)
	x := exec.CommandContext(ctx, "git", full...)
	x.Dir = c.dir
	x.Env = gitEnv(c.env)
	x.WaitDelay = 500 * time.Millisecond
	max := c.max
	if max == 0 {
		max = 16 << 20
	}
	stdout := &capped{max: max}
	var stderr bytes.Buffer
	x.Stdout, x.Stderr = stdout, &stderr
	err := x.Run()
	if stdout.over {
		return nil, &GitError{Args: args, Dir: c.dir, Err: fmt.Errorf("%w: more than %d bytes", errOutputTooLarge, max)}
	}
	if err != nil {
		if ctx.Err() != nil {
			err = errors.Join(ctx.Err(), err)
		}
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 4096 {
			msg = msg[:4096] + "..."
		}
		return nil, &GitError{Args: args, Dir: c.dir, Stderr: msg, Err: err}
	}
	return stdout.buf.Bytes(), nil
}

// capped keeps at most max bytes and notes whether more came.
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (w *capped) Write(p []byte) (int, error) {
	if w.buf.Len()+len(p) > w.max {
		w.over = true
		return 0, errOutputTooLarge
	}
	return w.buf.Write(p)
}

// exitCode is the exit status of a failed git command, or -1.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// driverVars are the config variables of those drivers that name a program.
var driverVars = map[string]bool{"clean": true, "smudge": true, "process": true, "command": true, "textconv": true, "driver": true}

var driverKey = regexp.MustCompile(`^(filter|diff|merge)\.[A-Za-z0-9_.-]+\.[a-z]+$`)

// driverOverrides returns -c arguments emptying every filter, diff and
// merge driver the repository's config defines. An agent of an interactive
// session can write the workspace's .git/config; choird's git on the host
// must not run what it put there. (Empty commands make git skip the
// driver; git-lfs and other filters are therefore not applied to runs.)
// Asked right before every command: more commands than one would think
// may run a filter (write-tree re-reads racily clean files through them).
func (c cmd) driverOverrides(ctx context.Context) ([]string, error) {
	q := c
	q.max = 1 << 20
	out, err := q.run(ctx, "config", "--get-regexp", `^(filter|diff|merge)\.`)
	if err != nil {
		if exitCode(err) == 1 {
			return nil, nil // none defined
		}
		return nil, err
	}
	var over []string
	for _, line := range strings.Split(out, "\n") {
		key, _, _ := strings.Cut(line, " ")
		if key == "" {
			continue
		}
		if !driverKey.MatchString(key) {
			return nil, fmt.Errorf("the repository's config defines %q, a driver whose name choird cannot neutralise: remove it from %s/config to run headless runs there", key, c.gitDir)
		}
		name := key[strings.LastIndexByte(key, '.')+1:]
		switch {
		case driverVars[name]:
			over = append(over, "-c", key+"=")
		case strings.HasPrefix(key, "filter.") && name == "required":
			over = append(over, "-c", key+"=false")
		}
	}
	return over, nil
}
