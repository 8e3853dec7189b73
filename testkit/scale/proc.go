package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The kernel's files this command reads, parsed by pure functions (tested
// against testdata) and read by thin wrappers.

// userHZ is the unit of utime and stime in /proc/<pid>/stat: USER_HZ is
// 100 on every Linux architecture Go supports (the kernel converts to it
// whatever its internal HZ).
const userHZ = 100

// parseSmapsRollupPss returns the Pss line of /proc/<pid>/smaps_rollup, in
// bytes.
func parseSmapsRollupPss(data []byte) (int64, error) {
	return kBField(data, "Pss:", "smaps_rollup")
}

// parseMeminfo returns one field of /proc/meminfo ("MemAvailable"), in
// bytes.
func parseMeminfo(data []byte, field string) (int64, error) {
	return kBField(data, field+":", "/proc/meminfo")
}

// parseStatusRSS returns VmRSS of /proc/<pid>/status, in bytes.
func parseStatusRSS(data []byte) (int64, error) {
	return kBField(data, "VmRSS:", "/proc/<pid>/status")
}

// kBField finds the line "<prefix>   N kB" and returns N×1024.
func kBField(data []byte, prefix, file string) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), prefix)
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("%s: %s%s: want a number of kB", file, prefix, rest)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s: %s%s: want a number of kB", file, prefix, rest)
		}
		return n * 1024, nil
	}
	return 0, fmt.Errorf("%s has no %q line", file, prefix)
}

// procStat is what this command needs of /proc/<pid>/stat.
type procStat struct {
	Comm         string
	PPid         int
	UTime, STime uint64 // in USER_HZ ticks
}

// CPUNanos is the process's user plus system time, in nanoseconds.
func (s procStat) CPUNanos() uint64 { return (s.UTime + s.STime) * (1e9 / userHZ) }

// parseStat parses /proc/<pid>/stat. The command name sits in parentheses
// and may itself hold spaces and parentheses, so the fields after it are
// counted from the last ')'.
func parseStat(data []byte) (procStat, error) {
	s := string(bytes.TrimSpace(data))
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return procStat{}, fmt.Errorf("/proc/<pid>/stat: no (comm) in %q", abbrev(s))
	}
	// After ") ": state(3) ppid(4) ... utime(14) stime(15), 1-based in proc(5).
	f := strings.Fields(s[end+1:])
	if len(f) < 13 {
		return procStat{}, fmt.Errorf("/proc/<pid>/stat: %d fields after the command name, want at least 13", len(f))
	}
	ppid, err1 := strconv.Atoi(f[1])
	ut, err2 := strconv.ParseUint(f[11], 10, 64)
	st, err3 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return procStat{}, fmt.Errorf("/proc/<pid>/stat: ppid %q, utime %q, stime %q: want whole numbers", f[1], f[11], f[12])
	}
	return procStat{Comm: s[open+1 : end], PPid: ppid, UTime: ut, STime: st}, nil
}

// parseCPUAcctUsage parses cgroup v1's cpuacct.usage: nanoseconds.
func parseCPUAcctUsage(data []byte) (uint64, error) {
	n, err := strconv.ParseUint(string(bytes.TrimSpace(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cpuacct.usage: %q: want a whole number of nanoseconds", abbrev(string(data)))
	}
	return n, nil
}

// parseCPUStat parses cgroup v2's cpu.stat and returns usage_usec in
// nanoseconds.
func parseCPUStat(data []byte) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == "usage_usec" {
			n, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("cpu.stat: usage_usec %q: want a whole number", f[1])
			}
			return n * 1000, nil
		}
	}
	return 0, fmt.Errorf("cpu.stat has no usage_usec line")
}

// cgroupPaths is /proc/<pid>/cgroup: the path of the process in each v1
// hierarchy (by controller) and in the v2 one ("" when it has none).
type cgroupPaths struct {
	V1 map[string]string // "memory" → "/docker/<id>"; "cpu,cpuacct" gives both names
	V2 string
}

