package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"choir/choird/build"
	"choir/internal/config"
	"choir/internal/ctl"
)

// TestHangingCheckIsCutOff: a check that never answers (and ignores its
// context) is reported as failed at its deadline, and the checks after it
// still run.
func TestHangingCheckIsCutOff(t *testing.T) {
	never := make(chan struct{})
	defer close(never)
	rep := RunChecks(context.Background(), []Check{
		{"hangs", func(context.Context) Result { <-never; return ok("unreachable") }},
		{"after", func(context.Context) Result { return ok("ran") }},
	}, 100*time.Millisecond)
	if rep.OK {
		t.Error("report OK with a check that hung; want a failure")
	}
	expect(t, rep, "hangs", Fail, "cut off", "find out which")
	expect(t, rep, "after", OK, "ran")
}

// TestCrashingCheckFails: a check that panics is a failed line, not a dead
// doctor.
func TestCrashingCheckFails(t *testing.T) {
	rep := RunChecks(context.Background(), []Check{{"crashes", func(context.Context) Result { panic("boom") }}}, time.Minute)
	expect(t, rep, "crashes", Fail, "boom")
}

// TestBrokenInstallations: each kind of breakage an operator meets is
// reported on its own line, failing, with what to do.
func TestBrokenInstallations(t *testing.T) {
	t.Run("bad config", func(t *testing.T) {
		h := newHome(t, nil)
		writeFile(t, h.ConfigPath(), `{"postgres": {"port": "five"}, "agents": `, 0o644)
		rep := run(t, &Doctor{Home: h, DockerHost: missingEngine(t)})
		expect(t, rep, "config", Fail, "config.json", "choird --check --home "+h.Dir)
		expect(t, rep, "postgres", Skip, "valid config")
		expect(t, rep, "clock", Skip)
		if rep.OK {
			t.Error("report OK with a broken config.json")
		}
	})
	t.Run("unknown agent reference", func(t *testing.T) {
		h := newHome(t, func(cfg map[string]any) {
			cfg["agents"] = map[string]any{"a1": map[string]any{"repo": map[string]any{"url": "/nowhere"}, "defaults": map[string]any{"llm": "nope"}}}
		})
		rep := run(t, &Doctor{Home: h, DockerHost: missingEngine(t)})
		expect(t, rep, "config", Fail, "agents.a1.defaults")
	})
	t.Run("secrets mode 0644", func(t *testing.T) {
		h := newHome(t, nil)
		os.Chmod(h.SecretsPath(), 0o644)
		rep := run(t, &Doctor{Home: h, DockerHost: missingEngine(t)})
		expect(t, rep, "secrets file", Fail, "mode 0644", "chmod 600 "+h.SecretsPath())
		expect(t, rep, "config", Fail, "chmod 600")
		// The config is still read: Postgres is checked all the same.
		expect(t, rep, "postgres", Fail, "not reachable")
	})
	t.Run("secrets missing", func(t *testing.T) {
		h := newHome(t, nil)
		os.Remove(h.SecretsPath())
		rep := run(t, &Doctor{Home: h, DockerHost: missingEngine(t)})
		expect(t, rep, "secrets file", Fail, "does not exist", "choirctl init")
	})
	t.Run("socket dir mode 0755", func(t *testing.T) {
		h := newHome(t, nil)
		os.Chmod(h.SocksDir(), 0o755)
		rep := run(t, &Doctor{Home: h, DockerHost: missingEngine(t)})
		expect(t, rep, "sockets", Fail, "mode 0755, want 0700", "chmod 700 "+h.SocksDir())
	})
	t.Run("agent socket dir and socket modes", func(t *testing.T) {
		h := newHome(t, nil)
		dir := filepath.Join(h.AgentSocketDir(), "a1")
		os.MkdirAll(dir, 0o700) // the container's root could not traverse it
		serveUnix(t, filepath.Join(dir, "choird.sock"), http.NotFoundHandler())
		os.Chmod(filepath.Join(dir, "choird.sock"), 0o600)
		rep := run(t, &Doctor{Home: h, DockerHost: missingEngine(t)})
		expect(t, rep, "sockets", Fail, "chmod 711 "+dir, "chmod 666 "+filepath.Join(dir, "choird.sock"))
	})
	t.Run("admin socket mode 0666", func(t *testing.T) {
		h := newHome(t, nil)
		fakeChoird(t, h, ctl.Status{Healthy: true, StartedAt: time.Now()})
		os.Chmod(h.AdminSocket(), 0o666)
		rep := run(t, &Doctor{Home: h, DockerHost: missingEngine(t)})
		expect(t, rep, "sockets", Fail, "chmod 600 "+h.AdminSocket())
	})
	t.Run("engine socket missing", func(t *testing.T) {
		h := newHome(t, nil)
		host := missingEngine(t)
		rep := run(t, &Doctor{Home: h, DockerHost: host})
		expect(t, rep, "docker engine", Fail, "nothing listens at "+host, "DOCKER_HOST")
		expect(t, rep, "docker disk", Skip, "did not answer")
		expect(t, rep, "base image", Skip, "did not answer")
	})
	t.Run("postgres unreachable", func(t *testing.T) {
		h := newHome(t, nil)
		rep := run(t, &Doctor{Home: h, DockerHost: missingEngine(t)})
		expect(t, rep, "config", OK)
		expect(t, rep, "postgres", Fail, "not reachable", "choirctl secret set postgres")
		if r := line(t, rep, "postgres"); strings.Contains(r.Detail+r.Fix, "pw-doctor-T3st") {
			t.Errorf("the postgres line shows the password: %q", r.Detail)
		}
	})
	t.Run("postgres hangs", func(t *testing.T) {
		port := silentPort(t)
		h := newHome(t, func(cfg map[string]any) { cfg["postgres"].(map[string]any)["port"] = port })
		rep := run(t, &Doctor{Home: h, DockerHost: missingEngine(t), Timeout: 3 * time.Second})
		expect(t, rep, "postgres", Fail, "did not answer within", "start the server")
		expect(t, rep, "logs", OK) // the checks after it ran
	})
	t.Run("choird not running", func(t *testing.T) {
		h := newHome(t, nil)
		rep := run(t, &Doctor{Home: h, DockerHost: missingEngine(t)})
		expect(t, rep, "choird", Fail, "not running", "choird --home "+h.Dir)
	})
	t.Run("choird degraded", func(t *testing.T) {
		h := newHome(t, nil)
		fakeChoird(t, h, ctl.Status{PID: 42, StartedAt: time.Now(), Degraded: []string{"Postgres unreachable for 3m0s: connection refused; check the server"}})
		rep := run(t, &Doctor{Home: h, DockerHost: missingEngine(t)})
		expect(t, rep, "choird", Fail, "pid 42", "degraded: Postgres unreachable")
		expect(t, rep, "postgres", Fail, "not reachable")
	})
}

