package config

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestOverlapsFindsEveryOverlappingPair: the sorted scan finds exactly the
// pairs that comparing every workspace with every other finds, on paths
// that trip a plain string sort ("/a-b" sorts between "/a" and "/a/b"),
// prefixes that are not directories ("/ab"), duplicates and deep chains.
func TestOverlapsFindsEveryOverlappingPair(t *testing.T) {
	parts := []string{"a", "a-b", "ab", "a.b", "b", "a b", "\u00e9"}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 300 {
		n := 1 + rng.IntN(12)
		paths := make([]string, n)
		for i := range paths {
			depth := 1 + rng.IntN(4)
			var b strings.Builder
			for range depth {
				b.WriteString("/" + parts[rng.IntN(len(parts))])
			}
			paths[i] = b.String()
		}
		var want [][2]int
		for j := range paths {
			for i := range j {
				if relation(paths[j], paths[i]) != "" {
					want = append(want, [2]int{i, j})
				}
			}
		}
		if got := overlaps(paths); !slices.Equal(got, want) {
			t.Fatalf("round %d: overlaps(%q) = %v; want %v", round, paths, got, want)
		}
	}
}

// TestManyWorkspacesReportOnlyTheirOverlaps: a config of 2,000 agents,
// each with a workspace of its own, passes the host check; one workspace
// moved inside another's is reported on the later one, naming the earlier,
// by Validate (as written) and by CheckHost (through a link), and nothing
// else is.
func TestManyWorkspacesReportOnlyTheirOverlaps(t *testing.T) {
	t.Setenv("DOCKER_HOST", "")
	home := Home{Dir: filepath.Join(t.TempDir(), ".choir.d")}
	base, _ := filepath.EvalSymlinks(t.TempDir())
	c := Default()
	c.Workspaces = map[string]Workspace{}
	for i := range 2000 {
		c.Workspaces[fmt.Sprintf("ws-%04d", i)] = Workspace{Path: fmt.Sprintf("%s/w/%04d", base, i)}
	}
	if ps := CheckHost(&c, home); len(ps) != 0 {
		t.Fatalf("CheckHost(2,000 apart) = %v; want none", ps)
	}
	// As written: ws-1500 inside ws-0007.
	c.Workspaces["ws-1500"] = Workspace{Path: base + "/w/0007/inner"}
	v := &validator{c: &c}
	v.workspaces()
	if len(v.ps) != 1 || v.ps[0].Path != "workspaces.ws-1500.path" || !strings.Contains(v.ps[0].Message, `lies inside workspace "ws-0007"`) {
		t.Errorf("Validate's workspace problems = %v; want one: ws-1500 lies inside ws-0007", v.ps)
	}
	// Through a link: ws-1600's path leads into ws-0009's directory.
	c.Workspaces["ws-1500"] = Workspace{Path: base + "/w/1500"}
	os.MkdirAll(base+"/w/0009/inner", 0o755)
	os.Symlink(base+"/w/0009/inner", base+"/alias")
	c.Workspaces["ws-1600"] = Workspace{Path: base + "/alias"}
	ps := CheckHost(&c, home)
	var overlap []Problem
	for _, p := range ps {
		if strings.Contains(p.Message, "workspace \"") {
			overlap = append(overlap, p)
		}
	}
	if len(overlap) != 1 || overlap[0].Path != "workspaces.ws-1600.path" ||
		!strings.Contains(overlap[0].Message, "resolves to "+base+`/w/0009/inner, which lies inside workspace "ws-0009"`) {
		t.Errorf("CheckHost's overlaps = %v; want one: ws-1600 resolves inside ws-0009", overlap)
	}
}

// TestStartRechecksOnlyItsWorkspace: at an agent's start choird re-checks
// the workspace it mounts: one replaced by a symbolic link since the
// config was loaded is refused naming the link; the other workspaces'
// links do not refuse it.
func TestStartRechecksOnlyItsWorkspace(t *testing.T) {
	t.Setenv("DOCKER_HOST", "")
	home := Home{Dir: filepath.Join(t.TempDir(), ".choir.d")}
	base, _ := filepath.EvalSymlinks(t.TempDir())
	for _, d := range []string{"mine", "other", "elsewhere"} {
		os.MkdirAll(filepath.Join(base, d), 0o755)
	}
	c := Default()
	c.Workspaces = map[string]Workspace{"mine": {Path: base + "/mine"}, "other": {Path: base + "/other"}}
	if ps := CheckHost(&c, home); len(ps) != 0 {
		t.Fatalf("CheckHost = %v; want none", ps)
	}
	// other is replaced by a link to mine's directory.
	os.Remove(base + "/other")
	os.Symlink(base+"/mine", base+"/other")
	if ps := CheckWorkspaceHost(&c, home, "mine"); len(ps) != 0 {
		t.Errorf("CheckWorkspaceHost(mine) = %v; want none: mine's path has no link", ps)
	}
	ps := CheckWorkspaceHost(&c, home, "other")
	if len(ps) == 0 || !strings.Contains(ps.Error(), "not canonical: it resolves to "+base+"/mine through a symbolic link") {
		t.Errorf("CheckWorkspaceHost(other) = %v; want other refused: its path is now a link", ps)
	}
	// mine is replaced by a link to the home.
	os.MkdirAll(home.Dir, 0o700)
	os.Remove(base + "/mine")
	os.Symlink(home.Dir, base+"/mine")
	if ps := CheckWorkspaceHost(&c, home, "mine"); !strings.Contains(ps.Error(), "which is the choir home") {
		t.Errorf("CheckWorkspaceHost(mine) = %v; want mine refused: it resolves to the choir home", ps)
	}
}

// BenchmarkCheckHost10000: the load-time host check of 10,000 workspaces
// (each compared with every other took 65 s).
func BenchmarkCheckHost10000(b *testing.B) {
	base := b.TempDir()
	c := Default()
	c.Workspaces = map[string]Workspace{}
	for i := range 10000 {
		c.Workspaces[fmt.Sprintf("ws-%05d", i)] = Workspace{Path: fmt.Sprintf("%s/w/%05d", base, i)}
	}
	home := Home{Dir: filepath.Join(b.TempDir(), ".choir.d")}
	b.ResetTimer()
	for b.Loop() {
		v := &validator{c: &c}
		v.workspaces()
		if ps := CheckHost(&c, home); len(ps) != 0 || len(v.ps) != 0 {
			b.Fatal(ps, v.ps)
		}
	}
}
