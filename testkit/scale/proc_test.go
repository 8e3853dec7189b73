package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Each parser reads the kernel's own files (testdata holds real ones from
// a cgroup v1 host, and the cgroup v2 forms), and refuses, saying where,
// what it cannot read rather than reporting a zero.

func TestParseKBFields(t *testing.T) {
	tests := []struct {
		name  string
		parse func([]byte) (int64, error)
		file  string
		want  int64
	}{
		{"smaps_rollup Pss", parseSmapsRollupPss, "smaps_rollup", 240 << 10},
		{"meminfo MemAvailable", func(b []byte) (int64, error) { return parseMeminfo(b, "MemAvailable") }, "meminfo", 23691356 << 10},
		{"status VmRSS", parseStatusRSS, "status", 14208 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.parse(readTestdata(t, tt.file))
			if err != nil || got != tt.want {
				t.Errorf("parse(testdata/%s) = %d, %v; want %d", tt.file, got, err, tt.want)
			}
		})
	}
}

func TestParseSmapsRollupHostile(t *testing.T) {
	tests := []struct{ name, in, wantErr string }{
		{"empty", "", `no "Pss:" line`},
		{"only Pss_Anon and SwapPss", "Pss_Anon: 12 kB\nSwapPss: 3 kB\n", `no "Pss:" line`},
		{"not a number", "Pss: many kB\n", "want a number of kB"},
		{"another unit", "Pss: 12 MB\n", "want a number of kB"},
		{"negative", "Pss: -4 kB\n", "want a number of kB"},
		{"no unit", "Pss: 12\n", "want a number of kB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseSmapsRollupPss([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "smaps_rollup") {
				t.Errorf("parseSmapsRollupPss(%q) = %d, %v; want an error naming smaps_rollup and %q", tt.in, got, err, tt.wantErr)
			}
		})
	}
	// The Pss line is found among the others, whatever comes first.
	if got, err := parseSmapsRollupPss([]byte("Rss: 100 kB\nPss_Anon: 7 kB\nPss: 42 kB\n")); err != nil || got != 42<<10 {
		t.Errorf("parseSmapsRollupPss(Pss after Pss_Anon) = %d, %v; want %d", got, err, 42<<10)
	}
}

func TestParseStat(t *testing.T) {
	got, err := parseStat(readTestdata(t, "stat"))
	want := procStat{Comm: "a (weird) name", PPid: 4200, UTime: 1234, STime: 567}
	if err != nil || got != want {
		t.Fatalf("parseStat(testdata/stat) = %+v, %v; want %+v", got, err, want)
	}
	if ns := got.CPUNanos(); ns != 1801*10_000_000 {
		t.Errorf("CPUNanos() = %d; want %d (1801 ticks of 10 ms)", ns, 1801*10_000_000)
	}
	self, err := os.ReadFile("/proc/self/stat")
	if err == nil {
		if s, err := parseStat(self); err != nil || s.PPid != os.Getppid() {
			t.Errorf("parseStat(/proc/self/stat) = %+v, %v; want ppid %d", s, err, os.Getppid())
		}
	}
}

func TestParseStatHostile(t *testing.T) {
	tests := []struct{ name, in, wantErr string }{
		{"empty", "", "no (comm)"},
		{"no parentheses", "1 init S 0 1 1", "no (comm)"},
		{"only a close", "1 init) S 0 1 1", "no (comm)"},
		{"cut short", "1 (init) S 0 1 1 0 -1", "fields after the command name"},
		{"utime not a number", "1 (x) S 0 1 1 0 -1 0 0 0 0 0 lots 5 0 0", "want whole numbers"},
		{"negative stime", "1 (x) S 0 1 1 0 -1 0 0 0 0 0 4 -5 0 0", "want whole numbers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "/proc/<pid>/stat") {
				t.Errorf("parseStat(%q) = %+v, %v; want an error naming the file and %q", tt.in, got, err, tt.wantErr)
			}
		})
	}
}

