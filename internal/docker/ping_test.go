package docker_test

import (
	"testing"

	"choir/internal/docker"
	"choir/testkit/dockertest"
)

func TestPingAndVersion(t *testing.T) {
	c := dockertest.Engine(t)
	ctx := testCtx(t)
	p, err := c.Ping(ctx)
	if err != nil {
		t.Fatalf("Ping = %v", err)
	}
	if p.APIVersion == "" || p.OSType != "linux" {
		t.Errorf("Ping = %+v; want an API version and OSType linux", p)
	}
	if v := c.APIVersion(); v != docker.MaxAPIVersion {
		t.Errorf("APIVersion() = %q; want %q (engine says %q)", v, docker.MaxAPIVersion, p.APIVersion)
	}
	v, err := c.ServerVersion(ctx)
	if err != nil {
		t.Fatalf("ServerVersion = %v", err)
	}
	if v.APIVersion != p.APIVersion || v.Version == "" || v.Os != "linux" {
		t.Errorf("ServerVersion = %+v; want API %s on linux", v, p.APIVersion)
	}
	// A second client negotiates the same way.
	c2, err := docker.New(ctx, c.Host())
	if err != nil {
		t.Fatalf("New(%q) = %v", c.Host(), err)
	}
	defer c2.Close()
	if c2.APIVersion() != c.APIVersion() || c2.Engine().Version != v.Version {
		t.Errorf("second client: API %s, engine %s; want %s, %s", c2.APIVersion(), c2.Engine().Version, c.APIVersion(), v.Version)
	}
}
