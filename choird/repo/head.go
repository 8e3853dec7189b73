package repo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"choir/internal/config"
)

// ErrPinned is a ref that is a commit SHA: it has no head that could move.
var ErrPinned = errors.New("the ref is a commit: it never moves")

// Head returns the commit r.Ref names at r.URL now, asked of the remote
// (git ls-remote): nothing is cloned, fetched or changed. "" is the
// remote's default branch; a branch wins over a tag of the same name, as
// in Sync; a tag is followed to its commit. A ref that is a commit SHA
// gives ErrPinned, one the remote does not have ErrUnknownRef.
func Head(ctx context.Context, r config.Repo) (string, error) {
	remote, err := remoteURL(r.URL)
	if err != nil {
		return "", err
	}
	if err := checkRef(r.Ref); err != nil {
		return "", err
	}
	if isSHA(r.Ref) {
		return "", fmt.Errorf("ref %s: %w", r.Ref, ErrPinned)
	}
	args := []string{"ls-remote", "--", remote}
	want := []string{"HEAD"}
	if r.Ref != "" {
		want = []string{"refs/heads/" + r.Ref, "refs/tags/" + r.Ref + "^{}", "refs/tags/" + r.Ref}
		args = append(args, "refs/heads/"+r.Ref, "refs/tags/"+r.Ref, "refs/tags/"+r.Ref+"^{}")
	} else {
		args = append(args, "HEAD")
	}
	out, err := git(ctx, "", args...)
	if err != nil {
		return "", err
	}
	found := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		sha, name, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if ok {
			found[name] = sha
		}
	}
	for _, w := range want {
		if sha, ok := found[w]; ok {
			return sha, nil
		}
	}
	if r.Ref == "" {
		return "", fmt.Errorf("the remote has no default branch (set a ref): %w", ErrUnknownRef)
	}
	return "", fmt.Errorf("ref %q: %w", r.Ref, ErrUnknownRef)
}
