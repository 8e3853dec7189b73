package swarmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestScriptStopIsSafe: swarm.sh stop on a directory where nothing runs
// succeeds and leaves a directory it did not make alone; env fails.
func TestScriptStopIsSafe(t *testing.T) {
	dir := t.TempDir()
	keep := filepath.Join(dir, "keep")
	if err := os.WriteFile(keep, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("sh", "swarm.sh", "stop", dir).CombinedOutput(); err != nil {
		t.Errorf("swarm.sh stop (nothing running) = %v: %s", err, out)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("swarm.sh stop removed a directory it did not make: %v", err)
	}
	if out, err := exec.Command("sh", "swarm.sh", "env", dir).CombinedOutput(); err == nil {
		t.Errorf("swarm.sh env (nothing running) succeeded: %s", out)
	}
	if out, err := exec.Command("sh", "swarm.sh", "bogus", dir).CombinedOutput(); err == nil {
		t.Errorf("swarm.sh bogus succeeded: %s", out)
	}
}

// TestGetWithoutSwarm: with the harness's variables unset the swarm is
// unavailable, and the reason says how to start one.
func TestGetWithoutSwarm(t *testing.T) {
	for _, v := range []string{ManagerEnv, WorkerEnv, RegistryEnv} {
		t.Setenv(v, "")
	}
	_, err := setup()
	if err == nil {
		t.Fatal("setup() without the variables = nil error; want the swarm unavailable")
	}
	for _, want := range []string{ManagerEnv, "swarm.sh start"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("setup() = %v; want it to mention %q", err, want)
		}
	}
}
