package lock

import (
	"fmt"
	"path"
	"strings"
)

// A Key names a lockable resource in its canonical form. Build keys with the
// constants, [File] and the reserved-namespace constructors, or [ParseKey];
// Acquire canonicalises and checks every key it is given.
type Key string

// The keys that take no argument.
const (
	// Workspace is the whole leased workspace, parent of every file key.
	Workspace Key = "workspace"
	// BrowserTab is the agent's browser context.
	BrowserTab Key = "browser_tab"
	// ChoirTmp is the .choirtmp/ staging area, independent of Workspace.
	ChoirTmp Key = "choirtmp"
)

const filePrefix = "file:"

// maxArg bounds the argument of a reserved-namespace key.
const maxArg = 256

// File returns the key file:<p> of a workspace-relative path, with p cleaned
// by path.Clean ("./src//a.go" becomes "src/a.go"). It refuses empty and
// absolute paths, paths that leave the workspace ("../x", "a/../../x") and
// the workspace root itself ("."), for which Workspace is the key.
func File(rel string) (Key, error) {
	p, err := cleanRel(rel)
	if err != nil {
		return "", fmt.Errorf("%w %q: %s", ErrInvalidKey, filePrefix+rel, err)
	}
	return Key(filePrefix + p), nil
}

// cleanRel cleans a workspace-relative path or says why it cannot be one.
func cleanRel(rel string) (string, error) {
	switch {
	case rel == "":
		return "", fmt.Errorf("empty path; want a path relative to the workspace root")
	case strings.IndexByte(rel, 0) >= 0:
		return "", fmt.Errorf("path contains a NUL byte")
	case path.IsAbs(rel):
		return "", fmt.Errorf("absolute path; give it relative to the workspace root")
	}
	p := path.Clean(rel)
	switch {
	case p == ".." || strings.HasPrefix(p, "../"):
		return "", fmt.Errorf("path leaves the workspace")
	case p == ".":
		return "", fmt.Errorf("path names the workspace root; lock %q instead", Workspace)
	}
	return p, nil
}

// Mem returns mem:<workspace> (reserved, no v1 users).
func Mem(workspace string) (Key, error) { return reserved("mem", workspace) }

// Repo returns repo:<workspace> (reserved, no v1 users).
func Repo(workspace string) (Key, error) { return reserved("repo", workspace) }

// Net returns net:<service> (reserved, no v1 users).
func Net(service string) (Key, error) { return reserved("net", service) }

// Ext returns ext:<provider> (reserved, no v1 users).
func Ext(provider string) (Key, error) { return reserved("ext", provider) }

// reserved builds ns:arg, where arg is 1 to maxArg printable characters
// without spaces.
func reserved(ns, arg string) (Key, error) {
	k := ns + ":" + arg
	if arg == "" {
		return "", fmt.Errorf("%w %q: empty name after %q", ErrInvalidKey, k, ns+":")
	}
	if len(arg) > maxArg {
		return "", fmt.Errorf("%w %q: name longer than %d bytes", ErrInvalidKey, k, maxArg)
	}
	for _, c := range arg {
		if c <= ' ' || c == 0x7f {
			return "", fmt.Errorf("%w %q: name contains a space or control character", ErrInvalidKey, k)
		}
	}
	return Key(k), nil
}

// ParseKey checks s and returns its canonical key: "workspace",
// "browser_tab", "choirtmp", or one of the namespaces file:, mem:, repo:,
// net: and ext: followed by a name (a file path is cleaned as by File).
func ParseKey(s string) (Key, error) {
	switch k := Key(s); k {
	case Workspace, BrowserTab, ChoirTmp:
		return k, nil
	}
	ns, arg, ok := strings.Cut(s, ":")
	switch {
	case !ok:
	case ns == "file":
		if p, err := cleanRel(arg); err == nil && p == arg {
			return Key(s), nil // already canonical: no copy
		}
		return File(arg)
	case ns == "mem" || ns == "repo" || ns == "net" || ns == "ext":
		return reserved(ns, arg)
	case Key(ns) == Workspace || Key(ns) == BrowserTab || Key(ns) == ChoirTmp:
		return "", fmt.Errorf("%w %q: %q takes no argument", ErrInvalidKey, s, ns)
	}
	return "", fmt.Errorf("%w %q: unknown namespace; want workspace, browser_tab, choirtmp, "+
		"or file:, mem:, repo:, net:, ext: followed by a name", ErrInvalidKey, s)
}

// Path returns the workspace-relative path of a file key, and false for other keys.
func (k Key) Path() (string, bool) {
	p, ok := strings.CutPrefix(string(k), filePrefix)
	if !ok {
		return "", false
	}
	return p, true
}

// isFile reports whether k is a file:<path> key.
func (k Key) isFile() bool { return strings.HasPrefix(string(k), filePrefix) }

// overlaps reports whether two canonical keys name overlapping resources:
// the same key, workspace and any file key, or a file key and a file key
// inside it.
func overlaps(a, b Key) bool {
	switch {
	case a == b:
		return true
	case a == Workspace:
		return b.isFile()
	case b == Workspace:
		return a.isFile()
	case a.isFile() && b.isFile():
		return inside(a, b) || inside(b, a)
	}
	return false
}

// inside reports whether file key k lies strictly inside file key dir.
func inside(k, dir Key) bool {
	return len(k) > len(dir) && k[len(dir)] == '/' && strings.HasPrefix(string(k), string(dir))
}

// parent returns the nearest resource strictly containing the canonical
// key k: file:a/b/c is inside file:a/b, file:a inside workspace. Other keys
// have no parent.
func parent(k Key) (Key, bool) {
	p, ok := k.Path()
	if !ok {
		return "", false
	}
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return k[:len(filePrefix)+i], true
	}
	return Workspace, true
}
