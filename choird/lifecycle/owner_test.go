package lifecycle

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestWorkspaceOwner(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to make files of other users")
	}
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	os.Mkdir(ws, 0o755)
	if _, err := workspaceOwner("main", ws); err == nil || !strings.Contains(err.Error(), "owned by root") || !strings.Contains(err.Error(), "chown -R USER: "+ws) {
		t.Errorf("workspaceOwner(root-owned) = %v; want a refusal with the chown that fixes it", err)
	}
	os.Chown(ws, 64001, 64002)
	got, err := workspaceOwner("main", ws)
	if err != nil || got != (fileOwner{64001, 64002}) {
		t.Errorf("workspaceOwner = %+v, %v; want 64001:64002", got, err)
	}
	if _, err := workspaceOwner("main", filepath.Join(root, "missing")); err == nil || !strings.Contains(err.Error(), "mkdir -p") {
		t.Errorf("workspaceOwner(missing) = %v; want how to create it", err)
	}

	// .choirtmp is made for, and given to, the owner; a symlink planted by
	// a tool is refused, never followed.
	if err := prepareChoirtmp(ws, got); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{".choirtmp", ".choirtmp/send", ".choirtmp/recv"} {
		fi, err := os.Lstat(filepath.Join(ws, d))
		if err != nil || !fi.IsDir() || fi.Sys().(*syscall.Stat_t).Uid != 64001 {
			t.Errorf("%s = %v, %v; want a directory of 64001", d, fi, err)
		}
	}
	os.RemoveAll(filepath.Join(ws, ".choirtmp/send"))
	os.Symlink("/etc", filepath.Join(ws, ".choirtmp/send"))
	if err := prepareChoirtmp(ws, got); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("prepareChoirtmp over a symlink = %v; want a refusal", err)
	}
	if fi, _ := os.Stat("/etc"); fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Error("prepareChoirtmp followed the symlink and chowned /etc")
	}
}