func TestParseCPUCounters(t *testing.T) {
	if got, err := parseCPUAcctUsage(readTestdata(t, "cpuacct.usage")); err != nil || got == 0 {
		t.Errorf("parseCPUAcctUsage(testdata) = %d, %v; want the host's nanoseconds", got, err)
	}
	if got, err := parseCPUAcctUsage([]byte("987654321\n")); err != nil || got != 987654321 {
		t.Errorf("parseCPUAcctUsage(987654321) = %d, %v", got, err)
	}
	if got, err := parseCPUStat(readTestdata(t, "cpu.stat")); err != nil || got != 1234567000 {
		t.Errorf("parseCPUStat(testdata/cpu.stat) = %d, %v; want 1234567000 ns (usage_usec)", got, err)
	}
	hostile := []struct {
		name  string
		parse func([]byte) (uint64, error)
		in    string
		want  string
	}{
		{"cpuacct.usage empty", parseCPUAcctUsage, "", "cpuacct.usage"},
		{"cpuacct.usage negative", parseCPUAcctUsage, "-5\n", "cpuacct.usage"},
		{"cpuacct.usage per-cpu list", parseCPUAcctUsage, "12 34\n", "cpuacct.usage"},
		{"cpu.stat without usage_usec", parseCPUStat, "user_usec 5\nsystem_usec 6\n", "no usage_usec"},
		{"cpu.stat usage_usec not a number", parseCPUStat, "usage_usec x\n", "usage_usec"},
	}
	for _, tt := range hostile {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.parse([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parse(%q) = %d, %v; want an error saying %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestParseProcCgroup(t *testing.T) {
	const id = "/docker/4f1c2a9e8d7b6a5c4f1c2a9e8d7b6a5c4f1c2a9e8d7b6a5c4f1c2a9e8d7b6a5c"
	v1, err := parseProcCgroup(readTestdata(t, "cgroup_v1"))
	if err != nil || v1.V1["memory"] != id || v1.V1["cpuacct"] != id || v1.V1["systemd"] != id || v1.V2 != "/" {
		t.Errorf("parseProcCgroup(testdata/cgroup_v1) = %+v, %v; want memory and cpuacct at %s (and v2 at /)", v1, err, id)
	}
	v2, err := parseProcCgroup(readTestdata(t, "cgroup_v2"))
	if err != nil || len(v2.V1) != 0 || v2.V2 != "/system.slice/docker-0123456789abcdef.scope" {
		t.Errorf("parseProcCgroup(testdata/cgroup_v2) = %+v, %v; want only the v2 path", v2, err)
	}
	both, err := parseProcCgroup([]byte("4:cpu,cpuacct:/docker/x\n"))
	if err != nil || both.V1["cpu"] != "/docker/x" || both.V1["cpuacct"] != "/docker/x" {
		t.Errorf("parseProcCgroup(cpu,cpuacct) = %+v, %v; want both controllers", both, err)
	}
	for _, in := range []string{"", "garbage\n", "3:memory:relative/path\n", "3:memory\n"} {
		if got, err := parseProcCgroup([]byte(in)); err == nil || !strings.Contains(err.Error(), "/proc/<pid>/cgroup") {
			t.Errorf("parseProcCgroup(%q) = %+v, %v; want an error naming /proc/<pid>/cgroup", in, got, err)
		}
	}
}

func TestParseProcs(t *testing.T) {
	if got, err := parseProcs([]byte("12\n345\n")); err != nil || !reflect.DeepEqual(got, []int{12, 345}) {
		t.Errorf("parseProcs = %v, %v; want [12 345]", got, err)
	}
	if got, err := parseProcs(nil); err != nil || len(got) != 0 {
		t.Errorf("parseProcs(empty) = %v, %v; want none (a container whose processes all ended)", got, err)
	}
	for _, in := range []string{"12\nabc\n", "0\n", "-3\n"} {
		if got, err := parseProcs([]byte(in)); err == nil || !strings.Contains(err.Error(), "cgroup.procs") {
			t.Errorf("parseProcs(%q) = %v, %v; want an error naming cgroup.procs", in, got, err)
		}
	}
}
