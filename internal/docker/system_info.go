package docker

import "context"

// Info is part of the engine's answer to GET /info: what an operator needs
// to judge the engine (choir's doctor reports it).
type Info struct {
	ServerVersion   string // Docker release, e.g. "20.10.24+dfsg1"
	Driver          string // storage driver, e.g. "overlay2"
	DockerRootDir   string // the engine's data root, e.g. "/var/lib/docker"
	OperatingSystem string
	Containers      int
	Images          int
	Swarm           SwarmInfo // this engine's place in a swarm, if any
}

// SwarmInfo is the Swarm part of GET /info: every engine answers it, a
// worker too, so it is how a node learns its own id.
type SwarmInfo struct {
	NodeID           string // "" when the engine is in no swarm
	NodeAddr         string
	LocalNodeState   string // "inactive", "pending", "active", "error", "locked"
	ControlAvailable bool   // true on a manager
	Error            string
}

// Info asks the engine about itself (GET /info).
func (c *Client) Info(ctx context.Context) (Info, error) {
	var info Info
	err := c.do(ctx, request{method: "GET", path: "/info"}, &info)
	return info, err
}
