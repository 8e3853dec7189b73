package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeChoirdOnPath puts a choird on PATH (and nothing else) that prints
// its arguments and exits with code.
func fakeChoirdOnPath(t *testing.T, code int) {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\necho \"fake choird $*\"\necho \"to stderr\" >&2\nexit " + string(rune('0'+code)) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "choird"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
}

// TestDoctorRunsChoird: choirctl doctor runs `choird --doctor` for its home,
// passes --json, shows what it prints and keeps its verdict.
func TestDoctorRunsChoird(t *testing.T) {
	home := t.TempDir()
	tests := []struct {
		name     string
		args     []string
		code     int
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{"all well", nil, 0, 0, "fake choird --doctor --home " + home + "\n", "to stderr\n"},
		{"json", []string{"--json"}, 0, 0, "fake choird --doctor --home " + home + " --json\n", "to stderr\n"},
		{"a check failed", nil, 1, 1, "fake choird --doctor --home " + home + "\n", "see the fail lines"},
		{"an old choird", nil, 2, 1, "", "does not know --doctor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fakeChoirdOnPath(t, tt.code)
			out, stderr, code := ctlRun(t, home, "", append([]string{"doctor"}, tt.args...)...)
			if code != tt.wantCode || !strings.Contains(out, tt.wantOut) || !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("doctor %v = %d, %q, %q; want %d, %q, stderr with %q", tt.args, code, out, stderr, tt.wantCode, tt.wantOut, tt.wantErr)
			}
		})
	}
}

// TestDoctorWithoutChoird: with no choird beside choirctl or on PATH, the
// doctor says where it looked and what to do.
func TestDoctorWithoutChoird(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, stderr, code := ctlRun(t, t.TempDir(), "", "doctor")
	if code != 1 || !strings.Contains(stderr, "cannot find choird beside choirctl") || !strings.Contains(stderr, "on PATH") || !strings.Contains(stderr, "make install") {
		t.Errorf("doctor without choird = %d %q; want 1 saying where it looked and what to do", code, stderr)
	}
}

// TestDoctorUsage: doctor takes no arguments.
func TestDoctorUsage(t *testing.T) {
	if _, stderr, code := ctlRun(t, t.TempDir(), "", "doctor", "extra"); code != 2 || !strings.Contains(stderr, "usage: choirctl doctor [--json]") {
		t.Errorf("doctor extra = %d %q; want 2 and the usage", code, stderr)
	}
}
