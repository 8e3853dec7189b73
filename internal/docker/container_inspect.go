package docker

import (
	"context"
	"time"
)

// Container is the engine's description of one container (GET
// /containers/{id}/json).
type Container struct {
	ID              string `json:"Id"`
	Name            string // with a leading "/"
	Created         time.Time
	Image           string // image ID
	State           *ContainerState
	Config          *ContainerConfig
	HostConfig      *HostConfig
	Mounts          []MountPoint
	NetworkSettings *NetworkSettings
	RestartCount    int
}

// ContainerState is the run state of a container.
type ContainerState struct {
	Status     string // "created", "running", "paused", "restarting", "removing", "exited", "dead"
	Running    bool
	Paused     bool
	Restarting bool
	OOMKilled  bool
	Dead       bool
	Pid        int
	ExitCode   int
	Error      string
	StartedAt  time.Time
	FinishedAt time.Time
}

// MountPoint is a mount as the engine set it up.
type MountPoint struct {
	Type        MountType
	Name        string
	Source      string
	Destination string
	Mode        string
	RW          bool
	Propagation string
}

// NetworkSettings are a container's network addresses.
type NetworkSettings struct {
	IPAddress string
	Gateway   string
	Networks  map[string]EndpointSettings
}

// EndpointSettings is a container's place on one network.
type EndpointSettings struct {
	NetworkID string
	IPAddress string
	Gateway   string
}

// ContainerInspect describes a container by name or ID. A missing one is
// an *APIError for which IsNotFound is true.
func (c *Client) ContainerInspect(ctx context.Context, id string) (Container, error) {
	var out Container
	p, err := containerPath(id, "/json")
	if err != nil {
		return out, err
	}
	err = c.do(ctx, request{method: "GET", path: p}, &out)
	return out, err
}
