package testkit

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ProcessGone waits until process pid no longer runs (absent, or a zombie
// its new parent has not reaped yet), failing after a generous deadline.
func ProcessGone(t testing.TB, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		// The state follows the ") " that ends the command name.
		if i := strings.LastIndex(string(stat), ") "); i >= 0 && strings.HasPrefix(string(stat[i+2:]), "Z") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs: %s", pid, stat)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ReadPid reads the pid a process under test wrote to file.
func ReadPid(t testing.TB, file string) int {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("no pid file %s: %v", file, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("pid file %q: %v", data, err)
	}
	return pid
}
