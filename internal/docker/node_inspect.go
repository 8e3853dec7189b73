package docker

import (
	"context"
	"time"
)

// Node is one member of a swarm (GET /nodes/{id}).
type Node struct {
	ID            string
	Version       ObjectVersion // send Version.Index back with NodeUpdate
	CreatedAt     time.Time
	UpdatedAt     time.Time
	Spec          NodeSpec
	Description   NodeDescription
	Status        NodeStatus
	ManagerStatus *ManagerStatus // nil on a worker
}

// NodeSpec is what an operator sets on a node. NodeUpdate replaces all of
// it: change a field of the Spec a NodeInspect returned, not a new one.
type NodeSpec struct {
	Name         string            `json:",omitempty"`
	Labels       map[string]string // choir places agents by the label choir.node
	Role         string            `json:",omitempty"` // "worker" or "manager"
	Availability string            `json:",omitempty"` // "active", "pause" or "drain"
}

// NodeDescription is what the node reports about itself.
type NodeDescription struct {
	Hostname string
	Platform struct {
		Architecture string
		OS           string
	}
	Resources struct {
		NanoCPUs    int64
		MemoryBytes int64
	}
	Engine struct {
		EngineVersion string
		Labels        map[string]string
	}
}

// NodeStatus is the node's state as the managers see it.
type NodeStatus struct {
	State   string // "unknown", "down", "ready" or "disconnected"
	Message string
	Addr    string // the address the managers see; on one machine every node may show 127.0.0.1
}

// ManagerStatus is a manager's place in the Raft group.
type ManagerStatus struct {
	Leader       bool
	Reachability string // "unknown", "unreachable" or "reachable"
	Addr         string
}

// NodeInspect describes one node, by id or name. It must be asked of a
// manager; a missing node is an *APIError for which IsNotFound is true.
func (c *Client) NodeInspect(ctx context.Context, id string) (Node, error) {
	var n Node
	p, err := objectPath("nodes", id, "")
	if err != nil {
		return n, err
	}
	err = c.do(ctx, request{method: "GET", path: p}, &n)
	return n, err
}