// TestRunningChoird: a healthy choird is ok with its uptime; when it holds
// the one connection of a one-connection server, the doctor's own failed
// connection is a warning that says so.
func TestRunningChoird(t *testing.T) {
	h := newHome(t, nil)
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	fakeChoird(t, h, ctl.Status{Healthy: true, PID: 7, StartedAt: now.Add(-90 * time.Minute), ConfigVersion: 3, AgentsRunning: 2})
	rep := run(t, &Doctor{Home: h, DockerHost: missingEngine(t), Now: func() time.Time { return now }})
	expect(t, rep, "choird", OK, "pid 7", "up 1h30m0s", "2 agents running", "healthy")
	expect(t, rep, "postgres", Warn, "not reachable", "connected to it and healthy", "one connection at a time")
	expect(t, rep, "sockets", OK, "ctl.sock")
}

// TestEngineAndImages: against a fake engine, the doctor reports the
// engine's versions and driver, and each image against its repos' heads.
func TestEngineAndImages(t *testing.T) {
	global, g1 := gitRepo(t)
	agentRepo, a1 := gitRepo(t)
	cfg := &config.Config{GlobalRepo: config.Repo{URL: global, Ref: "main"},
		Agents: map[string]config.Agent{"fresh": {Repo: config.Repo{URL: agentRepo}}, "stale": {Repo: config.Repo{URL: agentRepo}},
			"unlabelled": {Repo: config.Repo{URL: agentRepo}}, "missing": {Repo: config.Repo{URL: agentRepo}},
			"pinned": {Repo: config.Repo{URL: agentRepo, Ref: a1}}}}
	labels := func(global, agent string) map[string]string {
		return map[string]string{build.LabelGlobalCommit: global, build.LabelAgentCommit: agent, build.LabelImageVersion: "0123456789ab"}
	}
	old := strings.Repeat("f", 40)
	now := time.Now()
	images := map[string]image{
		build.BaseLatest:                {id: "sha256:" + strings.Repeat("b", 64), created: now.Add(-3 * 24 * time.Hour), labels: map[string]string{build.LabelGlobalCommit: g1}},
		"choir-agent-fresh:latest":      {id: "sha256:" + strings.Repeat("1", 64), created: now, labels: labels(g1, a1)},
		"choir-agent-stale:latest":      {id: "sha256:" + strings.Repeat("2", 64), created: now, labels: labels(g1, old)},
		"choir-agent-pinned:latest":     {id: "sha256:" + strings.Repeat("3", 64), created: now, labels: labels(g1, a1)},
		"choir-agent-unlabelled:latest": {id: "sha256:" + strings.Repeat("4", 64), created: now},
	}
	root := t.TempDir()
	host := fakeEngine(t, "overlay2", root, images)
	h := newHome(t, nil)
	d := &Doctor{Home: h, DockerHost: host, Timeout: 20 * time.Second}
	d.loaded = &config.Loaded{Config: cfg}
	rep := RunChecks(context.Background(), []Check{{"docker engine", d.checkEngine}, {"docker disk", d.checkDisk}, {"base image", d.checkBaseImage}}, d.Timeout)
	rep.add(RunChecks(context.Background(), d.imageChecks(), d.Timeout))
	defer d.getEngine().Close()

	expect(t, rep, "docker engine", OK, "Docker 20.10.24+dfsg1", "API 1.41", "storage driver overlay2", "data root "+root)
	if r := line(t, rep, "docker disk"); r.Status == Skip || !strings.Contains(r.Detail, "free of") || !strings.Contains(r.Detail, root) {
		t.Errorf("docker disk = %s %q; want the free space of %s", r.Status, r.Detail, root)
	}
	expect(t, rep, "base image", OK, "choir-base:latest", "3 days ago", "built from its repos' heads")
	expect(t, rep, "agent image fresh", OK, "choir-agent-fresh:latest", "version 0123456789ab", "built from its repos' heads")
	expect(t, rep, "agent image stale", Warn, "agent repo default branch is at "+a1[:7]+", the image has fffffff", "choirctl agent build stale")
	expect(t, rep, "agent image pinned", OK, "built from its repos' heads")
	expect(t, rep, "agent image unlabelled", Warn, "no commit labels", "choirctl agent build unlabelled")
	expect(t, rep, "agent image missing", Fail, "no image choir-agent-missing:latest", "choirctl agent build missing")

	// The global repo moves on: the base and every image are behind.
	work := filepath.Join(t.TempDir(), "w")
	git(t, filepath.Dir(work), "clone", "--quiet", global, work)
	g2 := gitCommit(t, work)
	rep = RunChecks(context.Background(), append([]Check{{"base image", d.checkBaseImage}}, d.imageChecks()...), d.Timeout)
	expect(t, rep, "base image", Warn, "global repo main is at "+g2[:7]+", the image has "+g1[:7], "agent build")
	expect(t, rep, "agent image fresh", Warn, "global repo main is at "+g2[:7])
}

