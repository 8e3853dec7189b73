package lifecycle

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"choir/internal/config"
	"choir/internal/docker"
)

// Where things are inside an agent container (§15.1).
const (
	WorkspaceTarget = "/workspace"
	SocketTarget    = "/run/choir"                    // the agent's own socket directory
	SocketName      = "choird.sock"                   // the socket in it
	SocketInside    = SocketTarget + "/" + SocketName // what choir-agent dials
	// CAName is, with the HTTP transport, the file in the agent's socket
	// directory holding the CA certificates choir-agent trusts for choird.
	CAName   = "ca.pem"
	CAInside = SocketTarget + "/" + CAName
)

// Container labels (§15.3); orphans are found by LabelManaged.
const (
	LabelManaged = "choir.managed"
	LabelAgent   = "choir.agent"
	LabelSession = "choir.session"
	// LabelInstance tells apart the containers of choird installations
	// sharing one engine (a hash of the home directory), so a choird only
	// ever removes its own orphans.
	LabelInstance = "choir.instance"
	// LabelImageVersion on an agent image names its version (its tag).
	LabelImageVersion = "choir.image_version"
)

// Env names choir-agent reads; none of them ever holds a secret.
const (
	EnvAgentID     = "CHOIR_AGENT_ID"
	EnvSessionID   = "CHOIR_SESSION_ID"
	EnvLeaseToken  = "CHOIR_LEASE_TOKEN"
	EnvHeartbeatMS = "CHOIR_HEARTBEAT_MS"
)

// Spec is what a container is made from.
type Spec struct {
	AgentID, SessionID, LeaseToken string
	Instance                       string // LabelInstance
	Image                          string
	WorkspacePath                  string // host directory leased to the session
	SocketDir                      string // host directory holding choird.sock
	HeartbeatMS                    int
	Limits                         config.ContainerLimits
	// Endpoint is choird's URL for the HTTP transport (§12.1), with the CA
	// in SocketDir/CAName; empty means the agent's socket in SocketDir.
	Endpoint string
	// Node is the choir.node label of the node holding WorkspacePath
	// (workspaces.<name>.node); "" on one host. The runtime places the box.
	Node string
}

// ContainerUser is who choir-agent runs as in its container: root, holding
// only AgentCaps. It needs them to run every tool process as the workspace's
// owner (agent/sandbox), which is what keeps a tool from signalling,
// tracing or reading the agent; it acts on files as that owner too.
const ContainerUser = "0:0"

// AgentCaps are the only capabilities an agent container keeps: SETUID and
// SETGID to start tools as the workspace's owner, KILL to stop their
// process groups. Every other capability is dropped.
var AgentCaps = []string{"CAP_SETUID", "CAP_SETGID", "CAP_KILL"}

// Profile builds the container of §15.3: every capability dropped but
// AgentCaps, no-new-privileges, a read-only root with tmpfs /tmp and /run, cgroup limits,
// the default seccomp profile, docker-init as PID 1 (it forwards SIGTERM to
// choir-agent and reaps what choir.exec leaves behind), and exactly two bind
// mounts, both declared as Mounts so a missing source fails instead of being
// created: the leased workspace and the agent's own socket directory,
// read-only (with the HTTP transport it holds only the CA that choir-agent
// trusts for choird's endpoint).
func Profile(s Spec) (*docker.ContainerConfig, *docker.HostConfig) {
	cfg := &docker.ContainerConfig{
		Image: s.Image,
		Cmd:   []string{"--control-plane=uds", "--socket=" + SocketInside},
		Env: []string{
			EnvAgentID + "=" + s.AgentID,
			EnvSessionID + "=" + s.SessionID,
			EnvLeaseToken + "=" + s.LeaseToken,
			EnvHeartbeatMS + "=" + strconv.Itoa(s.HeartbeatMS),
		},
		Labels:     map[string]string{LabelManaged: "true", LabelAgent: s.AgentID, LabelSession: s.SessionID, LabelInstance: s.Instance},
		User:       ContainerUser,
		WorkingDir: WorkspaceTarget,
		Hostname:   s.AgentID,
	}
	hc := Hardened(s.Limits)
	hc.Mounts = []docker.Mount{
		{Type: docker.MountBind, Source: s.WorkspacePath, Target: WorkspaceTarget},
		{Type: docker.MountBind, Source: s.SocketDir, Target: SocketTarget, ReadOnly: true},
	}
	hc.CapAdd = slices.Clone(AgentCaps)
	hc.NetworkMode = "bridge"
	if s.Endpoint != "" {
		cfg.Cmd = []string{"--control-plane=http", "--endpoint=" + s.Endpoint, "--tls-ca=" + CAInside}
	}
	return cfg, hc
}

// OfflineSysctls are the only kernel parameters a container may be given:
// IPv6 on its loopback. Docker disables IPv6 in a container without
// network, and then a connect to an IPv6 address fails with
// EADDRNOTAVAIL before any route is looked up, uncounted; with it, such a
// connect fails with ENETUNREACH and the kernel counts it in
// Ip6OutNoRoutes, as it counts IPv4 in OutNoRoutes (netattempts.go).
var OfflineSysctls = map[string]string{"net.ipv6.conf.all.disable_ipv6": "0", "net.ipv6.conf.lo.disable_ipv6": "0"}

// Offline takes hc off every network: NetworkMode none (a loopback
// only, no route anywhere), with IPv6 on the loopback so that attempts to
// IPv6 addresses are counted too.
func Offline(hc *docker.HostConfig) {
	hc.NetworkMode = "none"
	hc.Sysctls = maps.Clone(OfflineSysctls)
}

