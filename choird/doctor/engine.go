package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	"choir/internal/docker"
)

// Free space thresholds of the engine's data root: below diskWarn a build
// or a few agents' logs may fill it, below diskFail they will.
const (
	diskWarn = 5 << 30
	diskFail = 1 << 30
)

// checkEngine connects to the Docker engine as choird does and reports its
// version, API version and storage driver.
func (d *Doctor) checkEngine(ctx context.Context) Result {
	host := d.DockerHost
	if host == "" {
		host = docker.HostFromEnv()
	}
	c, err := docker.New(ctx, host)
	if err != nil {
		return bad(Fail, engineFix(host, err), "%v", err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		c.Close()
		return bad(Fail, "check dockerd's log (journalctl -u docker)", "the engine at %s answers its version but not GET /info: %v", host, err)
	}
	if !d.setEngine(ctx, c) {
		c.Close()
	}
	v := c.Engine()
	detail := fmt.Sprintf("Docker %s at %s, API %s (choir speaks %s), storage driver %s, data root %s",
		v.Version, host, v.APIVersion, c.APIVersion(), info.Driver, info.DockerRootDir)
	if info.Driver == "vfs" {
		return bad(Warn, "run dockerd with --storage-driver=overlay2 (vfs copies every layer: builds and starts are slow and use much more disk)", "%s", detail)
	}
	return ok("%s", detail)
}

// setEngine keeps the engine for later checks; false when the check was
// cut off meanwhile (the caller closes the client).
func (d *Doctor) setEngine(ctx context.Context, c *docker.Client) bool {
	kept := false
	d.set(ctx, func() { d.engine, kept = c, true })
	return kept
}

// engineFix says what to do about an engine that did not answer.
func engineFix(host string, err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), "no such file"):
		return fmt.Sprintf("nothing listens at %s: start dockerd (systemctl start docker), or set DOCKER_HOST to the engine's socket", host)
	case errors.Is(err, fs.ErrPermission) || strings.Contains(err.Error(), "permission denied"):
		return "choird's user may not use the engine's socket: add it to the docker group (root-equivalent: see DESIGN.md's threat model), or set DOCKER_HOST"
	case strings.Contains(err.Error(), "connection refused"):
		return fmt.Sprintf("nothing accepts connections at %s: start dockerd, or set DOCKER_HOST", host)
	}
	return "start dockerd, or set DOCKER_HOST to the engine's address (unix:///path or tcp://host:port)"
}

// checkDisk reports the free space of the engine's data root, when the
// engine runs on this host (a unix socket).
func (d *Doctor) checkDisk(ctx context.Context) Result {
	c := d.getEngine()
	if c == nil {
		return skip("the Docker engine did not answer")
	}
	if !strings.HasPrefix(c.Host(), "unix://") {
		return skip("the engine at %s is not on this host: check its disk there", c.Host())
	}
	info, err := c.Info(ctx)
	if err != nil {
		return bad(Fail, "check dockerd's log", "GET /info: %v", err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(info.DockerRootDir, &st); err != nil {
		return bad(Warn, "run the doctor as a user who may read the engine's data root, or check it with df", "free space of %s: %v", info.DockerRootDir, err)
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	all := int64(st.Blocks) * int64(st.Bsize)
	detail := fmt.Sprintf("%s free of %s on the filesystem of %s", size(free), size(all), info.DockerRootDir)
	fix := "remove unused images (docker image prune) and containers, or give the data root more room"
	switch {
	case free < diskFail:
		return bad(Fail, fix, "%s: builds and agents' writes will fail", detail)
	case free < diskWarn:
		return bad(Warn, fix, "%s: little room for builds", detail)
	}
	return ok("%s", detail)
}
