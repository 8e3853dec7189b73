package testkit_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildsOfflineFromVendor: the three binaries build from the tree
// alone, as `make audit` needs: vendor/ agrees with go.mod, no module is
// fetched (GOPROXY=off) and the module cache is empty.
func TestBuildsOfflineFromVendor(t *testing.T) {
	if _, err := os.Stat("../vendor/modules.txt"); err != nil {
		t.Fatalf("no vendor/modules.txt: run go mod vendor (and commit vendor/): %v", err)
	}
	cmd := exec.Command("go", "build", "-trimpath", "-o", t.TempDir()+"/", "./choird", "./choirctl", "./agent")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=vendor", "GOPROXY=off", "GOSUMDB=off", "GOTOOLCHAIN=local",
		"GOMODCACHE="+filepath.Join(t.TempDir(), "empty-modcache"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("offline build from vendor/: %v\n%s\n(if vendor/ is stale: go mod vendor)", err, out)
	}
	// An auditor clones the repository: vendor/ must be in it.
	out, err := exec.Command("git", "-C", "..", "ls-files", "vendor").Output()
	if err == nil && len(strings.TrimSpace(string(out))) == 0 {
		t.Error("vendor/ is not committed: an auditor's clone would not have it")
	}
}