// parseProcCgroup parses /proc/<pid>/cgroup: lines "ID:controllers:path";
// cgroup v2's line is "0::path".
func parseProcCgroup(data []byte) (cgroupPaths, error) {
	p := cgroupPaths{V1: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[2], "/") {
			return cgroupPaths{}, fmt.Errorf("/proc/<pid>/cgroup: line %q: want ID:controllers:/path", abbrev(line))
		}
		if parts[0] == "0" && parts[1] == "" {
			p.V2 = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			p.V1[strings.TrimPrefix(c, "name=")] = parts[2]
		}
	}
	if len(p.V1) == 0 && p.V2 == "" {
		return cgroupPaths{}, fmt.Errorf("/proc/<pid>/cgroup is empty")
	}
	return p, nil
}

// parseProcs parses cgroup.procs: one pid a line.
func parseProcs(data []byte) ([]int, error) {
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("cgroup.procs: %q is not a pid", f)
		}
		pids = append(pids, n)
	}
	return pids, nil
}

func abbrev(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// The readers. root is "/" except in tests.

func readPss(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, err
	}
	return parseSmapsRollupPss(b)
}

func readRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return parseStatusRSS(b)
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	return parseStat(b)
}

func readMemAvailable() (int64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	return parseMeminfo(b, "MemAvailable")
}

// cgroup is where one container's processes and CPU time are, in
// whichever cgroup version the host runs its containers.
type cgroup struct {
	procs string // cgroup.procs
	cpu   string // cpuacct.usage (v1) or cpu.stat (v2)
	v2    bool
}

const cgroupRoot = "/sys/fs/cgroup"

// findCgroup locates the cgroup of the container whose first process is
// pid, from /proc/<pid>/cgroup: the v1 memory and cpuacct hierarchies when
// the host mounts them, else the v2 unified one.
func findCgroup(pid int) (cgroup, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return cgroup{}, err
	}
	p, err := parseProcCgroup(b)
	if err != nil {
		return cgroup{}, err
	}
	if mem, ok := p.V1["memory"]; ok {
		acct, ok := p.V1["cpuacct"]
		if !ok {
			return cgroup{}, fmt.Errorf("process %d has a v1 memory cgroup but no cpuacct one", pid)
		}
		cg := cgroup{procs: filepath.Join(cgroupRoot, "memory", mem, "cgroup.procs")}
		for _, dir := range []string{"cpuacct", "cpu,cpuacct", "cpuacct,cpu"} {
			f := filepath.Join(cgroupRoot, dir, acct, "cpuacct.usage")
			if _, err := os.Stat(f); err == nil {
				cg.cpu = f
				return cg, nil
			}
		}
		return cgroup{}, fmt.Errorf("no cpuacct.usage for cgroup %s under %s", acct, cgroupRoot)
	}
	if p.V2 == "" {
		return cgroup{}, fmt.Errorf("process %d is in neither a v1 memory cgroup nor a v2 one", pid)
	}
	for _, root := range []string{cgroupRoot, filepath.Join(cgroupRoot, "unified")} {
		dir := filepath.Join(root, p.V2)
		if _, err := os.Stat(filepath.Join(dir, "cpu.stat")); err == nil {
			return cgroup{procs: filepath.Join(dir, "cgroup.procs"), cpu: filepath.Join(dir, "cpu.stat"), v2: true}, nil
		}
	}
	return cgroup{}, fmt.Errorf("no cpu.stat for the v2 cgroup %s under %s", p.V2, cgroupRoot)
}

func (c cgroup) pids() ([]int, error) {
	b, err := os.ReadFile(c.procs)
	if err != nil {
		return nil, err
	}
	return parseProcs(b)
}

// cpuNanos is the cgroup's CPU time so far.
func (c cgroup) cpuNanos() (uint64, error) {
	b, err := os.ReadFile(c.cpu)
	if err != nil {
		return 0, err
	}
	if c.v2 {
		return parseCPUStat(b)
	}
	return parseCPUAcctUsage(b)
}
