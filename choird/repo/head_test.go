package repo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"choir/internal/config"
)

// TestHead: Head names the commit a ref points at on the remote, follows
// annotated tags, and changes nothing on disk.
func TestHead(t *testing.T) {
	o := newOrigin(t)
	c1 := o.commit(map[string]string{"a": "1"})
	run(t, o.work, "tag", "-a", "-m", "annotated", "v1")
	run(t, o.work, "push", "--quiet", "origin", "v1")
	run(t, o.work, "checkout", "--quiet", "-b", "dev")
	c2 := o.commit(map[string]string{"a": "2"})
	run(t, o.work, "checkout", "--quiet", "main")
	c3 := o.commit(map[string]string{"b": "3"})
	cwd := t.TempDir()
	t.Chdir(cwd)

	for _, tt := range []struct{ ref, want string }{{"", c3}, {"main", c3}, {"dev", c2}, {"v1", c1}} {
		for _, url := range []string{o.bare, "file://" + o.bare} {
			got, err := Head(context.Background(), config.Repo{URL: url, Ref: tt.ref})
			if err != nil || got != tt.want {
				t.Errorf("Head(%s, ref %q) = %s, %v; want %s", url, tt.ref, got, err, tt.want)
			}
		}
	}
	if _, err := Head(context.Background(), config.Repo{URL: o.bare, Ref: "nope"}); !errors.Is(err, ErrUnknownRef) {
		t.Errorf("Head(ref nope) = %v; want ErrUnknownRef", err)
	}
	if _, err := Head(context.Background(), config.Repo{URL: o.bare, Ref: c1}); !errors.Is(err, ErrPinned) {
		t.Errorf("Head(ref %s) = %v; want ErrPinned", c1, err)
	}
	if _, err := Head(context.Background(), config.Repo{URL: o.bare, Ref: "--upload-pack=x"}); err == nil {
		t.Error("Head accepted a ref that looks like an option")
	}
	if _, err := Head(context.Background(), config.Repo{URL: filepath.Join(cwd, "missing.git")}); err == nil {
		t.Error("Head of a missing repository answered")
	}
	if entries, _ := os.ReadDir(cwd); len(entries) != 0 {
		t.Errorf("Head left %d entries in its working directory", len(entries))
	}
}
