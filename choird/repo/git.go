package repo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"
)

// GitError is a git command that failed: which command, in which directory,
// and what git printed on stderr.
type GitError struct {
	Args   []string // the git arguments, credentials redacted
	Dir    string   // the working directory, "" for none
	Stderr string   // git's message, trimmed and redacted
	Err    error    // the exit status or the start failure
}

func (e *GitError) Error() string {
	msg := e.Stderr
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

func (e *GitError) Unwrap() error { return e.Err }

// gitEnv is the environment every git command runs with: never a prompt,
// never an askpass program, ssh in batch mode, messages in English.
func gitEnv() []string {
	var env []string
	ssh := false
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_ASKPASS", "SSH_ASKPASS", "GIT_TERMINAL_PROMPT", "LC_ALL", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE":
			continue
		case "GIT_SSH_COMMAND", "GIT_SSH":
			ssh = true
		}
		env = append(env, kv)
	}
	env = append(env, "GIT_TERMINAL_PROMPT=0", "LC_ALL=C", "GCM_INTERACTIVE=never")
	if !ssh {
		env = append(env, "GIT_SSH_COMMAND=ssh -o BatchMode=yes -o ConnectTimeout=30")
	}
	return env
}

// git runs git with args in dir and returns its standard output. The
// credential helper is disabled so that only keys and URLs give access.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	full := append([]string{"-c", "credential.helper=", "-c", "core.askPass=", "-c", "advice.detachedHead=false", "-c", "protocol.ext.allow=never"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = dir
	cmd.Env = gitEnv()
	// When ctx ends git is killed, but a helper it started (git-remote-http)
	// may keep its output open: stop waiting for that soon after.
	cmd.WaitDelay = 500 * time.Millisecond
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = errors.Join(ctx.Err(), err)
		}
		return "", &GitError{Args: redactArgs(args), Dir: dir, Stderr: Redact(strings.TrimSpace(stderr.String())), Err: err}
	}
	return stdout.String(), nil
}

// userinfo matches the user:password@ part of a URL in free text.
var userinfo = regexp.MustCompile(`(://[^/@:\s]+):[^/@\s]*@`)

// Redact hides the password of any URL in s ("https://u:pw@host" becomes
// "https://u:***@host"), so that errors and logs can carry URLs.
func Redact(s string) string {
	return userinfo.ReplaceAllString(s, "$1:***@")
}

func redactArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = Redact(a)
	}
	return out
}

// remoteURL turns a configured URL into what git accepts: a relative local
// path is made absolute (git would resolve it against the clone), anything
// else is passed as written.
func remoteURL(raw string) (string, error) {
	if raw == "" {
		return "", errors.New("no URL configured")
	}
	if strings.Contains(raw, "://") {
		u, err := url.Parse(raw)
		if err != nil {
			return "", fmt.Errorf("parse URL %s: %w", Redact(raw), err)
		}
		switch u.Scheme {
		case "file", "ssh", "https", "http", "git":
		default:
			return "", fmt.Errorf("URL %s: scheme %q is not file, ssh, https, http or git", Redact(raw), u.Scheme)
		}
		return raw, nil
	}
	if strings.HasPrefix(raw, "/") {
		return raw, nil
	}
	if i := strings.Index(raw, "::"); i >= 0 && !strings.Contains(raw[:i], "/") {
		return "", fmt.Errorf("URL %s: git remote helpers (<transport>::<address>) are not allowed", Redact(raw))
	}
	if strings.HasPrefix(raw, "-") {
		return "", fmt.Errorf("URL %q looks like an option", raw)
	}
	// scp-like ssh syntax: user@host:path or host:path (a colon before any slash).
	if i := strings.Index(raw, ":"); i > 0 && !strings.Contains(raw[:i], "/") {
		return raw, nil
	}
	abs, err := absPath(raw)
	if err != nil {
		return "", fmt.Errorf("local path %s: %w", raw, err)
	}
	return abs, nil
}
