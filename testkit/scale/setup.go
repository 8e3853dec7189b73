package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"choir/internal/docker"
	"choir/testkit"
	"choir/testkit/dockertest"
	"choir/testkit/imagetest"
)

// bench holds what the benchmark started, so teardown removes exactly that.
type bench struct {
	options
	force <-chan struct{} // closed by a second signal

	work       string // scratch directory: engine, database, repos, workspaces, home
	home       string
	engineDir  string // set when the benchmark started its own engine
	pgDir      string // set when it started PGlite
	dbPID      int    // the database server's pid, 0 when not ours
	dc         *docker.Client
	model      *timedModel
	modelSrv   *http.Server
	tg         *fakeTelegram
	tgSrv      *http.Server
	modelAddr  string // host:port on the Docker bridge
	tgAddr     string // host:port on loopback
	choird     *exec.Cmd
	choirdDone chan error
	baseImage  string // the base image choird built for these agents

	mu       sync.Mutex
	agents   []*agentProc // started, in order
	built    []string     // agent ids built
	baseline baseline
	memDrop  int64 // MemAvailable lost across the starts of all stages so far
}

// baseline is choird before the first agent.
type baseline struct{ choirdRSS int64 }

func (b *bench) say(format string, args ...any) {
	fmt.Fprintf(b.stderr, "== "+format+"\n", args...)
}

func agentID(i int) string { return "sc-" + strconv.Itoa(i) }

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
		if _, err := os.Stat(filepath.Join(b.bin, bin)); err != nil {
			return fmt.Errorf("%s is missing: run make build first (make bench-scale does)", filepath.Join(b.bin, bin))
		}
	}
	if _, err := exec.LookPath("git"); err != nil {
		return fmt.Errorf("git is not on PATH: choird builds agents from git repos (apt-get install -y git)")
	}
	if b.dbURL == "" {
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
		b.say("no Docker engine answers: starting a private one (installs docker.io the first time)")
		b.engineDir = filepath.Join(b.work, "engine")
		out, err := b.script(ctx, "testkit/dockertest/engine.sh", "start", b.engineDir)
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
	b.say("Docker engine: %s", c.Host())
	return nil
}

// postgres uses CHOIR_DATABASE_URL or starts the embedded PGlite.
func (b *bench) postgres(ctx context.Context) error {
	if b.dbURL != "" {
		b.say("Postgres: CHOIR_DATABASE_URL (its server's CPU is not measured)")
		return nil
	}
	b.say("starting PGlite (Postgres 17 + pgvector)")
	b.pgDir = filepath.Join(b.work, "pg")
	out, err := b.script(ctx, "testkit/pgtest/pglite.sh", "start", b.pgDir)
	if err != nil {
		b.pgDir = ""
		return fmt.Errorf("cannot start PGlite (needs node and npm): %w", err)
	}
	b.dbURL = strings.TrimPrefix(strings.TrimSpace(out), "CHOIR_TEST_DATABASE_URL=")
	pid, err := os.ReadFile(filepath.Join(b.pgDir, "pid"))
	if err != nil {
		return fmt.Errorf("PGlite's pid file: %w", err)
	}
	b.dbPID, _ = strconv.Atoi(strings.TrimSpace(string(pid)))
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
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	b.tg = newFakeTelegram()
	b.tgSrv = &http.Server{Handler: b.tg}
	b.tgAddr = tl.Addr().String()
	go b.tgSrv.Serve(tl)
	return nil
}

// debian makes the base image's FROM available with no registry.
func (b *bench) debian(ctx context.Context) error {
	b.say("Debian base image (debootstrap the first time: a minute or two, cached after)")
	_, err := imagetest.Ensure(ctx, b.dc)
	return err
}

