package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"choir/internal/config"
	"choir/internal/ctl"
	"choir/testkit"
)

// sim holds what the simulator started, so teardown removes exactly that.
type sim struct {
	options
	force <-chan struct{}

	work, home string
	pgDir      string // set when it started PGlite
	dbPID      int
	eng        *engine
	engSrv     *http.Server
	tg         *fakeTelegram
	tgSrv      *http.Server
	tgAddr     string
	choird     *exec.Cmd
	choirdDone chan error
	admin      *ctl.Client
	rec        *recorder
	cnt        agentCounters
	started    int // agents started so far (sim-1 … sim-started)
}

func (s *sim) say(format string, args ...any) {
	fmt.Fprintf(s.stderr, "== "+format+"\n", args...)
}

func agentID(i int) string { return "sim-" + strconv.Itoa(i) }

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
	if err := os.Mkdir(filepath.Join(s.work, "engine"), 0o700); err != nil {
		return err
	}
	sock := s.engineSocket()
	l, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("the fake engine's socket: %w", err)
	}
	s.engSrv = &http.Server{Handler: s.eng}
	go s.engSrv.Serve(l)
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s.tg = newFakeTelegram()
	s.tgSrv = &http.Server{Handler: s.tg}
	s.tgAddr = tl.Addr().String()
	go s.tgSrv.Serve(tl)
	s.say("fake engine unix://%s (bridge gateway %s), fake Telegram %s", sock, gw, s.tgAddr)
	return nil
}

func (s *sim) engineSocket() string { return filepath.Join(s.work, "engine", "docker.sock") }

// postgres uses CHOIR_DATABASE_URL or starts the embedded PGlite.
func (s *sim) postgres(ctx context.Context) error {
	if s.dbURL != "" {
		s.say("Postgres: CHOIR_DATABASE_URL (its server's CPU is not measured)")
		return nil
	}
	s.say("starting PGlite (Postgres 17 + pgvector)")
	s.pgDir = filepath.Join(s.work, "pg")
	out, err := s.script(ctx, "testkit/pgtest/pglite.sh", "start", s.pgDir)
	if err != nil {
		s.pgDir = ""
		return fmt.Errorf("cannot start PGlite (needs node and npm), or set CHOIR_DATABASE_URL: %w", err)
	}
	s.dbURL = strings.TrimPrefix(strings.TrimSpace(out), "CHOIR_TEST_DATABASE_URL=")
	pid, err := os.ReadFile(filepath.Join(s.pgDir, "pid"))
	if err != nil {
		return fmt.Errorf("PGlite's pid file: %w", err)
	}
	s.dbPID, _ = strconv.Atoi(strings.TrimSpace(string(pid)))
	return nil
}

// configure makes the home with choirctl init and agent init (one agent
// repo for all), then a config.json with agents sim-1 … sim-N, each with
// its own workspace, git identity and Telegram DM (leases are exclusive),
// the heartbeat left at its default.
func (s *sim) configure(ctx context.Context) error {
	maxN := s.ns[len(s.ns)-1]
	repos := filepath.Join(s.work, "repos")
	if err := s.ctl(ctx, nil, "init", "--global-repo", filepath.Join(repos, "global.git")); err != nil {
		return err
	}
	agentRepo := filepath.Join(repos, "sim.git")
	if err := s.ctl(ctx, nil, "agent", "init", agentID(1), "--repo", agentRepo); err != nil {
		return err
	}
	db, err := url.Parse(s.dbURL)
	if err != nil || db.Hostname() == "" {
		return fmt.Errorf("the database URL %q is not a postgres:// URL", s.dbURL)
	}
	port, _ := strconv.Atoi(db.Port())
	if port == 0 {
		port = 5432
	}
	sslmode := db.Query().Get("sslmode")
	if sslmode == "" {
		sslmode = "prefer"
	}
	user := db.User.Username()
	if user == "" {
		user = "postgres"
	}
	password, _ := db.User.Password()
	dbName := strings.TrimPrefix(db.Path, "/")
	if dbName == "" {
		dbName = "postgres"
	}
	path := config.Home{Dir: s.home}.ConfigPath()
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	cfg["postgres"] = map[string]any{"host": db.Hostname(), "port": port, "database": dbName, "sslmode": sslmode, "pool_size": s.pool, "secret": "postgres"}
	cfg["models"] = map[string]any{"m": map[string]any{"provider": "demo", "model": "choir-demo", "endpoint": "http://" + s.tgAddr + "/v1"}}
	cfg["gateways"] = map[string]any{"bot": map[string]any{"type": "telegram", "secret": "tg", "api_base": "http://" + s.tgAddr}}
	workspaces, idents, dms, agents := map[string]any{}, map[string]any{}, map[string]any{}, map[string]any{}
	for i := 1; i <= maxN; i++ {
		id := agentID(i)
		ws := filepath.Join(s.work, "ws", strconv.Itoa(i))
		if err := testkit.MakeWorkspace(ws); err != nil {
			return err
		}
		workspaces["ws-"+id] = map[string]any{"path": ws}
		idents["git-"+id] = map[string]any{"name": "Sim " + id, "email": id + "@choir.local", "secret": "git-token"}
		dms["dm-"+id] = map[string]any{"gateway": "bot", "user_id": strconv.Itoa(700000 + i), "admin": i == 1}
		agents[id] = map[string]any{"repo": map[string]any{"url": agentRepo, "ref": "main"},
			"defaults": map[string]any{"workspace": "ws-" + id, "llm": "m", "git_identity": "git-" + id, "dm": "dm-" + id}}
	}
	cfg["workspaces"], cfg["git_identities"], cfg["dms"], cfg["agents"] = workspaces, idents, dms, agents
	// Indented, as a person writes it: 10,000 agents take 5.6 MiB, within
	// config.json's 16 MiB limit.
	out, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return err
	}
	secrets := map[string]string{"postgres": user + ":" + password, "git-token": "sim-git-token-unused", "tg": "7001:sim-bench-Token"}
	for name, value := range secrets {
		if err := s.ctl(ctx, strings.NewReader(value), "secret", "set", name); err != nil {
			return err
		}
	}
	return nil
}

