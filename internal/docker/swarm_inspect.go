package docker

import (
	"context"
	"time"
)

// ObjectVersion is a Swarm object's version index. An update must send
// the index it read (NodeUpdate's version); the manager refuses a stale one,
// so two writers cannot overwrite each other unseen.
type ObjectVersion struct {
	Index uint64
}

// Swarm is the cluster as its manager describes it (GET /swarm).
type Swarm struct {
	ID              string
	Version         ObjectVersion
	CreatedAt       time.Time
	UpdatedAt       time.Time
	JoinTokens      JoinTokens
	DefaultAddrPool []string // address pools of overlay networks, e.g. "10.0.0.0/8"
	SubnetSize      uint32
	DataPathPort    uint32
}

// JoinTokens are the secrets a node presents to join the swarm.
type JoinTokens struct {
	Worker  string
	Manager string
}

// SwarmInspect describes the swarm this engine manages. An engine that is
// not a manager of a swarm answers 503 (IsUnavailable).
func (c *Client) SwarmInspect(ctx context.Context) (Swarm, error) {
	var s Swarm
	err := c.do(ctx, request{method: "GET", path: "/swarm"}, &s)
	return s, err
}
