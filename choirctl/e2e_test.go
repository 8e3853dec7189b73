package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"choir/choird/store"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/testkit"
	"choir/testkit/dockertest"
	"choir/testkit/pgnative"
	"choir/testkit/pgtest"
)

func TestMain(m *testing.M) {
	defer testkit.CleanupBuilds()
	defer pgtest.Stop()
	defer pgnative.Stop() // e2e_replica_test.go
	dockertest.Main(m)
}

// backends points a home's config.json at a test Postgres (in a namespace
// of its own) and returns the environment choird needs to reach the test
// Docker engine.
func backends(t testing.TB, home string) []string {
	t.Helper()
	dc := dockertest.Engine(t)
	postgresBackend(t, home)
	return []string{"DOCKER_HOST=" + dc.Host()}
}

// postgresBackend points a home's config.json at a test Postgres, in a
// namespace of its own that is dropped when the test ends.
func postgresBackend(t testing.TB, home string) {
	t.Helper()
	db := pgtest.DB(t)
	u, err := url.Parse(db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	path := filepath.Join(home, "config.json")
	data, _ := os.ReadFile(path)
	var cfg map[string]any
	json.Unmarshal(data, &cfg)
	cfg["postgres"] = map[string]any{
		"host": u.Hostname(), "port": port, "database": strings.TrimPrefix(u.Path, "/"), "sslmode": "disable",
		"pool_size": 1, "namespace": db.Namespace, "secret": "postgres",
	}
	out, _ := json.MarshalIndent(cfg, "", "  ")
	os.WriteFile(path, out, 0o644)
	password, _ := u.User.Password()
	if _, stderr, code := ctlRun(t, home, "", "secret", "set", "postgres", u.User.Username()+":"+password+"-"+pgSecret); code != 0 {
		t.Fatalf("secret set postgres = %d %s", code, stderr)
	}
	t.Cleanup(func() { dropNamespace(t, db) })
}

// Distinctive secret values: none may ever appear in a log or an output.
const (
	pgSecret  = "choir:pg-pass-Q7xK2"
	apiSecret = "sk-api-key-Z9wP4"
)

// ctlRun runs choirctl in-process against home.
func ctlRun(t testing.TB, home, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = realMain(context.Background(), append([]string{"--home", home}, args...), strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

type daemon struct {
	cmd    *exec.Cmd
	stderr *testkit.Buffer
	done   chan error
}

func startChoird(t testing.TB, home string, env []string, args ...string) *daemon {
	t.Helper()
	bin := testkit.Build(t, "choir/choird")
	d := &daemon{stderr: &testkit.Buffer{}, done: make(chan error, 1)}
	d.cmd = exec.Command(bin, append([]string{"--home", home}, args...)...)
	d.cmd.Env = append(os.Environ(), env...)
	d.cmd.Stderr = d.stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	t.Cleanup(func() {
		d.cmd.Process.Kill()
		<-d.done
	})
	return d
}

// waitReady polls choird's status until it answers, failing if choird exits.
func waitReady(t testing.TB, home string, d *daemon) {
	t.Helper()
	c := ctl.NewClient(config.Home{Dir: home}.AdminSocket())
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := c.Status(context.Background()); err == nil {
			return
		}
		select {
		case err := <-d.done:
			d.done <- err
			t.Fatalf("choird exited (%v) before it was ready:\n%s", err, d.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("choird not ready after 30s:\n%s", d.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (d *daemon) stop(t testing.TB) error {
	t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		d.done <- err
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("choird did not stop within 30s of SIGTERM:\n%s", d.stderr.String())
		return nil
	}
}

func TestOperatorSessionAgainstChoird(t *testing.T) {
	home := filepath.Join(t.TempDir(), "h")

	// Nothing there yet.
	if _, stderr, code := ctlRun(t, home, "", "status"); code != 1 || !strings.Contains(stderr, "choird is not running") {
		t.Fatalf("status before init = %d %q; want 1 and 'choird is not running'", code, stderr)
	}

	// init creates the home and refuses to run twice.
	out, _, code := ctlRun(t, home, "", "init")
	if code != 0 || !strings.Contains(out, "choirctl secret set postgres") {
		t.Fatalf("init = %d %q", code, out)
	}
	for _, dir := range []string{"socks", "logs", "repos/global", "repos/agents"} {
		if fi, err := os.Stat(filepath.Join(home, dir)); err != nil || !fi.IsDir() {
			t.Errorf("init did not create %s", dir)
		}
	}
	if fi, err := os.Stat(filepath.Join(home, "secrets.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("secrets.json mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	before, _ := os.ReadFile(filepath.Join(home, "config.json"))
	if _, stderr, code := ctlRun(t, home, "", "init"); code != 1 || !strings.Contains(stderr, "already exists") {
		t.Errorf("second init = %d %q; want refusal", code, stderr)
	}
	if after, _ := os.ReadFile(filepath.Join(home, "config.json")); !bytes.Equal(before, after) {
		t.Error("second init changed config.json")
	}

	// The skeleton needs the postgres secret: check says so, choird refuses.
	check := exec.Command(testkit.Build(t, "choir/choird"), "--check", "--home", home)
	msg, err := check.CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(msg), "choirctl secret set postgres") {
		t.Fatalf("choird --check = %d %s; want 1 naming the postgres secret", code, msg)
	}
	d := startChoird(t, home, nil)
	if err := <-d.done; exitCode(err) != 1 || !strings.Contains(d.stderr.String(), "invalid configuration") {
		t.Fatalf("choird on an invalid config = %v:\n%s\nwant exit 1 saying invalid configuration", err, d.stderr.String())
	}
	d.done <- nil

	// Secrets: from stdin and from the argument; list shows names only.
	if _, stderr, code := ctlRun(t, home, pgSecret+"\n", "secret", "set", "postgres"); code != 0 {
		t.Fatalf("secret set from stdin = %d %q", code, stderr)
	}
	if s, _ := config.LoadSecrets(config.Home{Dir: home}); s["postgres"] != pgSecret {
		t.Errorf("secret from stdin = %q; want the value without its newline", s["postgres"])
	}
	if _, stderr, code := ctlRun(t, home, "", "secret", "set", "api", apiSecret); code != 0 {
		t.Fatalf("secret set = %d %q", code, stderr)
	}
	s, err := config.LoadSecrets(config.Home{Dir: home})
	if err != nil || s["api"] != apiSecret {
		t.Fatalf("secrets.json after set = %v; want the value", err)
	}
	if out, _, _ := ctlRun(t, home, "", "secret", "list"); out != "api\npostgres\n" {
		t.Errorf("secret list = %q; want the two names", out)
	}
	if _, stderr, code := ctlRun(t, home, "", "secret", "delete", "nope"); code != 1 || !strings.Contains(stderr, `no secret named "nope"`) {
		t.Errorf("delete unknown = %d %q", code, stderr)
	}
	if _, stderr, code := ctlRun(t, home, "", "secret", "set"); code != 2 {
		t.Errorf("secret set without a name = %d %q; want usage (2)", code, stderr)
	}

	// With Postgres and Docker configured, choird starts and answers.
	env := backends(t, home)
	d = startChoird(t, home, env)
	waitReady(t, home, d)
	out, stderr, code := ctlRun(t, home, "", "status")
	if code != 0 || !strings.Contains(out, "healthy") || !strings.Contains(out, "version 1") || !strings.Contains(out, "connect to Postgres") || !strings.Contains(out, "start gateway bots                       ok: 0 bots") {
		t.Errorf("status = %d %q %q", code, out, stderr)
	}
	out, _, _ = ctlRun(t, home, "", "status", "--json")
	var st ctl.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil || !st.Healthy || st.ConfigVersion != 1 || st.Resources["agents"] != 0 {
		t.Errorf("status --json = %q (%v)", out, err)
	}
	out, _, code = ctlRun(t, home, "", "config", "show")
	if code != 0 || !strings.Contains(out, `"secret": "postgres"`) {
		t.Errorf("config show = %d %q", code, out)
	}
	out, _, code = ctlRun(t, home, "", "logs", "choird", "--no-follow")
	if code != 0 || !strings.Contains(out, "choird ready") {
		t.Errorf("logs --no-follow = %d %q", code, out)
	}
	if _, stderr, code := ctlRun(t, home, "", "logs", "nobody"); code != 1 || !strings.Contains(stderr, `no log source "nobody"`) {
		t.Errorf("logs of an unknown source = %d %q", code, stderr)
	}

	// logs follows until Ctrl-C (a cancelled context) and exits 0.
	ctx, cancel := context.WithCancel(context.Background())
	var follow testkit.Buffer
	followed := make(chan int, 1)
	go func() {
		followed <- realMain(ctx, []string{"--home", home, "logs", "choird"}, strings.NewReader(""), &follow, &follow)
	}()
	waitFor(t, "the log snapshot", func() bool { return strings.Contains(follow.String(), "choird ready") })
	cancel()
	if code := <-followed; code != 0 {
		t.Errorf("logs after Ctrl-C = %d %q; want 0", code, follow.String())
	}

	// No agent runs, so no agent socket exists: each agent gets its own when
	// it starts (the forged-token refusal is tested on a running agent's).
	if entries, err := os.ReadDir(config.Home{Dir: home}.AgentSocketDir()); err == nil && len(entries) > 0 {
		t.Errorf("socks/agent holds %d entries with no agent running; want none", len(entries))
	}
	if fi, err := os.Stat(config.Home{Dir: home}.AdminSocket()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("ctl.sock mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	if fi, err := os.Stat(filepath.Join(home, "socks")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("socks/ mode = %v, %v; want 0700", fi.Mode().Perm(), err)
	}

	// A clean stop on SIGTERM.
	if err := d.stop(t); err != nil {
		t.Errorf("choird exit after SIGTERM = %v; want 0\n%s", err, d.stderr.String())
	}
	if !strings.Contains(d.stderr.String(), "choird stopped") {
		t.Errorf("choird's stderr lacks 'choird stopped':\n%s", d.stderr.String())
	}
	if _, stderr, code := ctlRun(t, home, "", "status"); code != 1 || !strings.Contains(stderr, "not running") {
		t.Errorf("status after stop = %d %q", code, stderr)
	}

	// No secret value anywhere in the logs or choird's output.
	assertNoSecrets(t, filepath.Join(home, "logs"), d.stderr.String())

	// A dead engine or an unreachable Postgres: choird says which and exits 1.
	d = startChoird(t, home, []string{"DOCKER_HOST=unix:///nonexistent/docker.sock"})
	if err := <-d.done; exitCode(err) != 1 || !strings.Contains(d.stderr.String(), "the Docker engine is not reachable") {
		t.Errorf("choird with a dead engine = %v:\n%s", err, d.stderr.String())
	}
	d.done <- nil
	cfgPath := filepath.Join(home, "config.json")
	good, _ := os.ReadFile(cfgPath)
	var cfg map[string]any
	json.Unmarshal(good, &cfg)
	cfg["postgres"].(map[string]any)["port"] = closedPort(t)
	bad, _ := json.Marshal(cfg)
	os.WriteFile(cfgPath, bad, 0o644)
	d = startChoird(t, home, env)
	if err := <-d.done; exitCode(err) != 1 || !strings.Contains(d.stderr.String(), "cannot start without Postgres") {
		t.Errorf("choird with Postgres down = %v:\n%s", err, d.stderr.String())
	}
	d.done <- nil
	os.WriteFile(cfgPath, good, 0o644)

	// The HTTP transport: a loopback address no container reaches is
	// refused; without a certificate choird serves TLS with its own.
	d = startChoird(t, home, env, "--transport=http", "--listen=127.0.0.1:0")
	if err := <-d.done; exitCode(err) != 1 || !strings.Contains(d.stderr.String(), "cannot reach a loopback address") {
		t.Errorf("choird --transport=http on loopback = %v:\n%s", err, d.stderr.String())
	}
	d.done <- nil
	d = startChoird(t, home, env, "--transport=http", "--listen=0.0.0.0:0")
	waitReady(t, home, d)
	if out, _, _ := ctlRun(t, home, "", "status"); !strings.Contains(out, "https://") {
		t.Errorf("status with --transport=http = %q; want choird's https endpoint", out)
	}
	for _, f := range []string{"agents-ca-key.pem", "agents-key.pem"} {
		if fi, err := os.Stat(filepath.Join(home, "tls", f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v; want a key file of mode 0600", f, err)
		}
	}
	if err := d.stop(t); err != nil {
		t.Errorf("choird --transport=http stop = %v", err)
	}

	// choird refuses a secrets.json others can read.
	os.Chmod(filepath.Join(home, "secrets.json"), 0o644)
	d = startChoird(t, home, env)
	if err := <-d.done; exitCode(err) != 1 || !strings.Contains(d.stderr.String(), "chmod 600") {
		t.Errorf("choird with a 0644 secrets.json = %v:\n%s\nwant exit 1 and a chmod 600 hint", err, d.stderr.String())
	}
	d.done <- nil
}

func assertNoSecrets(t *testing.T, logDir string, outputs ...string) {
	t.Helper()
	for _, out := range outputs {
		for _, secret := range []string{pgSecret, apiSecret, "pg-pass-Q7xK2"} {
			if strings.Contains(out, secret) {
				t.Errorf("output holds secret %q", secret)
			}
		}
	}
	filepath.Walk(logDir, func(path string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		data, _ := os.ReadFile(path)
		for _, secret := range []string{pgSecret, apiSecret, "pg-pass-Q7xK2"} {
			if bytes.Contains(data, []byte(secret)) {
				t.Errorf("%s holds secret %q", path, secret)
			}
		}
		return nil
	})
}

func TestAgentInitScaffoldsRepoAndPlaceholder(t *testing.T) {
	home := filepath.Join(t.TempDir(), "h")
	ctlRun(t, home, "", "init")
	ctlRun(t, home, "", "secret", "set", "postgres", pgSecret)
	repo := filepath.Join(t.TempDir(), "agents", "agent-1.git")
	out, stderr, code := ctlRun(t, home, "", "agent", "init", "agent-1", "--repo", repo)
	if code != 0 {
		t.Fatalf("agent init = %d %q %q", code, out, stderr)
	}
	files, err := exec.Command("git", "--git-dir", repo, "ls-tree", "-r", "--name-only", "main").Output()
	if err != nil {
		t.Fatalf("git ls-tree in the new repo: %v", err)
	}
	want := "Dockerfile\nidentity/SOUL-CORE.md\nidentity/SOUL.md\nskills/.gitkeep\ntools/.gitkeep\n"
	if string(files) != want {
		t.Errorf("repo files = %q; want %q", files, want)
	}
	dockerfile, _ := exec.Command("git", "--git-dir", repo, "show", "main:Dockerfile").Output()
	if !strings.Contains(string(dockerfile), "FROM choir-base") {
		t.Errorf("Dockerfile = %q; want FROM choir-base", dockerfile)
	}
	data, _ := os.ReadFile(filepath.Join(home, "config.json"))
	c, err := config.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := c.Agents["agent-1"]; !ok || a.Repo.URL != repo || a.Repo.Ref != "main" {
		t.Errorf("config agent entry = %+v; want repo %s on main", a, repo)
	}
	// The placeholders make choird --check name what to fill in.
	msg, _ := exec.Command(testkit.Build(t, "choir/choird"), "--check", "--home", home).CombinedOutput()
	for _, field := range []string{"agents.agent-1.defaults.workspace", "agents.agent-1.defaults.llm", "agents.agent-1.defaults.git_identity", "agents.agent-1.defaults.dm"} {
		if !strings.Contains(string(msg), field) {
			t.Errorf("choird --check output lacks %s:\n%s", field, msg)
		}
	}
	// Never twice, never over an existing repo.
	if _, stderr, code := ctlRun(t, home, "", "agent", "init", "agent-1"); code != 1 || !strings.Contains(stderr, "already exists") {
		t.Errorf("second agent init = %d %q", code, stderr)
	}
	if _, stderr, code := ctlRun(t, home, "", "agent", "init", "agent-2", "--repo", repo); code != 1 || !strings.Contains(stderr, "not empty") {
		t.Errorf("agent init over an existing repo = %d %q", code, stderr)
	}
	data2, _ := os.ReadFile(filepath.Join(home, "config.json"))
	if bytes.Contains(data2, []byte("agent-2")) {
		t.Error("a failed agent init still changed config.json")
	}
}

func TestUsageErrors(t *testing.T) {
	home := t.TempDir()
	for _, args := range [][]string{{}, {"frobnicate"}, {"secret"}, {"secret", "rotate"}, {"status", "--bogus"}, {"agent", "init"}} {
		if _, _, code := ctlRun(t, home, "", args...); code != 2 {
			t.Errorf("choirctl %v = %d; want 2 (usage)", args, code)
		}
	}
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// dropNamespace removes what choird created in the test database.
func dropNamespace(t testing.TB, db pgtest.Database) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{DSN: db.DSN, Namespace: db.Namespace})
	if err != nil {
		t.Logf("drop test namespace: %v", err)
		return
	}
	defer st.Close()
	if err := st.Drop(ctx); err != nil {
		t.Logf("drop test namespace: %v", err)
	}
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// instanceLabel is the label choird gives its containers for the home it
// runs on (choird's instanceID: the first 6 bytes of the SHA-256 of the
// home directory, in hex), so a test finds its own choird's containers
// and no other's on a shared engine.
func instanceLabel(home string) string {
	sum := sha256.Sum256([]byte(home))
	return "choir.instance=" + hex.EncodeToString(sum[:6])
}