// TestSlowEngineIsCutOff: an engine that accepts and never answers is a
// failed line at the deadline, and the checks that need it are skipped.
func TestSlowEngineIsCutOff(t *testing.T) {
	dir, _ := os.MkdirTemp("", "dr")
	defer os.RemoveAll(dir)
	release := make(chan struct{})
	serveUnix(t, filepath.Join(dir, "d.sock"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer close(release)
	h := newHome(t, nil)
	d := &Doctor{Home: h, DockerHost: "unix://" + filepath.Join(dir, "d.sock"), Timeout: 200 * time.Millisecond}
	rep := RunChecks(context.Background(), []Check{{"docker engine", d.checkEngine}, {"docker disk", d.checkDisk}}, d.Timeout)
	if r := line(t, rep, "docker engine"); r.Status != Fail {
		t.Errorf("docker engine = %s %q; want fail", r.Status, r.Detail)
	}
	expect(t, rep, "docker disk", Skip, "did not answer")
}

// TestVFSDriverWarns: the vfs storage driver works but is slow and
// wasteful: a warning naming overlay2.
func TestVFSDriverWarns(t *testing.T) {
	h := newHome(t, nil)
	d := &Doctor{Home: h, DockerHost: fakeEngine(t, "vfs", t.TempDir(), nil)}
	rep := RunChecks(context.Background(), []Check{{"docker engine", d.checkEngine}}, 20*time.Second)
	defer d.getEngine().Close()
	expect(t, rep, "docker engine", Warn, "storage driver vfs", "overlay2")
}

// TestClock: the host's clock against a model endpoint's Date header: in
// step, off by seconds, off by minutes, and offline.
func TestClock(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	models := func(endpoints ...string) *config.Loaded {
		m := map[string]config.Model{}
		for i, ep := range endpoints {
			m[string(rune('a'+i))] = config.Model{Endpoint: ep}
		}
		return &config.Loaded{Config: &config.Config{Models: m}}
	}
	offline := "http://127.0.0.1:" + itoa(closedPort(t)) + "/v1"
	tests := []struct {
		name   string
		loaded *config.Loaded
		skew   time.Duration
		status Status
		want   string
	}{
		{"in step", models(srv.URL + "/v1"), 0, OK, "agrees"},
		{"behind", models(offline, srv.URL+"/v1"), -30 * time.Second, Warn, "behind"},
		{"far ahead", models(srv.URL + "/v1"), 10 * time.Minute, Fail, "10m"},
		{"offline", models(offline), 0, Skip, "offline"},
		{"offline, connections hang", models("http://127.0.0.1:" + itoa(silentPort(t)) + "/v1"), 0, Skip, "offline"},
		{"no models", models(), 0, Skip, "no model endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &Doctor{Now: func() time.Time { return time.Now().Add(tt.skew) }, Timeout: 3 * time.Second}
			d.loaded = tt.loaded
			rep := RunChecks(context.Background(), []Check{{"clock", d.checkClock}}, d.Timeout)
			expect(t, rep, "clock", tt.status, tt.want)
		})
	}
}

// TestLogs: the size of the log directory, and a warning when the archive
// is over log_retention_mb.
func TestLogs(t *testing.T) {
	h := newHome(t, nil)
	os.MkdirAll(filepath.Join(h.LogsDir(), "archive"), 0o700)
	writeFile(t, filepath.Join(h.LogsDir(), "choird.log"), strings.Repeat("x", 2048), 0o600)
	writeFile(t, filepath.Join(h.LogsDir(), "archive", "old.log"), strings.Repeat("y", 3<<20), 0o600)
	d := &Doctor{Home: h}
	d.loaded = &config.Loaded{Config: &config.Config{Tunables: config.Tunables{LogRetentionDays: 30, LogRetentionMB: 1024}}}
	rep := RunChecks(context.Background(), []Check{{"logs", d.checkLogs}}, 20*time.Second)
	expect(t, rep, "logs", OK, "holds 3.0 MiB (archive 3.0 MiB)", "retention 30 days, 1024 MiB")

	d.loaded.Config.LogRetentionMB = 2
	rep = RunChecks(context.Background(), []Check{{"logs", d.checkLogs}}, 20*time.Second)
	expect(t, rep, "logs", Warn, "over log_retention_mb", "start it")
}

// TestReportFormats: one line a check (status first) and a summary; JSON
// a script can read.
func TestReportFormats(t *testing.T) {
	rep := RunChecks(context.Background(), []Check{
		{"one", func(context.Context) Result { return ok("fine") }},
		{"two", func(context.Context) Result { return bad(Fail, "do this", "broken\nover two lines") }},
		{"three", func(context.Context) Result { return skip("offline") }},
	}, time.Minute)
	var text bytes.Buffer
	rep.WriteText(&text)
	lines := strings.Split(strings.TrimSpace(text.String()), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "ok ") || !strings.HasPrefix(lines[1], "fail ") ||
		!strings.Contains(lines[1], "broken | over two lines -- do this") || !strings.HasPrefix(lines[2], "skip ") ||
		lines[4] != "1 ok, 0 warn, 1 fail, 1 skip: the installation has problems." {
		t.Errorf("WriteText =\n%s\nwant three lines, a blank and the summary", text.String())
	}
	var js bytes.Buffer
	rep.WriteJSON(&js)
	var back struct {
		OK     bool `json:"ok"`
		Checks []struct{ Check, Status, Detail, Fix string }
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.OK || len(back.Checks) != 3 ||
		back.Checks[1].Status != "fail" || back.Checks[1].Fix != "do this" || back.Checks[0].Check != "one" {
		t.Errorf("WriteJSON = %s (%v); want ok false and three checks", js.String(), err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// silentPort is a loopback port that accepts connections and never
// answers, until the test ends.
func silentPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	t.Cleanup(func() { l.Close(); <-done })
	return l.Addr().(*net.TCPAddr).Port
}

// TestRemoteThatHangs: a repository host that never answers leaves the
// image found, with a warning that its head is unknown, before the
// check's deadline.
func TestRemoteThatHangs(t *testing.T) {
	global, g1 := gitRepo(t)
	hung := "http://127.0.0.1:" + itoa(silentPort(t)) + "/agent.git"
	cfg := &config.Config{GlobalRepo: config.Repo{URL: global, Ref: "main"}, Agents: map[string]config.Agent{"a": {Repo: config.Repo{URL: hung}}}}
	images := map[string]image{"choir-agent-a:latest": {id: "sha256:" + strings.Repeat("1", 64), created: time.Now(),
		labels: map[string]string{build.LabelGlobalCommit: g1, build.LabelAgentCommit: strings.Repeat("a", 40)}}}
	d := &Doctor{Home: newHome(t, nil), DockerHost: fakeEngine(t, "overlay2", t.TempDir(), images), Timeout: 5 * time.Second}
	d.loaded = &config.Loaded{Config: cfg}
	rep := RunChecks(context.Background(), append([]Check{{"docker engine", d.checkEngine}}, d.imageChecks()...), d.Timeout)
	defer d.getEngine().Close()
	expect(t, rep, "agent image a", Warn, "choir-agent-a:latest", "agent repo (http://127.0.0.1:", "no answer within")
}
