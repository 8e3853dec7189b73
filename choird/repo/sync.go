package repo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"choir/internal/config"
)

// ShortLen is the length of Checkout.Short. It is fixed, unlike git's
// --short, so that names made from it (image tags) do not change as a
// repository grows.
const ShortLen = 7

// Checkout is a clone at the commit its configured ref names.
type Checkout struct {
	Name    string `json:"name"`              // what the repo is to the user: "global repo", "agent repo of agent-1"
	Dir     string `json:"dir"`               // the clone
	URL     string `json:"url"`               // the configured URL, credentials redacted
	Ref     string `json:"ref,omitempty"`     // the configured ref; "" means the remote's default branch
	Commit  string `json:"commit"`            // full SHA of the checked-out commit
	Short   string `json:"short"`             // its first ShortLen hex digits
	Cloned  bool   `json:"cloned"`            // this Sync made the clone
	Warning string `json:"warning,omitempty"` // set when the fetch failed and the clone may be stale
}

// GlobalDir is the clone of the global repo under home.
func GlobalDir(home config.Home) string { return filepath.Join(home.ReposDir(), "global") }

// AgentDir is the clone of agent id's repo under home.
func AgentDir(home config.Home, id string) string {
	return filepath.Join(home.ReposDir(), "agents", id)
}

// locks serialises git commands on one clone within the process.
var locks sync.Map // clean dir -> *sync.Mutex

func lock(dir string) func() {
	m, _ := locks.LoadOrStore(filepath.Clean(dir), new(sync.Mutex))
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// Sync brings the clone at dir to the commit r.Ref names at r.URL, cloning
// the first time and fetching afterwards. name says which repo this is in
// errors and warnings ("global repo"). See the package comment for what a
// failed fetch does.
func Sync(ctx context.Context, name, dir string, r config.Repo) (*Checkout, error) {
	defer lock(dir)()
	co := &Checkout{Name: name, Dir: dir, URL: Redact(r.URL), Ref: r.Ref}
	wrap := func(err error) error {
		return fmt.Errorf("%s (%s): %w", name, co.URL, err)
	}
	remote, err := remoteURL(r.URL)
	if err != nil {
		return nil, wrap(err)
	}
	if err := checkRef(r.Ref); err != nil {
		return nil, wrap(err)
	}
	if !isClone(ctx, dir) {
		if err := clone(ctx, dir, remote, r.Ref); err != nil {
			return nil, wrap(err)
		}
		co.Cloned = true
	} else if ferr := fetch(ctx, dir, remote, r.Ref); ferr != nil {
		if ctx.Err() != nil {
			return nil, wrap(ferr)
		}
		co.Warning = fmt.Sprintf("%s: fetch from %s failed, using the clone as it was: %v", name, co.URL, ferr)
	}
	commit, err := resolve(ctx, dir, r.Ref)
	if err != nil {
		if co.Warning != "" {
			return nil, wrap(fmt.Errorf("%w (and the fetch failed: %s)", err, co.Warning))
		}
		return nil, wrap(err)
	}
	if err := checkout(ctx, dir, commit); err != nil {
		return nil, wrap(err)
	}
	co.Commit, co.Short = commit, commit[:ShortLen]
	return co, nil
}

// checkRef refuses refs git would take as an option.
func checkRef(ref string) error {
	if strings.HasPrefix(ref, "-") || strings.ContainsAny(ref, " \t\n\x00") {
		return fmt.Errorf("ref %q is not a branch, tag or commit name", ref)
	}
	return nil
}

// isClone reports whether dir is the top of a git work tree.
func isClone(ctx context.Context, dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		return false
	}
	top, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return false
	}
	a, err1 := filepath.EvalSymlinks(strings.TrimSpace(top))
	b, err2 := filepath.EvalSymlinks(dir)
	return err1 == nil && err2 == nil && a == b
}

