package swarm

import (
	"slices"
	"strings"
	"testing"

	"choir/choird/lifecycle"
	"choir/internal/config"
	"choir/internal/docker"
)

// creds are a session's credentials as choird gives them.
var creds = Credentials{CA: []byte("CA PEM"), ClientCert: []byte("CERT PEM"), ClientKey: []byte("KEY PEM")}

const digestRef = "127.0.0.1:5000/choir-agent-alice@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// box is the box the lifecycle makes for an agent on the HTTP transport.
func box(node string) lifecycle.Box {
	s := lifecycle.Spec{AgentID: "alice", SessionID: "s1", LeaseToken: "tok-123", Instance: "i1", Image: "choir-agent-alice:7",
		WorkspacePath: "/srv/ws", SocketDir: "/home/c/.choir.d/socks/agent/alice", HeartbeatMS: 1000,
		Limits: config.ContainerLimits{CPUs: 1.5, MemoryMB: 256, Pids: 128}, Endpoint: "https://10.0.0.1:9400", Node: node}
	cfg, hc := lifecycle.Profile(s)
	if err := lifecycle.Verify(cfg, hc, s); err != nil {
		panic(err)
	}
	return lifecycle.Box{Name: "choir-alice-s1", Config: cfg, Host: hc, Node: node}
}

func TestTranslateCarriesTheProfile(t *testing.T) {
	spec, files, err := Translate(box("worker"), digestRef, creds)
	if err != nil {
		t.Fatalf("Translate = %v", err)
	}
	cs := spec.TaskTemplate.ContainerSpec
	checks := []struct {
		what      string
		got, want any
	}{
		{"image", cs.Image, digestRef},
		{"user", cs.User, lifecycle.ContainerUser},
		{"read-only root", cs.ReadOnly, true},
		{"init", cs.Init != nil && *cs.Init, true},
		{"cap drop", strings.Join(cs.CapabilityDrop, ","), "ALL"},
		{"cap add", strings.Join(cs.CapabilityAdd, ","), strings.Join(lifecycle.AgentCaps, ",")},
		{"memory", spec.TaskTemplate.Resources.Limits.MemoryBytes, int64(256 << 20)},
		{"pids", spec.TaskTemplate.Resources.Limits.Pids, int64(128)},
		{"cpus", spec.TaskTemplate.Resources.Limits.NanoCPUs, int64(1.5e9)},
		{"restart", spec.TaskTemplate.RestartPolicy.Condition, docker.RestartNone},
		{"replicas", *spec.Mode.Replicated.Replicas, uint64(1)},
		{"placement", strings.Join(spec.TaskTemplate.Placement.Constraints, ","), "node.labels.choir.node==worker"},
		{"networks", len(spec.TaskTemplate.Networks), 0},
		{"dir", cs.Dir, lifecycle.WorkspaceTarget},
		{"service labels", spec.Labels[lifecycle.LabelSession], "s1"},
		{"container labels", cs.Labels[lifecycle.LabelInstance], "i1"},
		{"args", strings.Join(cs.Args, " "), "--control-plane=http --endpoint=https://10.0.0.1:9400 --tls-ca=" + lifecycle.CAInside + " " + TokenFlag +
			" --tls-cert=" + ClientCertFile + " --tls-key=" + ClientKeyFile},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("Translate: %s = %v; want %v", c.what, c.got, c.want)
		}
	}
	for _, e := range cs.Env {
		if strings.Contains(e, "tok-123") || strings.HasPrefix(e, lifecycle.EnvLeaseToken) {
			t.Errorf("Translate: env %q; the lease token must reach the agent only as a secret file", e)
		}
	}
	for _, l := range []map[string]string{spec.Labels, cs.Labels} {
		for k, v := range l {
			if strings.Contains(v, "tok-123") {
				t.Errorf("Translate: label %s=%s holds the lease token", k, v)
			}
		}
	}
	var mounts []string
	for _, m := range cs.Mounts {
		s := string(m.Type) + ":" + m.Source + ":" + m.Target
		if m.TmpfsOptions != nil {
			if m.TmpfsOptions.SizeBytes <= 0 {
				t.Errorf("tmpfs %s has no size", m.Target)
			}
		}
		mounts = append(mounts, s)
	}
	slices.Sort(mounts)
	if got := strings.Join(mounts, " "); got != "bind:/srv/ws:/workspace tmpfs::/run tmpfs::/tmp" {
		t.Errorf("mounts = %s; want the workspace and the two tmpfs, no socket directory", got)
	}
	want := map[string]string{TokenFile: "tok-123", lifecycle.CAInside: "CA PEM", ClientCertFile: "CERT PEM", ClientKeyFile: "KEY PEM"}
	if len(files) != 4 || len(cs.Secrets) != 4 {
		t.Fatalf("files = %+v, secrets = %+v; want the token, the CA, the client certificate and its key", files, cs.Secrets)
	}
	for i, f := range files {
		if want[f.Target] != string(f.Data) {
			t.Errorf("file %s = %q; want %q", f.Target, f.Data, want[f.Target])
		}
		ref := cs.Secrets[i]
		if ref.SecretName != f.Name || ref.File.Name != f.Target || ref.File.UID != "0" || ref.File.GID != "0" || ref.File.Mode != 0o400 {
			t.Errorf("secret %d = %+v %+v; want %s at %s, 0:0 0400", i, ref, ref.File, f.Name, f.Target)
		}
	}
}

func TestTranslateRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(b *lifecycle.Box) string // returns the image
		wants string
	}{
		{"a tag", func(b *lifecycle.Box) string { return "127.0.0.1:5000/choir-agent-alice:7" }, "not by digest"},
		{"the socket transport", func(b *lifecycle.Box) string {
			b.Config.Cmd = []string{"--control-plane=uds", "--socket=" + lifecycle.SocketInside}
			return digestRef
		}, "HTTP transport"},
		{"no network", func(b *lifecycle.Box) string { lifecycle.Offline(b.Host); return digestRef }, "use the local runtime"},
		{"a workspace without node", func(b *lifecycle.Box) string { b.Node = ""; return digestRef }, "workspaces.<name>.node"},
		{"another mount", func(b *lifecycle.Box) string {
			b.Host.Mounts = append(b.Host.Mounts, docker.Mount{Type: docker.MountBind, Source: "/etc", Target: "/etc"})
			return digestRef
		}, "a bind mount at /etc"},
		{"an unconfined profile", func(b *lifecycle.Box) string {
			b.Host.SecurityOpt = append(b.Host.SecurityOpt, "seccomp=unconfined")
			return digestRef
		}, `security option "seccomp=unconfined"`},
		{"host IPC", func(b *lifecycle.Box) string { b.Host.IpcMode = "host"; return digestRef }, `IPC mode "host"`},
		{"privileged", func(b *lifecycle.Box) string { b.Host.Privileged = true; return digestRef }, "privileged"},
		{"an unbounded tmpfs", func(b *lifecycle.Box) string { b.Host.Tmpfs["/tmp"] = "rw,nosuid"; return digestRef }, "no size"},
		{"no client certificate", func(b *lifecycle.Box) string { return "" }, "mutual TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := box("worker")
			image, c := tc.edit(&b), creds
			if image == "" {
				image, c.ClientCert, c.ClientKey = digestRef, nil, nil
			}
			_, _, err := Translate(b, image, c)
			if err == nil || !strings.Contains(err.Error(), tc.wants) || !strings.Contains(err.Error(), "cannot run choir-alice-s1") {
				t.Errorf("Translate(%s) = %v; want a refusal naming the box and containing %q", tc.name, err, tc.wants)
			}
		})
	}
}
