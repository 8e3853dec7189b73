package lifecycle

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"choir/internal/config"
	"choir/internal/docker"
	"choir/testkit/dockertest"
)

// On a real engine, a container made offline (Offline over the §15.3
// profile) counts each direct attempt to reach the network in its own
// namespace, and choird reads the counts from the host: a TCP connect to
// an IPv4 address, to an IPv6 one (counted only because Offline enables
// IPv6 on the loopback) and to an IPv4-mapped one.
func TestNetworkAttemptsOnARealEngine(t *testing.T) {
	dc := dockertest.Engine(t)
	img := dockertest.BusyboxImage(t, dc, "choir-test/busybox:1")
	ctx := context.Background()
	s := Spec{AgentID: "eg-engine", SessionID: "s-1", LeaseToken: "t", Instance: "egress-engine-test", Image: img,
		WorkspacePath: t.TempDir(), SocketDir: t.TempDir(), HeartbeatMS: 1000, Limits: config.DefaultTunables().Container}
	cfg, hc := Profile(s)
	Offline(hc)
	if err := Verify(cfg, hc, s); err != nil {
		t.Fatal(err)
	}
	cfg.Entrypoint, cfg.Cmd = []string{"sh", "-c", "sleep 1; nc -w 1 192.0.2.7 80; nc -w 1 2001:db8::7 80; nc -w 1 ::ffff:192.0.2.7 80; sleep 120"}, nil
	name := "choir-eg-engine-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	created, err := dc.ContainerCreate(ctx, name, cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	defer dc.ContainerRemove(context.Background(), created.ID, docker.ContainerRemoveOptions{Force: true})
	if err := dc.ContainerStart(ctx, created.ID); err != nil {
		t.Fatal(err)
	}
	m := &Manager{Docker: dc, Logs: stubLogs{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	r := &Run{AgentID: s.AgentID, SessionID: s.SessionID, ContainerID: created.ID, Offline: true}
	m.findNetns(ctx, r)
	if _, why := r.NetAttempts(); why != "" {
		t.Fatalf("the container's counters cannot be read: %s", why)
	}
	waitUntil(t, "three attempts counted", func() bool { return m.readNet(r) >= 3 })
	if n := m.readNet(r); n != 3 {
		t.Errorf("attempts counted = %d; want 3 (IPv4, IPv6, IPv4-mapped)", n)
	}
}