// configure makes the home with choirctl init and agent init (one agent
// repo shared by all agents), and a config.json with agents sc-1 … sc-N,
// each with its own workspace, git identity and Telegram DM.
func (b *bench) configure(ctx context.Context) error {
	maxN := b.ns[len(b.ns)-1]
	repos := filepath.Join(b.work, "repos")
	global, agentRepo := filepath.Join(repos, "global.git"), filepath.Join(repos, "sc.git")
	if err := b.ctl(ctx, nil, io.Discard, "init", "--global-repo", global); err != nil {
		return err
	}
	if err := b.ctl(ctx, nil, io.Discard, "agent", "init", agentID(1), "--repo", agentRepo); err != nil {
		return err
	}
	db, err := url.Parse(b.dbURL)
	if err != nil || db.Hostname() == "" {
		return fmt.Errorf("the database URL %q is not a postgres:// URL", b.dbURL)
	}
	port, _ := strconv.Atoi(db.Port())
	if port == 0 {
		port = 5432
	}
	sslmode := db.Query().Get("sslmode")
	if sslmode == "" {
		sslmode = "prefer"
	}
	password, _ := db.User.Password()
	user := db.User.Username()
	if user == "" {
		user = "postgres"
	}
	dbName := strings.TrimPrefix(db.Path, "/")
	if dbName == "" {
		dbName = "postgres"
	}
	path := filepath.Join(b.home, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	cfg["postgres"] = map[string]any{"host": db.Hostname(), "port": port, "database": dbName, "sslmode": sslmode, "pool_size": 1, "secret": "postgres"}
	cfg["heartbeat_interval_ms"] = int(b.heartbeat / time.Millisecond)
	if t := 3 * int(b.heartbeat/time.Millisecond); t > 15000 {
		cfg["crash_detection_threshold_ms"] = t
	}
	cfg["models"] = map[string]any{"m": map[string]any{"provider": "demo", "model": "choir-demo", "endpoint": "http://" + b.modelAddr + "/v1"}}
	cfg["gateways"] = map[string]any{"bot": map[string]any{"type": "telegram", "secret": "tg", "api_base": "http://" + b.tgAddr}}
	workspaces, idents, dms, agents := map[string]any{}, map[string]any{}, map[string]any{}, map[string]any{}
	for i := 1; i <= maxN; i++ {
		id := agentID(i)
		ws := filepath.Join(b.work, "ws", strconv.Itoa(i))
		if err := testkit.MakeWorkspace(ws); err != nil {
			return err
		}
		workspaces["ws-"+id] = map[string]any{"path": ws}
		idents["git-"+id] = map[string]any{"name": "Scale " + id, "email": id + "@choir.local", "secret": "git-token"}
		dms["dm-"+id] = map[string]any{"gateway": "bot", "user_id": strconv.Itoa(700000 + i), "admin": i == 1}
		agents[id] = map[string]any{"repo": map[string]any{"url": agentRepo, "ref": "main"},
			"defaults": map[string]any{"workspace": "ws-" + id, "llm": "m", "git_identity": "git-" + id, "dm": "dm-" + id}}
	}
	cfg["workspaces"], cfg["git_identities"], cfg["dms"], cfg["agents"] = workspaces, idents, dms, agents
	out, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return err
	}
	secrets := map[string]string{"postgres": user + ":" + password, "git-token": "scale-git-token-unused", "tg": "7001:scale-bench-Token"}
	for name, value := range secrets {
		if err := b.ctl(ctx, strings.NewReader(value), io.Discard, "secret", "set", name); err != nil {
			return err
		}
	}
	var stderr bytes.Buffer
	check := exec.CommandContext(ctx, filepath.Join(b.bin, "choird"), "--check", "--home", b.home)
	check.Stdout, check.Stderr = &stderr, &stderr
	if err := check.Run(); err != nil {
		return fmt.Errorf("choird --check: %v\n%s", err, lastLines(stderr.Bytes(), 20))
	}
	return nil
}

// startChoird runs choird in its own process group (a Ctrl-C at the
// terminal reaches the benchmark, which stops choird in order) until
// teardown.
func (b *bench) startChoird(ctx context.Context) error {
	logf, err := os.Create(filepath.Join(b.work, "choird.stderr"))
	if err != nil {
		return err
	}
	b.choird = exec.Command(filepath.Join(b.bin, "choird"), "--home", b.home)
	b.choird.Stderr = logf
	b.choird.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := b.choird.Start(); err != nil {
		logf.Close()
		return err
	}
	b.choirdDone = make(chan error, 1)
	go func() { b.choirdDone <- b.choird.Wait(); logf.Close() }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if err := b.ctl(ctx, nil, io.Discard, "status"); err == nil {
			b.say("choird is ready (pid %d, log %s)", b.choird.Process.Pid, filepath.Join(b.home, "logs", "choird.log"))
			return nil
		}
		if err := b.choirdExited(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("choird did not answer within 2 minutes")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// choirdExited returns an error with the end of its output when choird
// has exited.
func (b *bench) choirdExited() error {
	select {
	case err := <-b.choirdDone:
		b.choirdDone <- err
		tail, _ := os.ReadFile(filepath.Join(b.work, "choird.stderr"))
		return fmt.Errorf("choird exited: %v\n%s", err, lastLines(tail, 15))
	default:
		return nil
	}
}

// ctl runs choirctl against the benchmark's home.
func (b *bench) ctl(ctx context.Context, stdin io.Reader, stdout io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(b.bin, "choirctl"), append([]string{"--home", b.home}, args...)...)
	cmd.Stdin, cmd.Stdout = stdin, stdout
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return fmt.Errorf("choirctl %s: %w: %s", strings.Join(args, " "), err, msg)
		}
		return fmt.Errorf("choirctl %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// script runs one of the project's scripts, in its own process group, and
// returns its stdout.
func (b *bench) script(ctx context.Context, script string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(b.repo, script), args...)
	cmd.Stderr = b.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.Output()
	return string(out), err
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
