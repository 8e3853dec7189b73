package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"choir/choird/build"
	"choir/internal/docker"
	"choir/testkit"
	"choir/testkit/dockertest"
)

// doctorLine is one line of `choirctl doctor --json`.
type doctorLine struct {
	Check, Status, Detail, Fix string
}

// runDoctorJSON runs choirctl doctor --json on home and returns its lines
// by check name and its exit status.
func runDoctorJSON(t *testing.T, home string) (map[string]doctorLine, int) {
	t.Helper()
	out, stderr, code := ctlRun(t, home, "", "doctor", "--json")
	var rep struct {
		OK     bool         `json:"ok"`
		Checks []doctorLine `json:"checks"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor --json = %d, %v:\n%s\nstderr: %s", code, err, out, stderr)
	}
	if rep.OK != (code == 0) {
		t.Errorf("doctor --json says ok=%v but exits %d", rep.OK, code)
	}
	lines := map[string]doctorLine{}
	for _, l := range rep.Checks {
		lines[l.Check] = l
	}
	return lines, code
}

// wantLine checks one line's status (any of statuses) and that it says
// each of want.
func wantLine(t *testing.T, lines map[string]doctorLine, name string, statuses string, want ...string) {
	t.Helper()
	l, ok := lines[name]
	if !ok {
		t.Errorf("doctor has no %q line: %v", name, lines)
		return
	}
	if !strings.Contains(" "+statuses+" ", " "+l.Status+" ") {
		t.Errorf("doctor %s = %s %q (fix %q); want %s", name, l.Status, l.Detail, l.Fix, statuses)
		return
	}
	for _, w := range want {
		if !strings.Contains(l.Detail+" -- "+l.Fix, w) {
			t.Errorf("doctor %s = %s %q (fix %q); want it to say %q", name, l.Status, l.Detail, l.Fix, w)
		}
	}
}

// TestDoctorAgainstAnInstallation runs choirctl doctor (and so choird
// --doctor) against a real engine and Postgres: with choird stopped, with it
// running, and after breaking the installation.
func TestDoctorAgainstAnInstallation(t *testing.T) {
	home := filepath.Join(t.TempDir(), "h")
	if _, stderr, code := ctlRun(t, home, "", "init"); code != 0 {
		t.Fatalf("init = %d %s", code, stderr)
	}
	env := backends(t, home)
	dc := dockertest.Engine(t)
	agentConfig(t, home, t.TempDir())

	// The agent (an id of its own on the shared engine) and its repos.
	id := "doctor-" + randomHex(t, 4)
	global, globalHead := doctorRepo(t)
	agentRepo, agentHead := doctorRepo(t)
	editConfig(t, home, func(cfg map[string]any) {
		cfg["global_repo"] = map[string]any{"url": global, "ref": "main"}
		agents := cfg["agents"].(map[string]any)
		a := agents["agent-1"].(map[string]any)
		a["repo"] = map[string]any{"url": agentRepo}
		delete(agents, "agent-1")
		agents[id] = a
	})
	labelledImage(t, dc, build.AgentRepo(id)+":latest", map[string]string{
		build.LabelManaged: "true", build.LabelAgent: id, build.LabelImageVersion: "0123456789ab",
		build.LabelGlobalCommit: globalHead, build.LabelAgentCommit: agentHead,
	})
	bin := testkit.Build(t, "choir/choird")
	t.Setenv("PATH", filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}

	// choird stopped: everything it needs is there, but it does not run.
	lines, code := runDoctorJSON(t, home)
	if code != 1 {
		t.Errorf("doctor with choird stopped exits %d; want 1", code)
	}
	wantLine(t, lines, "config", "ok", "valid")
	wantLine(t, lines, "secrets file", "ok", "mode 0600")
	wantLine(t, lines, "sockets", "ok", "socks 0700")
	wantLine(t, lines, "choird", "fail", "not running", "choird --home "+home)
	wantLine(t, lines, "docker engine", "ok", "API 1.41", "storage driver")
	wantLine(t, lines, "docker disk", "ok warn", "free of")
	wantLine(t, lines, "postgres", "ok", "Postgres 1", "vector")
	wantLine(t, lines, "base image", "ok warn", "choir-base")
	wantLine(t, lines, "agent image "+id, "ok", "built from its repos' heads")
	wantLine(t, lines, "logs", "ok")
	wantLine(t, lines, "clock", "skip", "offline")

	// choird running: healthy with its uptime; the agent repo moved on.
	d := startChoird(t, home, env)
	waitReady(t, home, d)
	newHead := doctorCommit(t, agentRepo)
	lines, code = runDoctorJSON(t, home)
	if code != 0 {
		t.Errorf("doctor with choird running exits %d; want 0 (nothing fails): %v", code, lines)
	}
	wantLine(t, lines, "choird", "ok", "healthy", "up ")
	wantLine(t, lines, "sockets", "ok", "socks/ctl.sock 0600")
	// PGlite serves one connection at a time: choird may hold it.
	t.Logf("postgres with choird running: %+v", lines["postgres"])
	wantLine(t, lines, "postgres", "ok warn", "")
	wantLine(t, lines, "agent image "+id, "warn", "agent repo", "is at "+newHead[:7]+", the image has "+agentHead[:7], "choirctl agent build "+id)

	// Broken: secrets readable by others, the socket dir opened up.
	os.Chmod(filepath.Join(home, "secrets.json"), 0o644)
	os.Chmod(filepath.Join(home, "socks"), 0o755)
	out, _, code := ctlRun(t, home, "", "doctor")
	t.Logf("choirctl doctor on a broken installation:\n%s", out)
	if code != 1 {
		t.Errorf("doctor on a broken installation exits %d; want 1:\n%s", code, out)
	}
	for _, want := range []string{
		"fail  secrets file", "chmod 600 " + filepath.Join(home, "secrets.json"),
		"fail  sockets", "chmod 700 " + filepath.Join(home, "socks"),
		"ok    choird",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor on a broken installation does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, pgSecret) || strings.Contains(out, apiSecret) {
		t.Errorf("doctor printed a secret:\n%s", out)
	}
	os.Chmod(filepath.Join(home, "secrets.json"), 0o600)
	os.Chmod(filepath.Join(home, "socks"), 0o700)
	if err := d.stop(t); err != nil {
		t.Errorf("choird stop = %v", err)
	}
}

// doctorRepo makes a bare repository with one commit on main, returning
// its path and that commit.
func doctorRepo(t *testing.T) (bare, head string) {
	t.Helper()
	dir := t.TempDir()
	bare = filepath.Join(dir, "r.git")
	gitT(t, dir, "init", "--quiet", "--bare", "--initial-branch=main", bare)
	return bare, doctorCommit(t, bare)
}

// doctorCommit adds an empty commit to main of a bare repository.
func doctorCommit(t *testing.T, bare string) string {
	t.Helper()
	work := filepath.Join(t.TempDir(), "w")
	gitT(t, filepath.Dir(work), "clone", "--quiet", bare, work)
	gitT(t, work, "checkout", "--quiet", "-B", "main")
	gitT(t, work, "commit", "--quiet", "--allow-empty", "-m", "c")
	gitT(t, work, "push", "--quiet", "origin", "HEAD:main")
	return gitT(t, work, "rev-parse", "HEAD")
}

func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// labelledImage builds an empty image named ref with labels, removed when
// the test ends.
func labelledImage(t *testing.T, dc *docker.Client, ref string, labels map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	body := []byte("FROM scratch\nLABEL choir.test=doctor\n")
	tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(body))})
	tw.Write(body)
	tw.Close()
	if _, err := dc.ImageBuild(context.Background(), &buf, docker.BuildOptions{Tags: []string{ref}, Labels: labels}); err != nil {
		t.Fatalf("build %s: %v", ref, err)
	}
	t.Cleanup(func() { dc.ImageRemove(context.Background(), ref, docker.ImageRemoveOptions{Force: true}) })
}

func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