// startChoird runs choird with --transport=http against the fake engine,
// in its own process group, until teardown, and waits for its admin API.
func (s *sim) startChoird(ctx context.Context) error {
	logf, err := os.Create(filepath.Join(s.work, "choird.stderr"))
	if err != nil {
		return err
	}
	s.choird = exec.Command(filepath.Join(s.bin, "choird"), "--home", s.home, "--transport=http")
	s.choird.Env = append(os.Environ(), "DOCKER_HOST=unix://"+s.engineSocket())
	s.choird.Stderr = logf
	s.choird.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	t0 := time.Now()
	if err := s.choird.Start(); err != nil {
		logf.Close()
		return err
	}
	s.choirdDone = make(chan error, 1)
	go func() { s.choirdDone <- s.choird.Wait(); logf.Close() }()
	s.admin = ctl.NewClient(config.Home{Dir: s.home}.AdminSocket())
	deadline := time.Now().Add(10 * time.Minute)
	for {
		if _, err := s.admin.Status(ctx); err == nil {
			s.say("choird is ready in %v (pid %d, log %s)", time.Since(t0).Round(time.Millisecond), s.choird.Process.Pid, filepath.Join(s.home, "logs", "choird.log"))
			return nil
		}
		if err := s.choirdExited(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("choird did not answer within 10 minutes")
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// choirdExited returns an error with the end of its output once choird
// has exited.
func (s *sim) choirdExited() error {
	select {
	case err := <-s.choirdDone:
		s.choirdDone <- err
		tail, _ := os.ReadFile(filepath.Join(s.work, "choird.stderr"))
		return fmt.Errorf("choird exited: %v\n%s", err, lastLines(tail, 15))
	default:
		return nil
	}
}

// ctl runs choirctl against the simulator's home (set-up only).
func (s *sim) ctl(ctx context.Context, stdin io.Reader, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, "choirctl"), append([]string{"--home", s.home}, args...)...)
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("choirctl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// script runs one of the project's scripts in its own process group and
// returns its stdout.
func (s *sim) script(ctx context.Context, script string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(s.repo, script), args...)
	cmd.Stderr = s.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.Output()
	return string(out), err
}

// teardown stops choird (which stops its agents: the fake engine ends
// them), then the servers, PGlite and the scratch directory. Every step
// runs even when an earlier one failed.
func (s *sim) teardown() {
	if s.work == "" {
		return
	}
	if s.choird != nil && s.choirdDone != nil {
		s.say("stopping choird and its %d agent(s)", s.cnt.running.Load())
		s.choird.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.choirdDone:
		case <-s.force:
			s.choird.Process.Kill()
			<-s.choirdDone
		case <-time.After(3 * time.Minute):
			fmt.Fprintln(s.stderr, "sim: choird did not stop within 3 minutes: killing it")
			s.choird.Process.Kill()
			<-s.choirdDone
		}
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
		s.tg.close()
		s.tgSrv.Close()
	}
	if s.pgDir != "" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		s.script(ctx, "testkit/pgtest/pglite.sh", "stop", s.pgDir)
		cancel()
	}
	if err := os.RemoveAll(s.work); err != nil {
		fmt.Fprintf(s.stderr, "sim: remove %s: %v\n", s.work, err)
	}
	s.say("stopped; everything the simulator started is gone")
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
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
