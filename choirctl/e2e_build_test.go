package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"choir/internal/docker"
	"choir/testkit"
	"choir/testkit/dockertest"
)

// commitFile changes one file of a bare repo through a throwaway clone.
func commitFile(t testing.TB, bare, name, content string, mode os.FileMode) {
	t.Helper()
	work := t.TempDir()
	run := func(dir string, args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("", "clone", "-q", bare, work)
	os.MkdirAll(filepath.Dir(filepath.Join(work, name)), 0o755)
	os.WriteFile(filepath.Join(work, name), []byte(content), mode)
	run(work, "add", "-A")
	run(work, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "-m", "change "+name)
	run(work, "push", "-q", "origin", "HEAD:main")
}

// TestFromInitToARunningBuiltAgent: the operator's whole path, with repos
// that choirctl itself created: init --global-repo, agent init --repo, a
// tool in the agent repo, agent build (progress streamed), agent start of
// the image just built, agent stop.
func TestFromInitToARunningBuiltAgent(t *testing.T) {
	dc := dockertest.Engine(t)
	testkit.Build(t, "choir/agent") // beside choird: the binary builds bake in
	dockertest.BusyboxImage(t, dc, "choir-test/busybox:1")
	home := filepath.Join(t.TempDir(), "h")
	repos := t.TempDir()
	global, agentRepo := filepath.Join(repos, "global.git"), filepath.Join(repos, "agent-1.git")
	if out, stderr, code := ctlRun(t, home, "", "init", "--global-repo", global); code != 0 || !strings.Contains(out, "Created the global repo") {
		t.Fatalf("init --global-repo = %d %q %q", code, out, stderr)
	}
	// The reference Dockerfile.base needs Debian; this test's engine has a
	// busybox image instead, so the global repo's base says so.
	commitFile(t, global, "Dockerfile.base", "FROM choir-test/busybox:1\nCOPY choir-agent /choir/bin/choir-agent\nENTRYPOINT [\"/choir/bin/choir-agent\"]\n", 0o644)
	if _, stderr, code := ctlRun(t, home, "", "agent", "init", "agent-1", "--repo", agentRepo); code != 0 {
		t.Fatalf("agent init = %d %q", code, stderr)
	}
	commitFile(t, agentRepo, "tools/demo.hello.json", `{"llm":{"name":"demo.hello","description":"Say hello.","input_schema":{"type":"object","properties":{}}},"runtime":{"side_effect":"read"}}`, 0o644)
	commitFile(t, agentRepo, "tools/demo.hello", "#!/bin/sh\necho '{\"status\":\"success\",\"summary\":\"hello\"}'\n", 0o755)
	workspace := testkit.Workspace(t)
	env := backends(t, home)
	agentConfig(t, home, workspace)
	// agentConfig replaced the agents and the global repo; restore the repos.
	path := filepath.Join(home, "config.json")
	data, _ := os.ReadFile(path)
	var cfg map[string]any
	json.Unmarshal(data, &cfg)
	cfg["global_repo"] = map[string]any{"url": global, "ref": "main"}
	cfg["agents"].(map[string]any)["agent-1"].(map[string]any)["repo"] = map[string]any{"url": agentRepo, "ref": "main"}
	out, _ := json.MarshalIndent(cfg, "", "  ")
	os.WriteFile(path, out, 0o644)

	d := startChoird(t, home, env)
	waitReady(t, home, d)
	stdout, stderr, code := ctlRun(t, home, "", "agent", "build", "agent-1")
	if code != 0 {
		t.Fatalf("agent build = %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"global repo", "Step", "agent-1: choir-agent-agent-1:", "built"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("build output lacks %q:\n%s", want, stdout)
		}
	}
	// Same inputs: nothing rebuilt.
	if stdout, _, code := ctlRun(t, home, "", "agent", "build", "agent-1"); code != 0 || !strings.Contains(stdout, "already up to date") {
		t.Errorf("second build = %d %q; want up to date", code, stdout)
	}
	t.Cleanup(func() { removeAgentImages(t, "agent-1") })
	if _, stderr, code := ctlRun(t, home, "", "agent", "start", "agent-1", "--dm=dm1"); code != 0 {
		t.Fatalf("start of the built image = %d %q\n%s", code, stderr, d.stderr.String())
	}
	if stdout, _, _ := ctlRun(t, home, "", "agent", "status", "agent-1"); !strings.Contains(stdout, "running") {
		t.Errorf("status = %q", stdout)
	}
	if _, stderr, code := ctlRun(t, home, "", "agent", "stop", "agent-1"); code != 0 {
		t.Errorf("stop = %d %q", code, stderr)
	}
	// A broken manifest fails the build naming the file, before the engine.
	commitFile(t, agentRepo, "tools/demo.hello.json", `{"llm":{"name":"demo.hello"`, 0o644)
	if _, stderr, code := ctlRun(t, home, "", "agent", "build", "agent-1"); code != 1 || !strings.Contains(stderr, "tools/demo.hello.json") {
		t.Errorf("build with a broken manifest = %d %q; want a failure naming tools/demo.hello.json", code, stderr)
	}
	d.stop(t)
}

// removeAgentImages removes what the builds of an agent tagged.
func removeAgentImages(t testing.TB, id string) {
	dc := dockertest.Engine(t)
	ctx := context.Background()
	imgs, _ := dc.ImageList(ctx, docker.ImageListOptions{Filters: docker.Filters{"label": {"choir.agent=" + id}}})
	for _, img := range imgs {
		for _, tag := range img.RepoTags {
			dc.ImageRemove(ctx, tag, docker.ImageRemoveOptions{Force: true})
		}
	}
}
