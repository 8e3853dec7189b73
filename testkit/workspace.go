package testkit

import (
	"os"
	"path/filepath"
	"testing"
)

// ToolUID and ToolGID own the workspaces Workspace makes when the tests run
// as root: an agent's tools run as the workspace's owner, and choird refuses
// a root-owned workspace. The ids need no entry in /etc/passwd.
const (
	ToolUID = 64000
	ToolGID = 64000
)

// Workspace makes an empty workspace directory for an agent, owned by
// ToolUID:ToolGID when the tests run as root (by the test's own user
// otherwise), removed when the test ends.
func Workspace(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ws")
	if err := MakeWorkspace(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// MakeWorkspace makes dir (and its parents) as Workspace does and gives it,
// with everything already in it, to ToolUID:ToolGID when running as root.
func MakeWorkspace(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if os.Getuid() != 0 {
		return nil
	}
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, ToolUID, ToolGID)
	})
}
