package swarm

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"choir/choird/lifecycle"
	"choir/internal/docker"
)

// NodeLabel is the node label a workspace's node names.
const NodeLabel = "choir.node"

// Where the box's secrets appear in its container: files on a tmpfs that
// only root (choir-agent; tools run as the workspace's owner) can read.
const (
	TokenFile = "/run/secrets/choir-lease-token"
	TokenFlag = "--lease-token-file=" + TokenFile
	// The session's client certificate and its key, for mutual TLS with
	// choird (rpc/certs.go).
	ClientCertFile = "/run/secrets/choir-client.pem"
	ClientKeyFile  = "/run/secrets/choir-client-key.pem"
)

// Credentials are what a box's agent proves and checks choird with: the
// CA it trusts for choird's HTTPS endpoint, and the session's client
// certificate and key (PEM) that choird's listener requires.
type Credentials struct {
	CA, ClientCert, ClientKey []byte
}

// StopGrace is how long a task has after SIGTERM before SIGKILL: the
// lifecycle's stop timeout.
const StopGrace = 10 * time.Second

// File is a secret a box is given: Data at Target, read-only, root's.
type File struct {
	Name   string // the Swarm secret's name
	Target string // absolute path in the container
	Data   []byte
}

// Translate turns a box (the §15.3 container, as Profile made it and Verify
// passed it) into a service running image (by digest) and the secrets it
// needs, which carry creds. It refuses what a Swarm node cannot carry: the socket transport (no
// socket of choird's is on a remote node), a box without network (an
// offline session needs that socket), a workspace with no node, and any
// setting it does not know how to carry.
//
// The lease token leaves the environment for a secret file
// (--lease-token-file); the socket directory, which with the HTTP transport
// holds only the CA, becomes a secret file at the same path; the client
// certificate and key become two more (--tls-cert, --tls-key). no-new-privileges,
// which API 1.41 services lack, is dropped: Publish refuses an image with a
// setuid or setgid file instead.
func Translate(b lifecycle.Box, image string, creds Credentials) (docker.ServiceSpec, []File, error) {
	cfg, hc := b.Config, b.Host
	var bad []string
	refuse := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	if !strings.Contains(image, "@sha256:") {
		refuse("image %q is not by digest (name@sha256:…): every node must run the same bytes", image)
	}
	if !slices.Contains(cfg.Cmd, "--control-plane=http") {
		refuse("the agent reaches choird through its socket, which no Swarm node has: run choird with the HTTP transport (--transport=http and a --listen address the nodes reach)")
	}
	switch hc.NetworkMode {
	case "bridge", "", "default":
	case "none":
		refuse("the session has no network (a run, or agents.<id>.network.mode \"policy\"): it reaches choird only through a socket, which no Swarm node has; use the local runtime for it")
	default:
		refuse("network mode %q", hc.NetworkMode)
	}
	if len(hc.Sysctls) > 0 {
		refuse("kernel parameters %v", hc.Sysctls)
	}
	for _, opt := range hc.SecurityOpt {
		if opt != "no-new-privileges" && opt != "no-new-privileges:true" {
			refuse("security option %q", opt)
		}
	}
	if hc.IpcMode != "" && hc.IpcMode != "private" {
		refuse("IPC mode %q (tasks get a private one)", hc.IpcMode)
	}
	if hc.Privileged || len(hc.Devices) > 0 || hc.PidMode != "" {
		refuse("privileged mode, devices or a PID namespace")
	}
	var files []File
	var mounts []docker.Mount
	for _, m := range hc.Mounts {
		switch {
		case m.Type == docker.MountBind && m.Target == lifecycle.WorkspaceTarget:
			if b.Node == "" {
				refuse("workspace %s is a directory on one node: name that node in the workspace's config (workspaces.<name>.node, the node's %s label)", m.Source, NodeLabel)
			}
			mounts = append(mounts, docker.Mount{Type: docker.MountBind, Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly})
		case m.Type == docker.MountBind && m.Target == lifecycle.SocketTarget:
			if len(creds.CA) == 0 {
				refuse("no CA for choird's HTTPS endpoint to give the agent")
			}
			files = append(files, File{Name: b.Name + "-ca", Target: lifecycle.CAInside, Data: creds.CA})
		default:
			refuse("a %s mount at %s", m.Type, m.Target)
		}
	}
	for _, target := range slices.Sorted(maps.Keys(hc.Tmpfs)) {
		size, err := tmpfsSize(hc.Tmpfs[target])
		if err != nil {
			refuse("tmpfs %s: %v", target, err)
			continue
		}
		mounts = append(mounts, docker.Mount{Type: docker.MountTmpfs, Target: target, TmpfsOptions: &docker.TmpfsOptions{SizeBytes: size}})
	}
	var env []string
	args := slices.Clone(cfg.Cmd)
	for _, e := range cfg.Env {
		name, value, _ := strings.Cut(e, "=")
		if name == lifecycle.EnvLeaseToken {
			files = append(files, File{Name: b.Name + "-token", Target: TokenFile, Data: []byte(value)})
			args = append(args, TokenFlag)
			continue
		}
		env = append(env, e)
	}
	if len(creds.ClientCert) == 0 || len(creds.ClientKey) == 0 {
		refuse("no client certificate for the session: choird's listener admits agents on other nodes only with one (mutual TLS)")
	} else {
		files = append(files, File{Name: b.Name + "-client-cert", Target: ClientCertFile, Data: creds.ClientCert},
			File{Name: b.Name + "-client-key", Target: ClientKeyFile, Data: creds.ClientKey})
		args = append(args, "--tls-cert="+ClientCertFile, "--tls-key="+ClientKeyFile)
	}
	if len(bad) > 0 {
		return docker.ServiceSpec{}, nil, fmt.Errorf("the Swarm runtime cannot run %s: %s", b.Name, strings.Join(bad, "; "))
	}
	grace := StopGrace
	one := uint64(1)
	cs := &docker.ContainerSpec{
		Image: image, Labels: cfg.Labels, Command: cfg.Entrypoint, Args: args, Hostname: cfg.Hostname, Env: env, Dir: cfg.WorkingDir,
		User: cfg.User, Init: hc.Init, StopGracePeriod: &grace, ReadOnly: hc.ReadonlyRootfs, Mounts: mounts,
		CapabilityAdd: slices.Clone(hc.CapAdd), CapabilityDrop: slices.Clone(hc.CapDrop),
	}
	for _, f := range files {
		cs.Secrets = append(cs.Secrets, docker.SecretReference{SecretName: f.Name,
			File: &docker.SecretFile{Name: f.Target, UID: "0", GID: "0", Mode: 0o400}})
	}
	spec := docker.ServiceSpec{
		Name:   b.Name,
		Labels: cfg.Labels,
		Mode:   docker.ServiceMode{Replicated: &docker.ReplicatedService{Replicas: &one}},
		TaskTemplate: docker.TaskSpec{
			ContainerSpec: cs,
			Resources: &docker.ResourceRequirements{Limits: &docker.Limit{
				NanoCPUs: hc.NanoCPUs, MemoryBytes: hc.Memory, Pids: derefInt64(hc.PidsLimit),
			}},
			RestartPolicy: &docker.RestartPolicy{Condition: docker.RestartNone},
		},
	}
	if b.Node != "" {
		spec.TaskTemplate.Placement = &docker.Placement{Constraints: []string{"node.labels." + NodeLabel + "==" + b.Node}}
	}
	return spec, files, nil
}

// tmpfsSize reads the size= of a tmpfs option string ("rw,nosuid,size=512m").
func tmpfsSize(opts string) (int64, error) {
	for _, o := range strings.Split(opts, ",") {
		v, ok := strings.CutPrefix(o, "size=")
		if !ok {
			continue
		}
		mult := int64(1)
		switch {
		case strings.HasSuffix(v, "k"):
			mult, v = 1<<10, strings.TrimSuffix(v, "k")
		case strings.HasSuffix(v, "m"):
			mult, v = 1<<20, strings.TrimSuffix(v, "m")
		case strings.HasSuffix(v, "g"):
			mult, v = 1<<30, strings.TrimSuffix(v, "g")
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("size %q", o)
		}
		return n * mult, nil
	}
	return 0, fmt.Errorf("no size in %q (an unbounded tmpfs could take the node's memory)", opts)
}

func derefInt64(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