// Hardened is the part of §15.3 that every container choird starts shares
// (an agent's, a verifier's): every capability dropped, no-new-privileges,
// a read-only root with tmpfs /tmp (TmpSizeMB) and /run, private IPC,
// docker-init as PID 1, the default seccomp profile and the cgroup limits
// l. It has no mounts, no network mode and no capabilities: the caller adds
// those.
func Hardened(l config.ContainerLimits) *docker.HostConfig {
	init := true
	pids := int64(l.Pids)
	return &docker.HostConfig{
		Tmpfs:          map[string]string{"/tmp": "rw,nosuid,nodev,size=" + strconv.FormatInt(TmpSizeMB(l), 10) + "m", "/run": "rw,nosuid,nodev,size=16m"},
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		IpcMode:        "private",
		Init:           &init,
		Resources: docker.Resources{
			NanoCPUs:  int64(l.CPUs * 1e9),
			Memory:    int64(l.MemoryMB) << 20,
			PidsLimit: &pids,
		},
	}
}

// TmpSizeMB sizes the container's /tmp: at most 512 MiB and a quarter of its
// memory. A tmpfs is paid for in the container's memory and cannot be
// reclaimed, so a tool that fills /tmp must leave the agent room to live.
func TmpSizeMB(l config.ContainerLimits) int64 {
	return min(512, max(int64(l.MemoryMB)/4, 1))
}

// Verify refuses any container configuration that breaks §15.3, whoever
// built it: privileged mode, capabilities beyond AgentCaps, a user other than
// ContainerUser, the host's PID, network,
// IPC or user namespaces, devices, a disabled seccomp or AppArmor profile,
// a writable root, missing limits, environment that is not choir-agent's
// identity, and every mount except the workspace at /workspace and the
// socket directory at /run/choir (in particular the Docker socket).
func Verify(cfg *docker.ContainerConfig, hc *docker.HostConfig, s Spec) error {
	var bad []string
	refuse := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	if hc.Privileged {
		refuse("privileged mode")
	}
	for _, c := range hc.CapAdd {
		if !slices.Contains(AgentCaps, "CAP_"+strings.TrimPrefix(strings.ToUpper(c), "CAP_")) {
			refuse("added capability %s (only %v)", c, AgentCaps)
		}
	}
	if cfg.User != ContainerUser {
		refuse("user %q (choir-agent runs as %s and starts its tools as the workspace's owner)", cfg.User, ContainerUser)
	}
	if !slices.Contains(hc.CapDrop, "ALL") {
		refuse("capabilities not all dropped (CapDrop must hold ALL)")
	}
	if !slices.Contains(hc.SecurityOpt, "no-new-privileges") && !slices.Contains(hc.SecurityOpt, "no-new-privileges:true") {
		refuse("no-new-privileges missing")
	}
	for _, opt := range hc.SecurityOpt {
		if strings.HasSuffix(opt, "=unconfined") || strings.HasSuffix(opt, ":unconfined") {
			refuse("security option %q", opt)
		}
	}
	for name, mode := range map[string]string{"PID": hc.PidMode, "network": hc.NetworkMode, "IPC": hc.IpcMode} {
		if mode == "host" || strings.HasPrefix(mode, "container:") {
			refuse("the %s namespace %q", name, mode)
		}
	}
	for k, v := range hc.Sysctls {
		if want, ok := OfflineSysctls[k]; !ok || v != want || hc.NetworkMode != "none" {
			refuse("kernel parameter %s=%s (only %v, and only without network)", k, v, OfflineSysctls)
		}
	}
	if len(hc.Devices) > 0 {
		refuse("device passthrough %v", hc.Devices)
	}
	if !hc.ReadonlyRootfs {
		refuse("a writable root filesystem")
	}
	if hc.Memory <= 0 || hc.NanoCPUs <= 0 || hc.PidsLimit == nil || *hc.PidsLimit <= 0 {
		refuse("missing cgroup limits (CPU, memory and pids are required)")
	}
	allowed := map[string]string{WorkspaceTarget: filepath.Clean(s.WorkspacePath), SocketTarget: filepath.Clean(s.SocketDir)}
	seen := map[string]bool{}
	for _, m := range hc.Mounts {
		src := filepath.Clean(m.Source)
		switch {
		case m.Type != docker.MountBind:
			refuse("a %s mount at %s", m.Type, m.Target)
		case isDockerSocket(src):
			refuse("the Docker socket %s", m.Source)
		case allowed[m.Target] != src:
			refuse("a host mount of %s at %s", m.Source, m.Target)
		case seen[m.Target]:
			refuse("a second mount at %s", m.Target)
		case m.Target == SocketTarget && !m.ReadOnly:
			refuse("a writable mount of the socket directory (it must be read-only)")
		}
		seen[m.Target] = true
	}
	for target := range allowed {
		if !seen[target] {
			refuse("no mount at %s", target)
		}
	}
	for _, e := range cfg.Env {
		name, _, _ := strings.Cut(e, "=")
		if name != EnvAgentID && name != EnvSessionID && name != EnvLeaseToken && name != EnvHeartbeatMS {
			refuse("environment variable %s (only the agent's identity may be env)", name)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("container profile refused: %s", strings.Join(bad, "; "))
	}
	return nil
}

func isDockerSocket(path string) bool {
	if strings.HasSuffix(path, "docker.sock") || path == "/var/run" || path == "/run" || strings.HasPrefix(path, "/var/run/docker") || strings.HasPrefix(path, "/run/docker") {
		return true
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		return true
	}
	return false
}
