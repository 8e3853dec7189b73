package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"choir/internal/config"
	"choir/internal/ctl"
	"choir/testkit/hostbench"
)

// sim holds what the simulator started, so teardown removes exactly that.
type sim struct {
	options
	*hostbench.Host
	force <-chan struct{}

	eng     *engine
	engSrv  *http.Server
	tg      *hostbench.Telegram
	admin   *ctl.Client
	rec     *recorder
	cnt     agentCounters
	started int // agents started so far (sim-1 … sim-started)
}

// fleet is the agents sim-1 … sim-N, the heartbeat left at its default.
var fleet = hostbench.Fleet{Prefix: "sim", Name: "sim"}

func agentID(i int) string { return fleet.AgentID(i) }

// gateway picks a loopback address of its own (127.x.y.z) for the fake
// bridge's gateway, on which choird's HTTP transport then listens at its
// default port 9400: other tests on 127.0.0.1:9400 are not disturbed.
func gateway() (string, error) {
	for range 20 {
		ip := fmt.Sprintf("127.%d.%d.%d", 1+rand.IntN(250), 1+rand.IntN(250), 2+rand.IntN(250))
		l, err := net.Listen("tcp", net.JoinHostPort(ip, "9400"))
		if err == nil {
			l.Close()
			return ip, nil
		}
	}
	return "", fmt.Errorf("no free 127.x.y.z:9400 for choird's agent endpoint")
}

// servers starts the fake engine on a unix socket and the fake Telegram
// on loopback.
func (s *sim) servers() error {
	gw, err := gateway()
	if err != nil {
		return err
	}
	s.eng = newEngine(gw, "sim-1")
	b := behaviour{turnRate: s.turnRate, version: "sim-1"}
	s.eng.newAgent = func(c *container) {
		go func() { c.exit(runAgent(c, s.rec, &s.cnt, b)) }()
	}
	// Its own directory: choird refuses workspaces beside the engine's
	// socket.
	if err := os.Mkdir(filepath.Join(s.Work, "engine"), 0o700); err != nil {
		return err
	}
	sock := s.engineSocket()
	l, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("the fake engine's socket: %w", err)
	}
	s.engSrv = &http.Server{Handler: s.eng}
	go s.engSrv.Serve(l)
	if s.tg, err = hostbench.ServeTelegram(); err != nil {
		return err
	}
	s.Say("fake engine unix://%s (bridge gateway %s), fake Telegram %s", sock, gw, s.tg.Addr)
	return nil
}

func (s *sim) engineSocket() string { return filepath.Join(s.Work, "engine", "docker.sock") }

// configure makes the home with agents sim-1 … sim-N (the demo model's
// endpoint is never called: the agents are the simulator's own).
func (s *sim) configure(ctx context.Context) error {
	f := fleet
	f.N, f.PoolSize, f.Model, f.Telegram = s.ns[len(s.ns)-1], s.pool, "http://"+s.tg.Addr+"/v1", s.tg.Addr
	return s.Configure(ctx, f)
}

// startChoird runs choird with --transport=http against the fake engine
// until teardown, and waits for its admin API.
func (s *sim) startChoird(ctx context.Context) error {
	s.admin = ctl.NewClient(config.Home{Dir: s.Home}.AdminSocket())
	ready := func(ctx context.Context) error { _, err := s.admin.Status(ctx); return err }
	t0 := time.Now()
	if err := s.StartChoird(ctx, []string{"--transport=http"}, []string{"DOCKER_HOST=unix://" + s.engineSocket()}, 10*time.Minute, ready); err != nil {
		return err
	}
	s.Say("choird is ready in %v (pid %d, log %s)", time.Since(t0).Round(time.Millisecond), s.ChoirdPID(), filepath.Join(s.Home, "logs", "choird.log"))
	return nil
}

// teardown stops choird (which stops its agents: the fake engine ends
// them), then the servers, PGlite and the scratch directory. Every step
// runs even when an earlier one failed.
func (s *sim) teardown() {
	if s.Work == "" {
		return
	}
	if s.ChoirdRunning() {
		s.Say("stopping choird and its %d agent(s)", s.cnt.running.Load())
		s.StopChoird(s.force, 3*time.Minute)
	}
	if s.eng != nil {
		s.eng.mu.Lock()
		for _, c := range s.eng.containers {
			c.askKill()
		}
		s.eng.mu.Unlock()
		s.engSrv.Close()
	}
	if s.tg != nil {
		s.tg.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	s.StopPostgres(ctx)
	cancel()
	s.RemoveWork()
	s.Say("stopped; everything the simulator started is gone")
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
