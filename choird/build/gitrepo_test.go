package build

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// origin is a bare git repository made by a test, pushed to from a work tree.
type origin struct {
	t    testing.TB
	bare string
	work string
}

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// newOrigin makes a bare repo holding fs in one commit on main.
func newOrigin(t testing.TB, fs files) *origin {
	t.Helper()
	dir := t.TempDir()
	o := &origin{t: t, bare: filepath.Join(dir, "origin.git"), work: filepath.Join(dir, "work")}
	git(t, dir, "init", "--quiet", "--bare", "--initial-branch=main", o.bare)
	git(t, dir, "clone", "--quiet", o.bare, o.work)
	git(t, o.work, "checkout", "--quiet", "-B", "main")
	o.commit(fs)
	return o
}

// commit writes fs (an empty content with key prefix "-" removes a file)
// and pushes, returning the commit.
func (o *origin) commit(fs files) string {
	o.t.Helper()
	write := files{}
	for name, body := range fs {
		if p, ok := strings.CutPrefix(name, "-"); ok {
			if err := os.RemoveAll(filepath.Join(o.work, p)); err != nil {
				o.t.Fatal(err)
			}
			continue
		}
		write[name] = body
	}
	writeTree(o.t, o.work, write)
	git(o.t, o.work, "add", "-A")
	git(o.t, o.work, "commit", "--quiet", "--allow-empty", "-m", "c")
	git(o.t, o.work, "push", "--quiet", "origin", "HEAD:main")
	return git(o.t, o.work, "rev-parse", "HEAD")
}
