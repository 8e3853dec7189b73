package lifecycle

import (
	"strings"
	"testing"

	"choir/internal/config"
	"choir/internal/docker"
)

func testSpec() Spec {
	return Spec{AgentID: "agent-1", SessionID: "s-1", LeaseToken: "tok", Image: "choir-agent-agent-1:abc",
		WorkspacePath: "/srv/ws/main", SocketDir: "/home/op/.choir.d/socks/agent/agent-1", HeartbeatMS: 5000,
		Limits: config.DefaultTunables().Container, Instance: "i-1"}
}

func TestProfilePassesVerify(t *testing.T) {
	s := testSpec()
	cfg, hc := Profile(s)
	if err := Verify(cfg, hc, s); err != nil {
		t.Fatalf("Verify(Profile) = %v", err)
	}
	if cfg.Labels[LabelManaged] != "true" || cfg.Labels[LabelAgent] != "agent-1" || cfg.Labels[LabelSession] != "s-1" || cfg.Labels[LabelInstance] != "i-1" {
		t.Errorf("labels = %v", cfg.Labels)
	}
}

// TestProfileHTTPTransport: with an endpoint, choir-agent dials choird's
// HTTPS URL trusting only the CA in its read-only directory, and the
// profile is otherwise the same (the same two mounts, nothing in env).
func TestProfileHTTPTransport(t *testing.T) {
	s := testSpec()
	s.Endpoint = "https://172.17.0.1:9400"
	cfg, hc := Profile(s)
	if err := Verify(cfg, hc, s); err != nil {
		t.Fatalf("Verify(Profile with an endpoint) = %v", err)
	}
	want := []string{"--control-plane=http", "--endpoint=https://172.17.0.1:9400", "--tls-ca=/run/choir/ca.pem"}
	if strings.Join(cfg.Cmd, " ") != strings.Join(want, " ") {
		t.Errorf("Cmd = %q; want %q", cfg.Cmd, want)
	}
	uds, udsHC := Profile(testSpec())
	if len(hc.Mounts) != len(udsHC.Mounts) || strings.Join(cfg.Env, " ") != strings.Join(uds.Env, " ") {
		t.Errorf("the HTTP profile differs beyond its command: mounts %v, env %v", hc.Mounts, cfg.Env)
	}
}

func TestVerifyRefusesEachForbiddenSetting(t *testing.T) {
	tests := []struct {
		name   string
		change func(cfg *docker.ContainerConfig, hc *docker.HostConfig)
		want   string
	}{
		{"privileged", func(_ *docker.ContainerConfig, hc *docker.HostConfig) { hc.Privileged = true }, "privileged mode"},
		{"cap add", func(_ *docker.ContainerConfig, hc *docker.HostConfig) { hc.CapAdd = append(hc.CapAdd, "SYS_ADMIN") }, "added capability SYS_ADMIN"},
		{"cap add ptrace", func(_ *docker.ContainerConfig, hc *docker.HostConfig) { hc.CapAdd = []string{"CAP_SYS_PTRACE"} }, "added capability CAP_SYS_PTRACE"},
		{"agent user", func(cfg *docker.ContainerConfig, _ *docker.HostConfig) { cfg.User = "1000:1000" }, `user "1000:1000"`},
		{"writable socket directory", func(_ *docker.ContainerConfig, hc *docker.HostConfig) { hc.Mounts[1].ReadOnly = false }, "writable mount of the socket directory"},
		{"shared socket directory", func(_ *docker.ContainerConfig, hc *docker.HostConfig) {
			hc.Mounts[1].Source = "/home/op/.choir.d/socks/agent"
		}, "a host mount of /home/op/.choir.d/socks/agent at /run/choir"},
		{"caps kept", func(_ *docker.ContainerConfig, hc *docker.HostConfig) { hc.CapDrop = nil }, "CapDrop must hold ALL"},
		{"new privileges", func(_ *docker.ContainerConfig, hc *docker.HostConfig) { hc.SecurityOpt = nil }, "no-new-privileges missing"},
		{"seccomp off", func(_ *docker.ContainerConfig, hc *docker.HostConfig) {
			hc.SecurityOpt = append(hc.SecurityOpt, "seccomp=unconfined")
		}, `"seccomp=unconfined"`},
		{"host pid", func(_ *docker.ContainerConfig, hc *docker.HostConfig) { hc.PidMode = "host" }, "PID namespace"},
		{"host network", func(_ *docker.ContainerConfig, hc *docker.HostConfig) { hc.NetworkMode = "host" }, "network namespace"},
		{"host ipc", func(_ *docker.ContainerConfig, hc *docker.HostConfig) { hc.IpcMode = "host" }, "IPC namespace"},
		{"another container's network", func(_ *docker.ContainerConfig, hc *docker.HostConfig) { hc.NetworkMode = "container:x" }, "network namespace"},
		{"device", func(_ *docker.ContainerConfig, hc *docker.HostConfig) {
			hc.Devices = []docker.DeviceMapping{{PathOnHost: "/dev/kvm", PathInContainer: "/dev/kvm"}}
		}, "device passthrough"},
		{"writable root", func(_ *docker.ContainerConfig, hc *docker.HostConfig) { hc.ReadonlyRootfs = false }, "writable root"},
		{"no limits", func(_ *docker.ContainerConfig, hc *docker.HostConfig) { hc.Memory = 0 }, "missing cgroup limits"},
		{"docker socket", func(_ *docker.ContainerConfig, hc *docker.HostConfig) {
			hc.Mounts = append(hc.Mounts, docker.Mount{Type: docker.MountBind, Source: "/var/run/docker.sock", Target: "/var/run/docker.sock"})
		}, "the Docker socket"},
		{"host mount", func(_ *docker.ContainerConfig, hc *docker.HostConfig) {
			hc.Mounts = append(hc.Mounts, docker.Mount{Type: docker.MountBind, Source: "/etc", Target: "/host-etc"})
		}, "a host mount of /etc"},
		{"other workspace", func(_ *docker.ContainerConfig, hc *docker.HostConfig) { hc.Mounts[0].Source = "/srv/ws/other" }, "a host mount of /srv/ws/other at /workspace"},
		{"volume", func(_ *docker.ContainerConfig, hc *docker.HostConfig) {
			hc.Mounts = append(hc.Mounts, docker.Mount{Type: docker.MountVolume, Source: "v", Target: "/data"})
		}, "a volume mount"},
		{"missing socket mount", func(_ *docker.ContainerConfig, hc *docker.HostConfig) { hc.Mounts = hc.Mounts[:1] }, "no mount at /run/choir"},
		{"secret in env", func(cfg *docker.ContainerConfig, _ *docker.HostConfig) {
			cfg.Env = append(cfg.Env, "OPENROUTER_KEY=sk-1")
		}, "environment variable OPENROUTER_KEY"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := testSpec()
			cfg, hc := Profile(s)
			tc.change(cfg, hc)
			err := Verify(cfg, hc, s)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Verify = %v; want a refusal containing %q", err, tc.want)
			}
		})
	}
}
