package verify

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"choir/choird/lifecycle"
	"choir/internal/config"
	"choir/internal/docker"
)

// containerConfig builds the verifier's container: lifecycle.Hardened with
// no network and the worktree read-only, running the command (never the
// image's entrypoint) as the worktree's owner.
func (r *Runner) containerConfig(req Request) (*docker.ContainerConfig, *docker.HostConfig, error) {
	fi, err := os.Stat(req.Worktree)
	if err != nil {
		return nil, nil, fmt.Errorf("verify run %s: %w", req.RunID, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, nil, fmt.Errorf("verify run %s: cannot read the owner of %s", req.RunID, req.Worktree)
	}
	labels := map[string]string{}
	for k, v := range r.Labels {
		labels[k] = v
	}
	labels[lifecycle.LabelManaged] = "true"
	labels[lifecycle.LabelInstance] = r.Instance
	labels[LabelRun] = req.RunID
	labels[LabelVerifier] = req.Verifier.Name
	cfg := &docker.ContainerConfig{
		Image:      req.Image,
		Entrypoint: []string{""},
		Cmd:        req.Verifier.Command,
		Env:        Env,
		Labels:     labels,
		User:       strconv.FormatUint(uint64(st.Uid), 10) + ":" + strconv.FormatUint(uint64(st.Gid), 10),
		WorkingDir: WorkspaceTarget,
		Hostname:   "verify",
	}
	lim := r.Limits
	def := config.DefaultTunables().Container
	if lim.CPUs <= 0 {
		lim.CPUs = def.CPUs
	}
	if lim.MemoryMB <= 0 {
		lim.MemoryMB = def.MemoryMB
	}
	if lim.Pids <= 0 {
		lim.Pids = def.Pids
	}
	hc := lifecycle.Hardened(lim)
	hc.NetworkMode = "none"
	hc.Mounts = []docker.Mount{{Type: docker.MountBind, Source: req.Worktree, Target: WorkspaceTarget, ReadOnly: true}}
	// What the engine keeps on disk is bounded too; the stream is read as
	// it comes, so only a verifier writing this much faster than choird
	// reads could lose the middle of its output.
	logMax := max(16<<20, 4*r.maxOutput())
	hc.LogConfig = &docker.LogConfig{Type: "json-file", Config: map[string]string{"max-size": strconv.FormatInt(logMax, 10), "max-file": "1"}}
	return cfg, hc, nil
}

// Check refuses a verifier container configuration that is not the
// hardened profile with no network and only the worktree, read-only.
func Check(cfg *docker.ContainerConfig, hc *docker.HostConfig, worktree string) error {
	var bad []string
	refuse := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	if hc.Privileged {
		refuse("privileged mode")
	}
	if len(hc.CapAdd) > 0 {
		refuse("added capabilities %v", hc.CapAdd)
	}
	if len(hc.CapDrop) != 1 || hc.CapDrop[0] != "ALL" {
		refuse("capabilities not all dropped")
	}
	if len(hc.SecurityOpt) != 1 || hc.SecurityOpt[0] != "no-new-privileges" {
		refuse("security options %v (want exactly no-new-privileges)", hc.SecurityOpt)
	}
	if hc.NetworkMode != "none" {
		refuse("network %q (verifiers run with none)", hc.NetworkMode)
	}
	if hc.PidMode != "" || (hc.IpcMode != "private" && hc.IpcMode != "") {
		refuse("shared namespaces (PID %q, IPC %q)", hc.PidMode, hc.IpcMode)
	}
	if len(hc.Devices) > 0 {
		refuse("devices %v", hc.Devices)
	}
	if !hc.ReadonlyRootfs {
		refuse("a writable root filesystem")
	}
	if hc.Memory <= 0 || hc.NanoCPUs <= 0 || hc.PidsLimit == nil || *hc.PidsLimit <= 0 {
		refuse("missing cgroup limits")
	}
	if len(hc.Mounts) != 1 || hc.Mounts[0].Type != docker.MountBind || filepath.Clean(hc.Mounts[0].Source) != filepath.Clean(worktree) ||
		hc.Mounts[0].Target != WorkspaceTarget || !hc.Mounts[0].ReadOnly {
		refuse("mounts %+v (want only the worktree, read-only, at %s)", hc.Mounts, WorkspaceTarget)
	}
	if cfg.User == "" || cfg.User == "0" || strings.HasPrefix(cfg.User, "0:") {
		// Root without capabilities cannot do much, but the worktree's owner
		// can do less: root is allowed only for a root-owned worktree.
		if fi, err := os.Stat(worktree); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 {
				refuse("user %q for a worktree owned by uid %d", cfg.User, st.Uid)
			}
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("verifier container refused: %s", strings.Join(bad, "; "))
	}
	return nil
}
