package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"choir/internal/docker"
	"choir/testkit/dockertest"
	"choir/testkit/hostbench"
	"choir/testkit/imagetest"
)

// bench holds what the benchmark started, so teardown removes exactly that.
type bench struct {
	options
	*hostbench.Host                 // Work: engine, database, repos, workspaces, home
	force           <-chan struct{} // closed by a second signal

	engineDir string // set when the benchmark started its own engine
	dc        *docker.Client
	model     *timedModel
	modelSrv  *http.Server
	tg        *hostbench.Telegram
	modelAddr string // host:port on the Docker bridge
	baseImage string // the base image choird built for these agents

	mu       sync.Mutex
	agents   []*agentProc // started, in order
	built    []string     // agent ids built
	baseline baseline
	memDrop  int64 // MemAvailable lost across the starts of all stages so far
}

// baseline is choird before the first agent.
type baseline struct{ choirdRSS int64 }

// fleet is the agents sc-1 … sc-N.
var fleet = hostbench.Fleet{Prefix: "sc", Name: "scale", PoolSize: 1}

func agentID(i int) string { return fleet.AgentID(i) }

// Per agent on the host the issue measured about 7 MiB (MemAvailable);
// the preflight asks for twice that, plus room for PGlite, choird and the
// builds.
const (
	needPerAgent = 14 << 20
	needFixed    = 2 << 30
)

// preflight refuses clearly when the machine lacks what the benchmark needs.
func (b *bench) preflight() error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("this benchmark reads /proc and cgroups: it runs on Linux only (this is %s)", runtime.GOOS)
	}
	if _, err := os.Stat("/proc/self/smaps_rollup"); err != nil {
		return fmt.Errorf("no /proc/self/smaps_rollup (kernel 4.14 or later is needed to count PSS): %v", err)
	}
	for _, bin := range []string{"choird", "choirctl", "choir-agent"} {
		if _, err := os.Stat(filepath.Join(b.Bin, bin)); err != nil {
			return fmt.Errorf("%s is missing: run make build first (make bench-scale does)", filepath.Join(b.Bin, bin))
		}
	}
	if _, err := exec.LookPath("git"); err != nil {
		return fmt.Errorf("git is not on PATH: choird builds agents from git repos (apt-get install -y git)")
	}
	if b.DBURL == "" {
		if _, err := exec.LookPath("node"); err != nil {
			return fmt.Errorf("node is not on PATH: the embedded PGlite needs Node.js 20+ (or set CHOIR_DATABASE_URL to a Postgres with pgvector)")
		}
	}
	avail, err := readMemAvailable()
	if err != nil {
		return err
	}
	maxN := b.ns[len(b.ns)-1]
	if need := int64(needFixed) + int64(maxN)*needPerAgent; avail < need {
		return fmt.Errorf("N=%d needs about %d MiB of available memory (%d MiB per agent plus %d MiB for PGlite, choird and the builds); this machine has %d MiB available: ask for a smaller -n",
			maxN, need>>20, needPerAgent>>20, needFixed>>20, avail>>20)
	}
	return nil
}

// engine finds a Docker engine or starts a private one.
func (b *bench) engine(ctx context.Context) error {
	c, err := docker.New(ctx, "")
	if err != nil {
		b.Say("no Docker engine answers: starting a private one (installs docker.io the first time)")
		b.engineDir = filepath.Join(b.Work, "engine")
		out, err := b.Script(ctx, "testkit/dockertest/engine.sh", "start", b.engineDir)
		if err != nil {
			b.engineDir = ""
			return fmt.Errorf("cannot start a Docker engine (run as root, with apt-get available): %w", err)
		}
		os.Setenv(docker.HostEnv, strings.TrimPrefix(strings.TrimSpace(out), docker.HostEnv+"="))
		if c, err = docker.New(ctx, ""); err != nil {
			return err
		}
	}
	b.dc = c
	b.Say("Docker engine: %s", c.Host())
	return nil
}

// servers starts the model on the Docker bridge's gateway address (which
// containers reach; never every interface) and the fake Telegram on
// loopback (only choird talks to it).
func (b *bench) servers(ctx context.Context) error {
	ip, err := dockertest.BridgeAddr()
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return fmt.Errorf("listen on the Docker bridge %s: %w", ip, err)
	}
	b.model = &timedModel{}
	b.modelSrv = &http.Server{Handler: b.model}
	b.modelAddr = l.Addr().String()
	go b.modelSrv.Serve(l)
	b.tg, err = hostbench.ServeTelegram()
	return err
}

// debian makes the base image's FROM available with no registry.
func (b *bench) debian(ctx context.Context) error {
	b.Say("Debian base image (debootstrap the first time: a minute or two, cached after)")
	_, err := imagetest.Ensure(ctx, b.dc)
	return err
}

// configure makes the home, with agents sc-1 … sc-N on the benchmark's
// heartbeat, and has choird check it.
func (b *bench) configure(ctx context.Context) error {
	f := fleet
	f.PoolSize = b.pool
	f.N, f.Model, f.Telegram = b.ns[len(b.ns)-1], "http://"+b.modelAddr+"/v1", b.tg.Addr
	f.Set = func(cfg map[string]any) {
		cfg["heartbeat_interval_ms"] = int(b.heartbeat / time.Millisecond)
		if t := 3 * int(b.heartbeat/time.Millisecond); t > 15000 {
			cfg["crash_detection_threshold_ms"] = t
		}
	}
	if err := b.Configure(ctx, f); err != nil {
		return err
	}
	var stderr bytes.Buffer
	check := exec.CommandContext(ctx, filepath.Join(b.Bin, "choird"), "--check", "--home", b.Home)
	check.Stdout, check.Stderr = &stderr, &stderr
	if err := check.Run(); err != nil {
		return fmt.Errorf("choird --check: %v\n%s", err, hostbench.LastLines(stderr.Bytes(), 20))
	}
	return nil
}

// startChoird runs choird until teardown.
func (b *bench) startChoird(ctx context.Context) error {
	ready := func(ctx context.Context) error { return b.Ctl(ctx, nil, io.Discard, "status") }
	if err := b.StartChoird(ctx, nil, nil, 2*time.Minute, ready); err != nil {
		return err
	}
	b.Say("choird is ready (pid %d, log %s)", b.ChoirdPID(), filepath.Join(b.Home, "logs", "choird.log"))
	return nil
}
