package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// What the simulator reads of a process in /proc: pure parsers (tested)
// and thin readers.

// userHZ is the unit of utime and stime in /proc/<pid>/stat (USER_HZ is
// 100 on every Linux architecture Go supports).
const userHZ = 100

// cpuNanos parses /proc/<pid>/stat and returns user plus system time in
// nanoseconds. The command name is in parentheses and may hold spaces, so
// fields are counted from the last ')'.
func cpuNanos(stat []byte) (uint64, error) {
	s := string(bytes.TrimSpace(stat))
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return 0, fmt.Errorf("/proc/<pid>/stat: no (comm) in %q", abbrev(s, 80))
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/<pid>/stat: %d fields after the command name, want at least 13", len(f))
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/<pid>/stat: utime %q, stime %q: want whole numbers", f[11], f[12])
	}
	return (ut + st) * (1e9 / userHZ), nil
}

// field returns the number of the line "<name>: N [kB]" of a /proc file
// (status, smaps_rollup), kB turned into bytes.
func field(data []byte, name string) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), name+":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 1 || len(f) > 2 || (len(f) == 2 && f[1] != "kB") {
			return 0, fmt.Errorf("%s:%s: want a number, or a number of kB", name, rest)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s:%s: want a number", name, rest)
		}
		if len(f) == 2 {
			n *= 1024
		}
		return n, nil
	}
	return 0, fmt.Errorf("no %q line", name)
}

// procSample is one process at one instant.
type procSample struct {
	cpu      uint64 // nanoseconds of CPU so far
	rss, pss int64  // bytes
	threads  int64
	fds      int
}

func readProc(pid int) (procSample, error) {
	var s procSample
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	if s.cpu, err = cpuNanos(b); err != nil {
		return s, err
	}
	if b, err = os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err != nil {
		return s, err
	}
	if s.rss, err = field(b, "VmRSS"); err != nil {
		return s, err
	}
	if s.threads, err = field(b, "Threads"); err != nil {
		return s, err
	}
	if b, err = os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid)); err == nil {
		s.pss, _ = field(b, "Pss")
	}
	if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		s.fds = len(fds)
	}
	return s, nil
}

// loadAverage is the first three fields of /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
