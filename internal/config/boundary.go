package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A workspace is bind-mounted read-write into an agent's container, where a
// prompt-injected model has root and a shell: whatever the directory holds,
// or lies under, the agent can read and change. So a workspace may not be,
// contain or lie inside any directory below, nor overlap another workspace.
// workspacePathProblem and overlapProblem are the checks that need nothing
// but the text (Validate runs them); CheckHost adds the ones that need the
// home and the filesystem.

// systemDirs are the host directories a workspace may not be, contain or lie
// inside; so are "/" (which a workspace may not be) and every top-level
// directory whose name begins with "lib" (/lib, /lib64, /libx32...).
var systemDirs = []string{"/etc", "/proc", "/sys", "/dev", "/run", "/var/run", "/boot", "/usr", "/bin", "/sbin"}

// within reports whether p is dir or lies inside it; both are clean and
// absolute.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// relation says how workspace p stands to dir: "is", "lies inside",
// "contains", or "" when they are apart.
func relation(p, dir string) string {
	switch {
	case p == dir:
		return "is"
	case within(p, dir):
		return "lies inside"
	case within(dir, p):
		return "contains"
	}
	return ""
}

// workspacePathProblem says what is wrong with a workspace path as text, or
// "": it must be absolute, clean, and apart from the system directories.
func workspacePathProblem(p string) string {
	switch {
	case p == "":
		return "required: an absolute host directory"
	case !filepath.IsAbs(p):
		return "want an absolute path (a workspace is a host directory)"
	case p != filepath.Clean(p):
		return fmt.Sprintf("not in canonical form: write it as %q", filepath.Clean(p))
	case p == "/":
		return "the root directory cannot be a workspace: the agent would reach the whole host; choose a directory of its own, such as /srv/choir/<name>"
	}
	return systemDirProblem(p)
}

func systemDirProblem(p string) string {
	for _, dir := range systemDirs {
		if rel := relation(p, dir); rel != "" {
			return fmt.Sprintf("%s the system directory %s: the agent, root in its container, could change the host through it; choose a directory of its own, such as /srv/choir/<name>", rel, dir)
		}
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
	if strings.HasPrefix(first, "lib") {
		return fmt.Sprintf("%s the system directory /%s: the agent, root in its container, could change the host's libraries through it; choose a directory of its own, such as /srv/choir/<name>", relation(p, "/"+first), first)
	}
	return ""
}

// overlapProblem says how workspace p overlaps workspace other (at path o).
func overlapProblem(p, o, other string) string {
	switch relation(p, o) {
	case "is":
		return fmt.Sprintf("workspace %q already uses this directory; each workspace needs its own", other)
	case "lies inside":
		return fmt.Sprintf("lies inside workspace %q (%s): an agent leasing one would reach the files of the agent leasing the other; workspaces must not overlap: choose separate directories", other, o)
	case "contains":
		return fmt.Sprintf("contains workspace %q (%s): an agent leasing one would reach the files of the agent leasing the other; workspaces must not overlap: choose separate directories", other, o)
	}
	return ""
}

// guard is a directory of choird's that no workspace may touch.
type guard struct {
	dir  string // canonical
	name string // what it is
	why  string // why no workspace may touch it
}

func (g guard) problem(rel string) string {
	return fmt.Sprintf("%s %s %s, %s; choose a directory that neither is, contains nor lies inside it", rel, g.name, g.dir, g.why)
}

// CheckHost checks the workspaces against this host, which Validate cannot:
// each path must be canonical (no symbolic link on the way: a link can be
// pointed elsewhere after this check; a path that does not exist yet is
// resolved through its deepest existing ancestor), and neither it nor what
// it resolves to may be, contain or lie inside the choir home, its repo cache
// or socket directories, the Docker socket's directory (from DOCKER_HOST) or
// a system directory; nor may two workspaces overlap once resolved.
// Workspaces with a problem Validate reports are skipped. The overlaps are
// found by sorting (overlaps), not by comparing every pair: a config of
// 10,000 workspaces is checked in well under a second.
func CheckHost(c *Config, home Home) Problems {
	guards := homeGuards(home)
	type resolved struct {
		name, path, canon string // canon "" when it cannot be resolved
		ps                Problems
	}
	var all []resolved // in name order
	var canons []string
	var of []int // canons[k] is all[of[k]]'s
	for _, name := range sortedKeys(c.Workspaces) {
		p := c.Workspaces[name].Path
		if workspacePathProblem(p) != "" {
			continue
		}
		canon, own := checkWorkspaceHost(name, p, guards)
		if canon != "" {
			canons, of = append(canons, canon), append(of, len(all))
		}
		all = append(all, resolved{name, p, canon, own})
	}
	// Each overlap is reported on the workspace later in name order,
	// naming the earlier one; overlaps Validate reports (of the paths as
	// written) are left to it.
	for _, o := range overlaps(canons) {
		r, e := &all[of[o[1]]], all[of[o[0]]]
		if relation(r.path, e.path) == "" {
			r.ps.add(ConfigFile, "workspaces."+r.name+".path", quote(r.path), "resolves to %s, which %s", r.canon, overlapProblem(r.canon, e.canon, e.name))
		}
	}
	var ps Problems
	for _, r := range all {
		ps = append(ps, r.ps...)
	}
	return ps
}

// CheckWorkspaceHost is CheckHost for one workspace of c, as an agent
// start re-checks the workspace it mounts: its path must still be
// canonical and apart from choird's and the system's directories. It does
// not compare it with the other workspaces again: their paths as written
// were found apart when the config was loaded, so two can only overlap now
// through a symbolic link on one's path, which that one's own check at its
// start refuses (and a running agent's mount was made before the link).
func CheckWorkspaceHost(c *Config, home Home, name string) Problems {
	ws, ok := c.Workspaces[name]
	if !ok {
		var ps Problems
		ps.add(ConfigFile, "workspaces."+name, "", "no such workspace")
		return ps
	}
	if msg := workspacePathProblem(ws.Path); msg != "" {
		var ps Problems
		ps.add(ConfigFile, "workspaces."+name+".path", quote(ws.Path), "%s", msg)
		return ps
	}
	_, ps := checkWorkspaceHost(name, ws.Path, homeGuards(home))
	return ps
}

// checkWorkspaceHost resolves workspace name's path p (which passes
// workspacePathProblem) and reports what is wrong with it on this host,
// apart from overlaps; canon is "" when p cannot be resolved.
func checkWorkspaceHost(name, p string, guards []guard) (canon string, ps Problems) {
	path := "workspaces." + name + ".path"
	canon, err := canonicalPath(p)
	if err != nil {
		ps.add(ConfigFile, path, quote(p), "%v", err)
		return "", ps
	}
	via := ""
	if canon != p {
		ps.add(ConfigFile, path, quote(p), "not canonical: it resolves to %s through a symbolic link, which could be pointed elsewhere after this check: write the canonical path %q", canon, canon)
		via = "resolves to " + canon + ", which "
		if msg := systemDirProblem(canon); msg != "" {
			ps.add(ConfigFile, path, quote(p), "%s%s", via, msg)
		}
	}
	for _, g := range guards {
		if rel := relation(canon, g.dir); rel != "" {
			ps.add(ConfigFile, path, quote(p), "%s%s", via, g.problem(rel))
			break
		}
	}
	return canon, ps
}

// overlaps lists every pair of paths (clean and absolute) that overlap,
// one being, containing or lying inside the other, as indices {i, j} with
// i < j, ordered by j then i. Sorted so that '/' comes before every other
// byte, a directory is followed at once by everything under it; a scan
// that keeps the chain of directories enclosing the current path then
// meets each overlapping pair once: O(n log n) plus the pairs found,
// where comparing every pair was O(n²) (65 s for 10,000 workspaces).
func overlaps(paths []string) [][2]int {
	order := make([]int, len(paths))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return comparePaths(paths[a], paths[b]) })
	var out [][2]int
	var chain []int // enclosing paths of the current one, outermost first
	for _, i := range order {
		for len(chain) > 0 && !within(paths[i], paths[chain[len(chain)-1]]) {
			chain = chain[:len(chain)-1]
		}
		for _, j := range chain {
			out = append(out, [2]int{min(i, j), max(i, j)})
		}
		chain = append(chain, i)
	}
	slices.SortFunc(out, func(a, b [2]int) int {
		if a[1] != b[1] {
			return a[1] - b[1]
		}
		return a[0] - b[0]
	})
	return out
}

