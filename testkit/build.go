package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	buildMu  sync.Mutex
	builtDir string
	built    = map[string]string{}
)

// Build compiles a main package of this module (e.g. "choir/choird") once per
// test binary and returns the path of the executable. choir-agent is built
// static (CGO_ENABLED=0), as in the image.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := built[pkg]; ok {
		return p
	}
	if builtDir == "" {
		d, err := os.MkdirTemp("", "choir-test-bin-*")
		if err != nil {
			t.Fatal(err)
		}
		builtDir = d
	}
	out := filepath.Join(builtDir, filepath.Base(pkg))
	if strings.HasSuffix(pkg, "/agent") {
		out = filepath.Join(builtDir, "choir-agent")
	}
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, msg)
	}
	built[pkg] = out
	return out
}

// CleanupBuilds removes what Build compiled; call it from TestMain.
func CleanupBuilds() {
	buildMu.Lock()
	defer buildMu.Unlock()
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
}
