package testkit_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"choir/testkit"
)

// makeInstall runs `make install` in the checkout with the given variables,
// building into a private bin directory (not the checkout's bin/).
func makeInstall(t *testing.T, vars ...string) {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		testkit.Unavailable(t, "make is not installed")
	}
	args := append([]string{"-C", "..", "install", "BIN=" + t.TempDir()}, vars...)
	if out, err := exec.Command("make", args...).CombinedOutput(); err != nil {
		t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestMakeInstall: `make install DESTDIR=D` puts the three binaries and
// choird.service where a package would, with the modes a package would.
func TestMakeInstall(t *testing.T) {
	dest := t.TempDir()
	makeInstall(t, "DESTDIR="+dest)
	for path, mode := range map[string]os.FileMode{
		"usr/local/bin/choird":                        0o755,
		"usr/local/bin/choirctl":                      0o755,
		"usr/local/bin/choir-agent":                   0o755,
		"usr/local/lib/systemd/system/choird.service": 0o644,
	} {
		fi, err := os.Stat(filepath.Join(dest, path))
		if err != nil {
			t.Errorf("make install DESTDIR=%s: %s missing: %v", dest, path, err)
			continue
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s mode = %v; want %v", path, fi.Mode().Perm(), mode)
		}
	}
	unit, _ := os.ReadFile(filepath.Join(dest, "usr/local/lib/systemd/system/choird.service"))
	// ExecStart names where the binary runs from, not where DESTDIR staged it.
	if !regexp.MustCompile(`(?m)^ExecStart=/usr/local/bin/choird --home `).Match(unit) {
		t.Errorf("the installed unit's ExecStart does not run /usr/local/bin/choird:\n%s", unit)
	}
}

// TestInstalledUnitVerifies installs with a PREFIX of its own (so the
// unit's ExecStart names a binary that exists) and runs `systemd-analyze
// verify` on the unit, which checks every directive and the binary.
func TestInstalledUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		testkit.Unavailable(t, "systemd-analyze is not installed (Debian package systemd)")
	}
	prefix := filepath.Join(t.TempDir(), "usr")
	makeInstall(t, "PREFIX="+prefix)
	unitPath := filepath.Join(prefix, "lib/systemd/system/choird.service")
	unit, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "ExecStart="+prefix+"/bin/choird ") {
		t.Errorf("with PREFIX=%s, ExecStart does not name %s/bin/choird:\n%s", prefix, prefix, unit)
	}
	out, err := exec.Command(analyze, "verify", unitPath).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify %s = %v:\n%s", unitPath, err, out)
	}
}

// TestUnitHardening: the unit is Type=notify, restarts on failure, runs as
// choir with no capability, and keeps the hardening options; each
// directive of [Service] sits under a comment saying why.
func TestUnitHardening(t *testing.T) {
	data, err := os.ReadFile("../choird/systemd/choird.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := string(data)
	for _, want := range []string{
		"Type=notify", "NotifyAccess=main", "User=choir", "Restart=on-failure", "WatchdogSec=",
		"TimeoutStopSec=", "NoNewPrivileges=yes", "CapabilityBoundingSet=\n", "ProtectSystem=strict",
		"ReadWritePaths=/var/lib/choir\n", "PrivateTmp=yes", "ProtectHome=read-only",
		"ProtectKernelTunables=yes", "ProtectKernelModules=yes", "ProtectKernelLogs=yes",
		"RestrictSUIDSGID=yes", "LockPersonality=yes", "RestrictRealtime=yes",
		"SystemCallArchitectures=native", "MemoryDenyWriteExecute=no",
		"RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6\n",
	} {
		if !strings.Contains(unit, "\n"+want) {
			t.Errorf("choird.service lacks %q", want)
		}
	}
	// Every directive of [Service] follows a comment, directly or through
	// a run of directives that one comment explains (no blank line between).
	_, service, _ := strings.Cut(unit, "[Service]\n")
	service, _, _ = strings.Cut(service, "\n[")
	explained := false
	for _, line := range strings.Split(service, "\n") {
		switch {
		case line == "":
			explained = false
		case strings.HasPrefix(line, "#"):
			explained = true
		case !explained:
			t.Errorf("choird.service: %q has no comment saying why", line)
		}
	}
}