// comparePaths orders paths byte by byte with '/' before every other byte,
// so "/a" < "/a/b" < "/a-b".
func comparePaths(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := int(a[i]), int(b[i])
		if x == '/' {
			x = -1
		}
		if y == '/' {
			y = -1
		}
		if x != y {
			return x - y
		}
	}
	return len(a) - len(b)
}

// homeGuards lists choird's directories, most specific first, each in its
// canonical form (and in its literal one, when that differs).
func homeGuards(home Home) []guard {
	var gs []guard
	add := func(dir, name, why string) {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return
		}
		gs = append(gs, guard{abs, name, why})
		if canon, err := canonicalPath(abs); err == nil && canon != abs {
			gs = append(gs, guard{canon, name + " (through a link)", why})
		}
	}
	add(home.Dir, "the choir home", "which holds secrets.json and the admin socket: an agent given it could read every secret and command choird")
	add(home.ReposDir(), "the repo cache", "from which choird builds agent images")
	add(home.SocksDir(), "the socket directory", "which holds the admin socket and the agents' sockets")
	if dir := dockerSocketDir(); dir != "" {
		add(dir, "the directory of the Docker socket", "which gives root on the host to whoever reaches it")
	}
	for _, dir := range systemDirs {
		if canon, err := filepath.EvalSymlinks(dir); err == nil && canon != dir {
			gs = append(gs, guard{canon, "the system directory (" + dir + " resolved)", "through which the agent, root in its container, could change the host"})
		}
	}
	return gs
}

// dockerSocketDir is the directory of the Docker socket DOCKER_HOST names
// (unix://PATH), or "" when it names none: the default sockets,
// /var/run/docker.sock and /run/docker.sock, lie in system directories.
func dockerSocketDir() string {
	path, ok := strings.CutPrefix(os.Getenv("DOCKER_HOST"), "unix://")
	if !ok || path == "" {
		return ""
	}
	return filepath.Dir(path)
}

// canonicalPath resolves every symbolic link in the absolute path p. A path
// that does not exist yet is resolved through its deepest existing ancestor;
// a dangling link on the way is an error.
func canonicalPath(p string) (string, error) {
	rest := ""
	cur := p
	for {
		r, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("cannot resolve the path to its canonical form: %v", err)
		}
		if fi, lerr := os.Lstat(cur); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(cur)
			return "", fmt.Errorf("%s is a symbolic link to %s, which does not exist: a workspace path must have no links; write the real directory", cur, target)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}
