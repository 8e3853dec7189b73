package docker

import (
	"context"
	"fmt"
	"strings"
)

// Network is part of the engine's answer to GET /networks/{id}.
type Network struct {
	Name   string
	ID     string `json:"Id"`
	Driver string
	// Options holds the driver's settings; a bridge names its host
	// interface in "com.docker.network.bridge.name".
	Options map[string]string
	IPAM    struct {
		Config []struct {
			Subnet  string
			Gateway string
		}
	}
}

// NetworkInspect describes the network called name or with that ID ("bridge"
// is the engine's default network). A missing network is an *APIError for
// which IsNotFound is true.
func (c *Client) NetworkInspect(ctx context.Context, name string) (Network, error) {
	var n Network
	if name == "" || strings.ContainsAny(name, "/?#") {
		return n, fmt.Errorf("docker: invalid network name or ID %q", name)
	}
	err := c.do(ctx, request{method: "GET", path: "/networks/" + name}, &n)
	return n, err
}
