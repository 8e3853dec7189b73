package docker

import (
	"io/fs"
	"time"
)

// The JSON field names below are the Engine API's (v1.41, moby's
// api/types/swarm), which are the Go field names unless a tag says
// otherwise. The engine ignores fields it does not know, so a wrong name
// fails silently: the fakes decode the raw JSON, and the Swarm test reads
// the spec back through ServiceInspect.

// ServiceSpec describes a service: what choir runs for one agent box on a
// swarm is a service of one replica whose task never restarts.
type ServiceSpec struct {
	Name         string            `json:",omitempty"`
	Labels       map[string]string `json:",omitempty"`
	TaskTemplate TaskSpec
	Mode         ServiceMode
}

// ServiceMode is replicated (the default: one replica when Replicated is
// nil) or global.
type ServiceMode struct {
	Replicated *ReplicatedService `json:",omitempty"`
	Global     *struct{}          `json:",omitempty"`
}

// ReplicatedService runs Replicas tasks.
type ReplicatedService struct {
	Replicas *uint64 `json:",omitempty"`
}

// TaskSpec is what every task of the service runs, and where.
type TaskSpec struct {
	ContainerSpec *ContainerSpec            `json:",omitempty"`
	Resources     *ResourceRequirements     `json:",omitempty"`
	RestartPolicy *RestartPolicy            `json:",omitempty"`
	Placement     *Placement                `json:",omitempty"`
	Networks      []NetworkAttachmentConfig `json:",omitempty"`
	LogDriver     *LogDriver                `json:",omitempty"`
	// ForceUpdate, changed, makes an update replace the tasks even when
	// nothing else of the spec changed.
	ForceUpdate uint64 `json:",omitempty"`
}

// ContainerSpec is the container of a task: the service form of
// ContainerConfig and HostConfig. API 1.41 has no NoNewPrivileges here
// (Privileges.NoNewPrivileges came with 1.44), no devices and no PID mode.
type ContainerSpec struct {
	Image           string            // "name@sha256:...": every node must run the same bytes
	Labels          map[string]string `json:",omitempty"`
	Command         []string          `json:",omitempty"` // replaces the image's ENTRYPOINT
	Args            []string          `json:",omitempty"` // replaces the image's CMD
	Hostname        string            `json:",omitempty"`
	Env             []string          `json:",omitempty"` // "KEY=value"
	Dir             string            `json:",omitempty"`
	User            string            `json:",omitempty"` // "uid", "uid:gid" or a name from the image's /etc/passwd
	Groups          []string          `json:",omitempty"`
	Init            *bool             `json:",omitempty"`
	StopSignal      string            `json:",omitempty"`
	StopGracePeriod *time.Duration    `json:",omitempty"` // nanoseconds on the wire
	TTY             bool              `json:",omitempty"` // then logs are raw, not multiplexed
	ReadOnly        bool              `json:",omitempty"` // read-only root file system
	Mounts          []Mount           `json:",omitempty"` // bind, volume and tmpfs, as for containers
	Hosts           []string          `json:",omitempty"` // "IP host [alias...]" lines for /etc/hosts
	Secrets         []SecretReference `json:",omitempty"`
	Sysctls         map[string]string `json:",omitempty"`
	CapabilityAdd   []string          `json:",omitempty"` // API 1.41+
	CapabilityDrop  []string          `json:",omitempty"` // API 1.41+, e.g. "ALL"
}

// SecretReference mounts a Swarm secret into the container as a file on a
// tmpfs under /run/secrets (the secret never appears in the environment or
// in an inspect answer).
type SecretReference struct {
	File       *SecretFile // where and how the secret appears
	SecretID   string      // the id SecretCreate returned
	SecretName string      // the secret's name
}

// SecretFile is a secret's file in the container.
type SecretFile struct {
	Name string      // file name under /run/secrets, or an absolute path
	UID  string      // owner, numeric as a string: "65534"
	GID  string      // group, numeric as a string
	Mode fs.FileMode // permission bits, e.g. 0o400 (a JSON number)
}

// ResourceRequirements are a task's limits and reservations.
type ResourceRequirements struct {
	Limits       *Limit    `json:",omitempty"`
	Reservations *Reserved `json:",omitempty"`
}

// Limit caps a task's resources.
type Limit struct {
	NanoCPUs    int64 `json:",omitempty"` // 1.5 CPUs is 1500000000
	MemoryBytes int64 `json:",omitempty"`
	Pids        int64 `json:",omitempty"` // maximum number of processes (API 1.41+); 0: unlimited
}

// Reserved is what the scheduler sets aside on a node for a task.
type Reserved struct {
	NanoCPUs    int64 `json:",omitempty"`
	MemoryBytes int64 `json:",omitempty"`
}

// Restart conditions of a RestartPolicy.
const (
	RestartNone      = "none"       // a task that ends stays ended: choird decides what happens next
	RestartOnFailure = "on-failure" // a new task when one exits non-zero
	RestartAny       = "any"        // the default: a new task whenever one ends
)

// RestartPolicy says whether Swarm replaces a task that ended.
type RestartPolicy struct {
	Condition   string         `json:",omitempty"` // RestartNone, RestartOnFailure or RestartAny
	Delay       *time.Duration `json:",omitempty"`
	MaxAttempts *uint64        `json:",omitempty"`
	Window      *time.Duration `json:",omitempty"`
}

// Placement restricts the nodes a task may run on.
type Placement struct {
	// Constraints must all hold, e.g. "node.labels.choir.node==worker",
	// "node.role==worker", "node.id==<id>".
	Constraints []string `json:",omitempty"`
}

// NetworkAttachmentConfig attaches the task to a network: a swarm-scoped
// network (overlay) by name or id, or "host" for the node's own network
// stack (the engine takes the name; the docker CLI sends the id).
type NetworkAttachmentConfig struct {
	Target  string
	Aliases []string `json:",omitempty"`
}

// LogDriver chooses a task's log driver; nil: the cluster's default.
type LogDriver struct {
	Name    string
	Options map[string]string `json:",omitempty"`
}
