package browser

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// connected reports whether the worker's browser is up, as the worker sees it.
func (w *Worker) connected() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.browser != nil && w.browser.IsConnected()
}

// chromiumPIDs lists the Chromium processes of this worker's browser: the
// ones whose HOME is the worker's state directory (set at launch), main
// process first when it can be told apart (no --type= argument).
func (w *Worker) chromiumPIDs() (main int, all []int) {
	w.mu.Lock()
	home := "HOME=" + filepath.Join(w.stateDir, "home")
	w.mu.Unlock()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(append(append([]byte{0}, env...), 0), append(append([]byte{0}, home...), 0)) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if !strings.Contains(string(cmd), "chrom") {
			continue
		}
		all = append(all, pid)
		if !strings.Contains(string(cmd), "--type=") && main == 0 {
			main = pid
		}
	}
	return main, all
}

// parentPID is pid's parent, from /proc/<pid>/stat.
func parentPID(pid int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...: comm may hold spaces; cut after its ')'.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}
