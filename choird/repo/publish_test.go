package repo

import (
	"context"
	"errors"
	"strings"
	"testing"

	"choir/internal/config"
)

func show(t *testing.T, bare, rev, path string) string {
	t.Helper()
	return run(t, bare, "show", rev+":"+path)
}

func TestPublish(t *testing.T) {
	ctx := context.Background()
	o := newOrigin(t)
	o.commit(map[string]string{"README": "r\n", "skills/old.json": "{}\n"})
	r := config.Repo{URL: o.bare, Ref: "main"}
	me := Author{Name: "Dev Agent", Email: "dev@choir.local"}

	commit, err := Publish(ctx, r, "", map[string][]byte{"skills/new.json": []byte("{\"name\":\"new\"}\n"), "skills/old.json": nil},
		me, "skill new: approved")
	if err != nil {
		t.Fatalf("Publish() = %v", err)
	}
	if got := run(t, o.bare, "rev-parse", "main"); got != commit {
		t.Errorf("main is at %s; want the published commit %s", got, commit)
	}
	if got := show(t, o.bare, "main", "skills/new.json"); got != `{"name":"new"}` {
		t.Errorf("skills/new.json = %q", got)
	}
	if files := run(t, o.bare, "ls-tree", "-r", "--name-only", "main"); strings.Contains(files, "skills/old.json") {
		t.Errorf("skills/old.json was not removed: %s", files)
	}
	if author := run(t, o.bare, "log", "-1", "--format=%an <%ae>|%s", "main"); author != "Dev Agent <dev@choir.local>|skill new: approved" {
		t.Errorf("commit = %q; want the agent's identity and the message", author)
	}

	// A proposal branch leaves main alone.
	if _, err := Publish(ctx, r, "proposal/s1/acme.wc", map[string][]byte{"tools/acme.wc.json": []byte("{}\n")}, me, "tool acme.wc"); err != nil {
		t.Fatalf("Publish(branch) = %v", err)
	}
	if got := run(t, o.bare, "rev-parse", "main"); got != commit {
		t.Error("publishing to a proposal branch moved main")
	}
	if got := show(t, o.bare, "proposal/s1/acme.wc", "tools/acme.wc.json"); got != "{}" {
		t.Errorf("the proposal branch holds %q", got)
	}

	// Refusals push nothing.
	for _, tc := range []struct {
		name   string
		branch string
		files  map[string][]byte
		author Author
		want   string
	}{
		{"same content", "", map[string][]byte{"skills/new.json": []byte("{\"name\":\"new\"}\n")}, me, "nothing to commit"},
		{"path outside", "", map[string][]byte{"../x": []byte("x")}, me, "not a path inside the repo"},
		{"into .git", "", map[string][]byte{".git/hooks/post-commit": []byte("x")}, me, "not a path inside the repo"},
		{"option branch", "--force", map[string][]byte{"a": []byte("x")}, me, "not a branch name"},
		{"no author", "", map[string][]byte{"a": []byte("x")}, Author{}, "no author"},
	} {
		if _, err := Publish(ctx, r, tc.branch, tc.files, tc.author, "m"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Publish() = %v; want %q", tc.name, err, tc.want)
		}
	}
	if got := run(t, o.bare, "rev-parse", "main"); got != commit {
		t.Error("a refused Publish moved main")
	}
	if _, err := Publish(ctx, config.Repo{URL: o.bare, Ref: commit}, "", map[string][]byte{"a": []byte("x")}, me, "m"); err == nil || !strings.Contains(err.Error(), "not a branch") {
		t.Errorf("Publish onto a commit ref = %v; want a refusal", err)
	}
}

func TestMerge(t *testing.T) {
	ctx := context.Background()
	o := newOrigin(t)
	o.commit(map[string]string{"identity/SOUL.md": "old soul\n", "skills/a.json": "{}\n"})
	r := config.Repo{URL: o.bare, Ref: "main"}
	me := Author{Name: "Dev Agent", Email: "dev@choir.local"}

	// The agent's proposal branch, and a later change on main that does
	// not touch the same file.
	run(t, o.work, "checkout", "--quiet", "-b", "proposal/s1/soul")
	o.commit(map[string]string{"identity/SOUL.md": "new soul\n"})
	run(t, o.work, "push", "--quiet", "origin", "proposal/s1/soul")
	run(t, o.work, "checkout", "--quiet", "main")
	o.commit(map[string]string{"skills/b.json": "{}\n"})

	merged, err := Merge(ctx, r, "proposal/s1/soul", me, "merge proposal soul (approval ap-1)")
	if err != nil {
		t.Fatalf("Merge() = %v", err)
	}
	if got := run(t, o.bare, "rev-parse", "main"); got != merged {
		t.Errorf("main is at %s; want the merge %s", got, merged)
	}
	if got := show(t, o.bare, "main", "identity/SOUL.md"); got != "new soul" {
		t.Errorf("SOUL.md on main = %q", got)
	}
	if got := show(t, o.bare, "main", "skills/b.json"); got != "{}" {
		t.Errorf("main lost its own change: %q", got)
	}

	// A conflicting branch: nothing pushed, the files named.
	run(t, o.work, "fetch", "--quiet", "origin")
	run(t, o.work, "reset", "--quiet", "--hard", "origin/main")
	run(t, o.work, "checkout", "--quiet", "-b", "proposal/s1/clash")
	o.commit(map[string]string{"identity/SOUL.md": "their soul\n"})
	run(t, o.work, "push", "--quiet", "origin", "proposal/s1/clash")
	run(t, o.work, "checkout", "--quiet", "main")
	o.commit(map[string]string{"identity/SOUL.md": "our soul\n"})
	before := run(t, o.bare, "rev-parse", "main")
	_, err = Merge(ctx, r, "proposal/s1/clash", me, "m")
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "identity/SOUL.md") {
		t.Fatalf("Merge(conflict) = %v; want ErrConflict naming identity/SOUL.md", err)
	}
	if run(t, o.bare, "rev-parse", "main") != before {
		t.Error("a conflicting merge moved main")
	}
	if _, err := Merge(ctx, r, "proposal/none", me, "m"); err == nil || !strings.Contains(err.Error(), "push it first") {
		t.Errorf("Merge(missing branch) = %v", err)
	}
}
