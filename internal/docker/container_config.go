package docker

// The JSON field names below are the Engine API's (v1.41), which are mostly
// the Go field names; the exceptions carry tags. The engine ignores fields
// it does not know, so a wrong name fails silently: the tests read every
// field back through ContainerInspect.

// ContainerConfig is the portable part of a container's configuration (the
// top level of POST /containers/create, and Config in inspect answers).
type ContainerConfig struct {
	Image       string            // image name:tag or ID to run
	Cmd         []string          `json:",omitempty"` // replaces the image's CMD
	Entrypoint  []string          `json:",omitempty"` // replaces the image's ENTRYPOINT; [""] clears it
	Env         []string          `json:",omitempty"` // "KEY=value"
	Labels      map[string]string `json:",omitempty"`
	User        string            `json:",omitempty"` // "uid", "uid:gid" or a name from the image's /etc/passwd
	WorkingDir  string            `json:",omitempty"`
	Hostname    string            `json:",omitempty"`
	Tty         bool              `json:",omitempty"` // allocate a TTY: logs are then raw, not multiplexed
	StopSignal  string            `json:",omitempty"` // signal ContainerStop sends first; default SIGTERM
	StopTimeout *int              `json:",omitempty"` // seconds ContainerStop waits by default; nil: 10
}

// HostConfig is the host-dependent part of a container's configuration:
// mounts, privileges, namespaces and resource limits.
//
// Bind mounts are expressed only as Mounts: the older Binds form silently
// creates a missing source directory, while a Mount of type bind with a
// missing source is refused (HTTP 400).
type HostConfig struct {
	Mounts         []Mount           `json:",omitempty"`
	Tmpfs          map[string]string `json:",omitempty"` // container path -> mount options, e.g. "/tmp": "rw,noexec,nosuid,size=64m"
	ReadonlyRootfs bool              `json:",omitempty"`
	CapAdd         []string          `json:",omitempty"` // e.g. "NET_BIND_SERVICE"
	CapDrop        []string          `json:",omitempty"` // e.g. "ALL"
	SecurityOpt    []string          `json:",omitempty"` // e.g. "no-new-privileges"
	Privileged     bool              `json:",omitempty"`
	PidMode        string            `json:",omitempty"` // "" (private), "host", "container:<id>"
	NetworkMode    string            `json:",omitempty"` // "bridge", "none", "host", "container:<id>", a network name
	IpcMode        string            `json:",omitempty"` // "private", "shareable", "none", "host"
	Devices        []DeviceMapping   `json:",omitempty"`
	Init           *bool             `json:",omitempty"` // run docker-init as PID 1 to forward signals and reap zombies
	AutoRemove     bool              `json:",omitempty"` // remove the container when it exits
	LogConfig      *LogConfig        `json:",omitempty"` // the container's log driver; nil: the engine's default
	Sysctls        map[string]string `json:",omitempty"` // namespaced kernel parameters, e.g. "net.ipv6.conf.lo.disable_ipv6": "0"
	Resources                        // limits, at the top level of HostConfig on the wire
}

// LogConfig chooses a container's log driver and its options, e.g.
// {Type: "json-file", Config: {"max-size": "16m", "max-file": "1"}}, which
// caps what the engine keeps on disk (it rotates, keeping the newest).
type LogConfig struct {
	Type   string
	Config map[string]string `json:",omitempty"`
}

// Resources are a container's cgroup limits.
type Resources struct {
	NanoCPUs  int64  `json:"NanoCpus,omitempty"` // CPU quota in units of 1e-9 CPUs: 1.5 CPUs is 1500000000
	Memory    int64  `json:",omitempty"`         // bytes
	PidsLimit *int64 `json:",omitempty"`         // maximum number of processes; nil or 0: unlimited
}

// MountType is the kind of a Mount.
type MountType string

// Mount types choir uses.
const (
	MountBind   MountType = "bind"
	MountTmpfs  MountType = "tmpfs"
	MountVolume MountType = "volume"
)

// Mount is one entry of HostConfig.Mounts.
type Mount struct {
	Type         MountType
	Source       string        `json:",omitempty"` // host path for bind; volume name; empty for tmpfs
	Target       string        // path in the container
	ReadOnly     bool          `json:",omitempty"`
	BindOptions  *BindOptions  `json:",omitempty"`
	TmpfsOptions *TmpfsOptions `json:",omitempty"`
}

// BindOptions tune a bind mount.
type BindOptions struct {
	Propagation  string `json:",omitempty"` // "rprivate" (default), "private", "rshared", "shared", "rslave", "slave"
	NonRecursive bool   `json:",omitempty"` // do not bind the mounts below Source
}

// TmpfsOptions tune a tmpfs mount.
type TmpfsOptions struct {
	SizeBytes int64  `json:",omitempty"`
	Mode      uint32 `json:",omitempty"` // permission bits of the mount's root, e.g. 01777
}

// DeviceMapping passes a host device into the container.
type DeviceMapping struct {
	PathOnHost        string
	PathInContainer   string
	CgroupPermissions string // "rwm"
}
