package docker

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// PingResponse is what GET /_ping tells in its headers.
type PingResponse struct {
	APIVersion   string // Api-Version header: the highest API version the engine serves
	OSType       string // Ostype header: "linux"
	Experimental bool   // Docker-Experimental header
}

// Ping checks that the engine answers (GET /_ping, which answers "OK").
func (c *Client) Ping(ctx context.Context) (PingResponse, error) {
	resp, err := c.send(ctx, request{method: "GET", path: "/_ping", unversioned: true})
	if err != nil {
		return PingResponse{}, err
	}
	defer closeBody(resp.Body)
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64))
	if err != nil {
		return PingResponse{}, fmt.Errorf("docker GET /_ping: %w", err)
	}
	if s := strings.TrimSpace(string(b)); s != "OK" {
		return PingResponse{}, fmt.Errorf("docker GET /_ping: answered %q, want OK", s)
	}
	return PingResponse{
		APIVersion:   resp.Header.Get("Api-Version"),
		OSType:       resp.Header.Get("Ostype"),
		Experimental: resp.Header.Get("Docker-Experimental") == "true",
	}, nil
}
