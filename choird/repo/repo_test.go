package repo

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"choir/internal/config"
)

// origin is a bare repository made by a test, with a work tree to commit from.
type origin struct {
	t    *testing.T
	bare string
	work string
}

func run(t *testing.T, dir string, args ...string) string {
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

func newOrigin(t *testing.T) *origin {
	t.Helper()
	dir := t.TempDir()
	o := &origin{t: t, bare: filepath.Join(dir, "origin.git"), work: filepath.Join(dir, "work")}
	run(t, dir, "init", "--quiet", "--bare", "--initial-branch=main", o.bare)
	run(t, dir, "clone", "--quiet", o.bare, o.work)
	run(t, o.work, "checkout", "--quiet", "-B", "main")
	return o
}

// commit writes files (name -> content; "+x:" prefix makes it executable)
// and commits them, returning the commit's SHA.
func (o *origin) commit(files map[string]string) string {
	o.t.Helper()
	for name, body := range files {
		p := filepath.Join(o.work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			o.t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if b, ok := strings.CutPrefix(body, "+x:"); ok {
			body, mode = b, 0o755
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			o.t.Fatal(err)
		}
	}
	run(o.t, o.work, "add", "-A")
	run(o.t, o.work, "commit", "--quiet", "--allow-empty", "-m", "c")
	run(o.t, o.work, "push", "--quiet", "origin", "HEAD")
	return run(o.t, o.work, "rev-parse", "HEAD")
}

func head(t *testing.T, dir string) string { return run(t, dir, "rev-parse", "HEAD") }

func TestSyncClonesThenFetches(t *testing.T) {
	o := newOrigin(t)
	c1 := o.commit(map[string]string{"a.txt": "one"})
	home := config.Home{Dir: t.TempDir()}
	dir := GlobalDir(home)
	ctx := context.Background()

	for _, url := range []string{o.bare, "file://" + o.bare} {
		os.RemoveAll(dir)
		co, err := Sync(ctx, "global repo", dir, config.Repo{URL: url, Ref: "main"})
		if err != nil {
			t.Fatalf("Sync(%s) = %v", url, err)
		}
		if co.Commit != c1 || co.Short != c1[:7] || !co.Cloned || co.Warning != "" {
			t.Fatalf("Sync(%s) = %+v; want commit %s, cloned, no warning", url, co, c1)
		}
		if got := head(t, dir); got != c1 {
			t.Errorf("HEAD = %s; want %s", got, c1)
		}
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), ".*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary clones left beside the clone: %v", leftovers)
	}

	c2 := o.commit(map[string]string{"a.txt": "two"})
	// Something left in the clone's work tree is discarded.
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("edited"), 0o644)
	os.WriteFile(filepath.Join(dir, "stray"), []byte("x"), 0o644)
	co, err := Sync(ctx, "global repo", dir, config.Repo{URL: "file://" + o.bare, Ref: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if co.Commit != c2 || co.Cloned {
		t.Fatalf("second Sync = %+v; want commit %s by fetch", co, c2)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "two" {
		t.Errorf("a.txt = %q; want %q", b, "two")
	}
	if _, err := os.Stat(filepath.Join(dir, "stray")); !os.IsNotExist(err) {
		t.Errorf("stray file survived the checkout: %v", err)
	}
	if out := run(t, dir, "status", "--porcelain", "--branch"); !strings.Contains(out, "HEAD (no branch)") {
		t.Errorf("HEAD is not detached: %s", out)
	}
}

func TestSyncRefs(t *testing.T) {
	o := newOrigin(t)
	c1 := o.commit(map[string]string{"a": "1"})
	run(t, o.work, "tag", "v1")
	run(t, o.work, "push", "--quiet", "origin", "v1")
	run(t, o.work, "checkout", "--quiet", "-b", "dev")
	c2 := o.commit(map[string]string{"a": "2"})
	run(t, o.work, "checkout", "--quiet", "main")
	c3 := o.commit(map[string]string{"b": "3"})
	// A commit that no branch or tag reaches any more.
	run(t, o.work, "checkout", "--quiet", "-b", "gone")
	c4 := o.commit(map[string]string{"c": "4"})
	run(t, o.work, "push", "--quiet", "origin", "--delete", "gone")

	home := config.Home{Dir: t.TempDir()}
	dir := AgentDir(home, "agent-1")
	tests := []struct{ ref, want string }{
		{"", c3}, {"main", c3}, {"dev", c2}, {"v1", c1}, {c1, c1}, {c2[:10], c2}, {"main", c3},
	}
	for _, tt := range tests {
		co, err := Sync(context.Background(), "agent repo", dir, config.Repo{URL: o.bare, Ref: tt.ref})
		if err != nil {
			t.Fatalf("Sync(ref %q) = %v", tt.ref, err)
		}
		if co.Commit != tt.want {
			t.Errorf("Sync(ref %q).Commit = %s; want %s", tt.ref, co.Commit, tt.want)
		}
	}
	// An unreachable commit: the server must allow asking for it.
	run(t, o.bare, "config", "uploadpack.allowAnySHA1InWant", "true")
	if co, err := Sync(context.Background(), "agent repo", dir, config.Repo{URL: o.bare, Ref: c4}); err != nil || co.Commit != c4 {
		t.Errorf("Sync(unreachable %s) = %+v, %v; want that commit", c4, co, err)
	}
	if _, err := Sync(context.Background(), "agent repo", dir, config.Repo{URL: o.bare, Ref: "nope"}); err == nil ||
		!strings.Contains(err.Error(), "nope") || !strings.Contains(err.Error(), "agent repo") {
		t.Errorf("Sync(ref nope) = %v; want an error naming the repo and the ref", err)
	}
	if _, err := Sync(context.Background(), "agent repo", dir, config.Repo{URL: o.bare, Ref: "--upload-pack=x"}); err == nil {
		t.Error("Sync accepted a ref that looks like an option")
	}
}

func TestSyncUnreachable(t *testing.T) {
	o := newOrigin(t)
	c1 := o.commit(map[string]string{"a": "1"})
	home := config.Home{Dir: t.TempDir()}
	dir := GlobalDir(home)
	ctx := context.Background()
	missing := filepath.Join(t.TempDir(), "missing.git")

	_, err := Sync(ctx, "global repo", dir, config.Repo{URL: missing, Ref: "main"})
	if err == nil || !strings.Contains(err.Error(), "global repo") || !strings.Contains(err.Error(), missing) {
		t.Fatalf("Sync(missing, no clone) = %v; want an error naming the repo and URL", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a failed clone left %s: %v", dir, err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(dir)); len(entries) != 0 {
		t.Errorf("a failed clone left files: %v", entries)
	}

	if _, err := Sync(ctx, "global repo", dir, config.Repo{URL: o.bare, Ref: "main"}); err != nil {
		t.Fatal(err)
	}
	co, err := Sync(ctx, "global repo", dir, config.Repo{URL: missing, Ref: "main"})
	if err != nil {
		t.Fatalf("Sync(missing, with clone) = %v; want the stale clone", err)
	}
	if co.Commit != c1 || !strings.Contains(co.Warning, "fetch") || !strings.Contains(co.Warning, missing) {
		t.Errorf("Sync(missing, with clone) = %+v; want commit %s and a warning naming the URL", co, c1)
	}
}

func TestSyncRedactsCredentials(t *testing.T) {
	home := config.Home{Dir: t.TempDir()}
	_, err := Sync(context.Background(), "global repo", GlobalDir(home),
		config.Repo{URL: "https://bob:s3cret@127.0.0.1:1/x.git"})
	if err == nil {
		t.Fatal("Sync of a closed port succeeded")
	}
	if strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "bob:***@127.0.0.1") {
		t.Errorf("error = %v; want the URL with its password hidden", err)
	}
}

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://u:pw@h/x", "https://u:***@h/x"},
		{"fatal: unable to access 'https://u:p%40w@h:443/r.git/': x", "fatal: unable to access 'https://u:***@h:443/r.git/': x"},
		{"git@github.com:o/r.git", "git@github.com:o/r.git"},
		{"ssh://git@h/r", "ssh://git@h/r"},
	}
	for _, tt := range tests {
		if got := Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestExport(t *testing.T) {
	o := newOrigin(t)
	o.commit(map[string]string{"tools/x": "+x:#!/bin/sh\n", "tools/x.json": "{}", "README": "r"})
	os.Symlink("README", filepath.Join(o.work, "link"))
	c := o.commit(nil)
	home := config.Home{Dir: t.TempDir()}
	dir := GlobalDir(home)
	if _, err := Sync(context.Background(), "global repo", dir, config.Repo{URL: o.bare}); err != nil {
		t.Fatal(err)
	}
	dest := t.TempDir()
	if err := Export(context.Background(), dir, c, dest); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dest, "tools/x")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("tools/x = %v, %v; want mode 0755", fi, err)
	}
	if fi, err := os.Stat(filepath.Join(dest, "README")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("README = %v, %v; want mode 0644", fi, err)
	}
	if l, err := os.Readlink(filepath.Join(dest, "link")); err != nil || l != "README" {
		t.Errorf("link = %q, %v; want a symlink to README", l, err)
	}
	if _, err := os.Stat(filepath.Join(dest, ".git")); !os.IsNotExist(err) {
		t.Errorf("export has .git: %v", err)
	}
	if err := Export(context.Background(), dir, strings.Repeat("0", 40), t.TempDir()); err == nil {
		t.Error("Export of a missing commit succeeded")
	}
}

func TestRemoteURL(t *testing.T) {
	wd, _ := os.Getwd()
	tests := []struct{ in, want string }{
		{"/srv/g.git", "/srv/g.git"},
		{"repos/g.git", filepath.Join(wd, "repos/g.git")},
		{"file:///srv/g.git", "file:///srv/g.git"},
		{"ssh://git@host:22/o/r.git", "ssh://git@host:22/o/r.git"},
		{"git@github.com:o/r.git", "git@github.com:o/r.git"},
		{"https://github.com/o/r.git", "https://github.com/o/r.git"},
	}
	for _, tt := range tests {
		if got, err := remoteURL(tt.in); err != nil || got != tt.want {
			t.Errorf("remoteURL(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "ftp://h/r", "ext::sh -c x"} {
		if got, err := remoteURL(bad); err == nil {
			t.Errorf("remoteURL(%q) = %q; want an error", bad, got)
		}
	}
}
