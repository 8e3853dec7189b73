package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"choir/agent/tool"
)

// Path is a workspace path that Confine has checked.
type Path struct {
	// Rel is the cleaned, slash-separated path relative to the root ("."
	// for the root itself). Lock keys and results use it.
	Rel string
	// Abs is where Rel really is: the real root joined with Rel, with every
	// symlink along the existing part resolved. File operations use it.
	Abs string
}

// Clean checks a workspace-relative path without touching the disk and
// returns it cleaned: empty paths, NUL bytes, absolute paths, ~ and any ..
// that leaves the workspace are refused with a path_refused *tool.Error
// naming the path. "a/../b" is "b"; "." is the root.
func Clean(rel string) (string, error) {
	refuse := func(msg string) (string, error) {
		return "", tool.PathErrorf(tool.CodePathRefused, rel, "%s", msg)
	}
	switch {
	case rel == "":
		return refuse("empty path; give a path relative to the workspace root")
	case strings.IndexByte(rel, 0) >= 0:
		return refuse("the path contains a NUL byte")
	case path.IsAbs(rel):
		return refuse("absolute paths are refused; give the path relative to the workspace root")
	case rel == "~" || strings.HasPrefix(rel, "~/"):
		return refuse("~ is not expanded; give the path relative to the workspace root")
	}
	p := path.Clean(rel)
	if p == ".." || strings.HasPrefix(p, "../") {
		return refuse("the path leaves the workspace")
	}
	return p, nil
}

// Confine is the one check every file tool makes: rel must be a clean
// workspace-relative path (see Clean) and must stay inside root on disk. The
// deepest existing ancestor of the path (the path itself when it exists) is
// resolved with filepath.EvalSymlinks and must lie inside the real root, so a
// symlink anywhere on the way to an existing file, or to the directory a new
// file would be created in, cannot lead outside. A dangling symlink on the
// path is refused too, since writing through it would create its target.
//
// The check and the use are not atomic; the lock model makes that safe
// between tools (choir.exec, which could swap a symlink, holds workspace X and
// so excludes every file tool).
func Confine(root, rel string) (Path, error) {
	clean, err := Clean(rel)
	if err != nil {
		return Path{}, err
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return Path{}, tool.Errorf(tool.CodeInternal, "resolve the workspace root: %v", err)
	}
	if realRoot, err = filepath.Abs(realRoot); err != nil {
		return Path{}, tool.Errorf(tool.CodeInternal, "resolve the workspace root: %v", err)
	}
	cur := filepath.Join(realRoot, filepath.FromSlash(clean))
	var rest []string // the missing components below cur, outermost last
	for {
		_, err := os.Lstat(cur)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return Path{}, tool.PathErrorf(tool.CodeIO, clean, "%v", stripPath(err))
		}
		if cur == realRoot {
			return Path{}, tool.Errorf(tool.CodeInternal, "the workspace root %s is gone", root)
		}
		rest = append(rest, filepath.Base(cur))
		cur = filepath.Dir(cur)
	}
	resolved, err := filepath.EvalSymlinks(cur)
	if err != nil {
		return Path{}, tool.PathErrorf(tool.CodePathRefused, clean,
			"the path goes through a symlink that does not resolve (dangling or a loop)")
	}
	if !inside(realRoot, resolved) {
		return Path{}, tool.PathErrorf(tool.CodePathRefused, clean,
			"the path goes through a symlink that leads outside the workspace")
	}
	for i := len(rest) - 1; i >= 0; i-- {
		resolved = filepath.Join(resolved, rest[i])
	}
	return Path{Rel: clean, Abs: resolved}, nil
}

func inside(root, p string) bool {
	if root == string(filepath.Separator) {
		return true
	}
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator))
}

// fsError turns a filesystem error about the path rel into the error the
// model sees.
func fsError(rel, op string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return tool.PathErrorf(tool.CodeNotFound, rel, "no such file or directory")
	case errors.Is(err, syscall.ENOTDIR):
		return tool.PathErrorf(tool.CodeNotDirectory, rel, "a parent of this path is a file, not a directory")
	}
	return tool.PathErrorf(tool.CodeIO, rel, "%s: %v", op, stripPath(err))
}

// stripPath drops the absolute path from an *fs.PathError, so a message to
// the model names the workspace-relative path only.
func stripPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// lockKey is the lock a file tool takes on the cleaned path: the workspace
// for the root, choirtmp for the .choirtmp staging area (design §9.2: it has
// its own lock, independent of the workspace), file:<path> otherwise.
func lockKey(clean, mode string) tool.LockReq {
	switch {
	case clean == ".":
		return tool.LockReq{Key: "workspace", Mode: mode}
	case clean == ".choirtmp" || strings.HasPrefix(clean, ".choirtmp/"):
		return tool.LockReq{Key: "choirtmp", Mode: mode}
	}
	return tool.LockReq{Key: "file:" + clean, Mode: mode}
}
