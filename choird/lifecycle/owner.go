package lifecycle

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// fileOwner is a uid and gid on the host.
type fileOwner struct{ uid, gid int }

// workspaceOwner checks that a workspace is a directory owned by an
// unprivileged user and returns that user: choir-agent runs its tools as the
// workspace's owner (agent/sandbox), and root would be the agent's own uid,
// which is what keeps a tool from signalling, tracing or reading it.
func workspaceOwner(name, path string) (fileOwner, error) {
	fi, err := os.Stat(path)
	if err != nil || !fi.IsDir() {
		return fileOwner{}, fmt.Errorf("workspace %q: %s is not a directory: create it (mkdir -p %s)", name, path, path)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileOwner{}, fmt.Errorf("workspace %q: %s has no owner information", name, path)
	}
	if st.Uid == 0 {
		return fileOwner{}, fmt.Errorf("workspace %q: %s is owned by root; an agent's tools run as the workspace's owner and never as root: "+
			"give it to an unprivileged user (chown -R USER: %s, e.g. the user that runs choird)", name, path, path)
	}
	return fileOwner{int(st.Uid), int(st.Gid)}, nil
}

// prepareChoirtmp makes .choirtmp/send and .choirtmp/recv in the workspace,
// owned by the workspace's owner so the agent's tools may write there.
func prepareChoirtmp(wsPath string, owner fileOwner) error {
	for _, dir := range []string{".choirtmp", ".choirtmp/send", ".choirtmp/recv"} {
		p := filepath.Join(wsPath, dir)
		if err := os.Mkdir(p, 0o755); err != nil && !os.IsExist(err) {
			return fmt.Errorf("prepare the workspace: %w", err)
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return fmt.Errorf("prepare the workspace: %w", err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("prepare the workspace: %s is not a directory: move it away", p)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if int(st.Uid) == owner.uid && int(st.Gid) == owner.gid {
			continue
		}
		if err := os.Lchown(p, owner.uid, owner.gid); err != nil {
			return fmt.Errorf("prepare the workspace: give %s to its owner %d:%d: %w", p, owner.uid, owner.gid, err)
		}
	}
	return nil
}