// clone makes a clone of remote at dir: in a temporary directory beside it,
// renamed into place once the ref is checked out. Something at dir that is
// not a clone is replaced.
func clone(ctx context.Context, dir, remote, ref string) error {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".clone-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if _, err := git(ctx, "", "clone", "--quiet", "--no-checkout", "--", remote, tmp); err != nil {
		return err
	}
	commit, err := resolve(ctx, tmp, ref)
	if err != nil && isSHA(ref) {
		// A commit no branch or tag reaches: ask for it by name.
		if _, ferr := git(ctx, tmp, "fetch", "--quiet", "origin", ref); ferr != nil {
			return errors.Join(err, ferr)
		}
		commit, err = resolve(ctx, tmp, ref)
	}
	if err != nil {
		return err
	}
	if err := checkout(ctx, tmp, commit); err != nil {
		return err
	}
	if _, err := os.Lstat(dir); err == nil {
		old := tmp + ".old"
		if err := os.Rename(dir, old); err != nil {
			return fmt.Errorf("move aside %s, which is not a clone: %w", dir, err)
		}
		defer os.RemoveAll(old)
	}
	return os.Rename(tmp, dir)
}

// fetch brings every branch and tag of remote into the clone, first
// pointing origin at remote in case the configured URL changed.
func fetch(ctx context.Context, dir, remote, ref string) error {
	cur, err := git(ctx, dir, "remote", "get-url", "origin")
	if err != nil || strings.TrimSpace(cur) != remote {
		if _, err := git(ctx, dir, "remote", "set-url", "origin", remote); err != nil {
			if _, err := git(ctx, dir, "remote", "add", "origin", remote); err != nil {
				return err
			}
		}
	}
	if _, err := git(ctx, dir, "fetch", "--quiet", "--prune", "--prune-tags", "--force", "origin",
		"+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"); err != nil {
		return err
	}
	if ref == "" {
		if _, err := git(ctx, dir, "remote", "set-head", "origin", "--auto"); err != nil {
			return err
		}
	} else if isSHA(ref) {
		if _, err := resolve(ctx, dir, ref); err != nil {
			// A commit no branch or tag reaches: ask for it by name.
			if _, err := git(ctx, dir, "fetch", "--quiet", "origin", ref); err != nil {
				return err
			}
		}
	}
	return nil
}

var shaPattern = regexp.MustCompile(`^[0-9a-fA-F]{7,64}$`)

func isSHA(s string) bool { return shaPattern.MatchString(s) }

// ErrUnknownRef is a ref that names no branch, tag or commit of the repo.
var ErrUnknownRef = errors.New("no such branch, tag or commit")

// resolve returns the full SHA of the commit ref names in the clone: the
// remote's branch first (never a stale local branch), then a tag, then a
// commit; "" is the remote's default branch.
func resolve(ctx context.Context, dir, ref string) (string, error) {
	var candidates []string
	if ref == "" {
		candidates = []string{"refs/remotes/origin/HEAD"}
	} else {
		candidates = []string{"refs/remotes/origin/" + ref, "refs/tags/" + ref}
		if isSHA(ref) || strings.HasPrefix(ref, "refs/") {
			candidates = append(candidates, ref)
		}
	}
	for _, c := range candidates {
		out, err := git(ctx, dir, "rev-parse", "--verify", "--quiet", "--end-of-options", c+"^{commit}")
		if err == nil {
			return strings.TrimSpace(out), nil
		}
		if ctx.Err() != nil {
			return "", err
		}
	}
	if ref == "" {
		return "", fmt.Errorf("the remote has no default branch (set a ref): %w", ErrUnknownRef)
	}
	return "", fmt.Errorf("ref %q: %w", ref, ErrUnknownRef)
}

// checkout detaches HEAD at commit and makes the work tree exactly that
// commit's tree.
func checkout(ctx context.Context, dir, commit string) error {
	if _, err := git(ctx, dir, "checkout", "--quiet", "--force", "--detach", commit); err != nil {
		return err
	}
	_, err := git(ctx, dir, "clean", "-ffdxq")
	return err
}
