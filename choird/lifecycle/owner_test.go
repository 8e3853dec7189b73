package lifecycle

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"choir/choird/lease"
	"choir/internal/config"
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

// A workspace that was checked when choird started and has been replaced by
// a symbolic link since (to /etc, here) is refused at the next start, before
// anything is leased or created.
func TestStartRefusesAWorkspaceTurnedSymlink(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	os.Symlink("/etc", ws)
	c := config.Default()
	c.Workspaces = map[string]config.Workspace{"main": {Path: ws}}
	c.Models = map[string]config.Model{"m": {Provider: "p", Model: "x", Endpoint: "http://127.0.0.1:1/v1", Secret: "k", ContextWindow: 8192}}
	c.Gateways = map[string]config.Gateway{"bot": {Type: "telegram", Secret: "tg"}}
	c.DMs = map[string]config.DM{"dm1": {Gateway: "bot", UserID: "1"}}
	c.GitIdentities = map[string]config.GitIdentity{"dev": {Name: "Dev", Email: "d@x", Secret: "k"}}
	c.Agents = map[string]config.Agent{"a": {Defaults: config.AgentDefaults{Workspace: "main", LLM: "m", GitIdentity: "dev", DM: "dm1"}}}
	loaded := &config.Loaded{Config: &c, Secrets: config.Secrets{"k": "v", "tg": "t"}}
	m := &Manager{Leases: lease.NewTable(), Home: config.Home{Dir: filepath.Join(root, "h")},
		Config: func() (*config.Loaded, int64) { return loaded, 1 }}
	_, err := m.Start(context.Background(), "a", lease.Overrides{})
	if err == nil || !strings.Contains(err.Error(), "workspaces.main.path") || !strings.Contains(err.Error(), "/etc") {
		t.Fatalf("Start over a workspace turned symlink = %v; want a refusal naming the path", err)
	}
	if _, ok := m.Leases.Holder(lease.Resource{Kind: lease.Workspace, Name: "main"}); ok {
		t.Error("the refused start left a lease behind")
	}
}
