package dockertest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The private engine lives in a short path (unix socket paths are limited
// to 108 bytes). Its two lock files live beside it, never inside, because
// the directory is removed when the engine stops:
//   - ctlLock is held exclusively while a binary starts or stops the engine;
//   - usersLock is held shared by every binary using it. The binary that can
//     take it exclusively on leaving is the last user, and stops the engine.
//
// A binary that dies releases its locks with its file descriptors; the next
// one reuses or restarts the engine and the last one stops it.
const (
	privateDir = "/tmp/choir-dockertest"
	ctlLock    = privateDir + ".lock"
	usersLock  = privateDir + ".users"
	marker     = ".choir-engine" // same marker as engine.sh: this directory is ours to remove
)

type privateEngine struct {
	dir   string
	users *os.File // holds the shared lock while this binary uses the engine
}

// acquirePrivate makes sure the private engine runs and takes a share of it.
// It returns the engine's DOCKER_HOST.
func acquirePrivate(ctx context.Context, dockerd string) (*privateEngine, string, error) {
	ctl, err := lockFile(ctlLock, syscall.LOCK_EX)
	if err != nil {
		return nil, "", err
	}
	defer ctl.Close() // closing releases the lock

	host := "unix://" + filepath.Join(privateDir, "docker.sock")
	if c, err := connect(ctx, host); err == nil {
		c.Close()
	} else {
		stopEngine(privateDir) // leftovers of a binary that died, or a hung engine
		if err := startEngine(ctx, dockerd, privateDir); err != nil {
			return nil, "", err
		}
	}
	users, err := lockFile(usersLock, syscall.LOCK_SH)
	if err != nil {
		return nil, "", err
	}
	return &privateEngine{dir: privateDir, users: users}, host, nil
}

// release gives up this binary's share and stops the engine if no other
// binary holds one.
func (p *privateEngine) release() {
	ctl, err := lockFile(ctlLock, syscall.LOCK_EX)
	if err != nil {
		fmt.Fprintf(os.Stderr, "dockertest: %v; leaving the private engine running\n", err)
		p.users.Close()
		return
	}
	defer ctl.Close()
	// Converting our shared lock fails (without blocking) while another
	// binary holds one.
	if syscall.Flock(int(p.users.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
		stopEngine(p.dir)
	}
	p.users.Close()
}

func lockFile(path string, how int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}

// startEngine starts dockerd with the recipe of FACTS.md under dir, in its
// own session so that it outlives this binary when others still use it, and
// waits until it answers /_ping.
func startEngine(ctx context.Context, dockerd, dir string) error {
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s exists and is not a directory", dir)
		}
		if _, err := os.Stat(filepath.Join(dir, marker)); err != nil {
			return fmt.Errorf("%s exists and was not made by dockertest; remove it", dir)
		}
	}
	if !anyDockerd() {
		// A docker0 bridge left by a dockerd that is gone: let ours make it anew.
		_ = exec.Command("ip", "link", "delete", "docker0").Run()
	}
	for _, d := range []string{"data", "exec"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, marker), nil, 0o600); err != nil {
		return err
	}
	logPath := filepath.Join(dir, "dockerd.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	sock := filepath.Join(dir, "docker.sock")
	cmd := exec.Command(dockerd,
		"--iptables=false", "--ip6tables=false", "--storage-driver=overlay2",
		"--data-root="+filepath.Join(dir, "data"), "--exec-root="+filepath.Join(dir, "exec"),
		"--pidfile="+filepath.Join(dir, "dockerd.pid"), "-H", "unix://"+sock)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "PATH="+os.Getenv("PATH")+":/usr/local/sbin:/usr/sbin:/sbin:/usr/bin:/bin")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", dockerd, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }() // reap it whenever it ends

	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := connect(ctx, "unix://"+sock); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			tail := logTail(logPath)
			stopEngine(dir)
			return fmt.Errorf("dockerd exited during startup: %s", tail)
		case <-ctx.Done():
			tail := logTail(logPath)
			stopEngine(dir)
			return fmt.Errorf("dockerd did not answer: %w: %s", ctx.Err(), tail)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tail := logTail(logPath)
			stopEngine(dir)
			return fmt.Errorf("dockerd did not answer /_ping on %s within 30 s: %s", sock, tail)
		}
	}
}

// stopEngine stops the dockerd whose pid file is under dir (SIGTERM, then
// SIGKILL after 30 s), kills containerd processes it left, unmounts what is
// mounted under dir and removes dir. It is safe when nothing runs.
func stopEngine(dir string) {
	if pid := dockerdPID(dir); pid > 0 {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		if !waitGone(pid, 30*time.Second) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			waitGone(pid, 10*time.Second)
		}
	}
	// After a SIGKILLed dockerd, its shims and the containers under them
	// live on: kill each container's first process (which ends its PID
	// namespace), then the shim, then containerd.
	for _, pid := range strayContainerd(dir) {
		id := shimContainerID(pid)
		for _, child := range children(pid) {
			_ = syscall.Kill(child, syscall.SIGKILL)
			waitGone(child, 10*time.Second)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		waitGone(pid, 10*time.Second)
		if id != "" { // the killed container's cgroups are left empty
			cgs, _ := filepath.Glob("/sys/fs/cgroup/*/docker/" + id)
			for _, cg := range append(cgs, "/sys/fs/cgroup/docker/"+id) {
				_ = syscall.Rmdir(cg)
			}
		}
	}
	for _, m := range mountsUnder(dir) {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			fmt.Fprintf(os.Stderr, "dockertest: unmount %s: %v\n", m, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, marker)); err == nil {
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintf(os.Stderr, "dockertest: remove %s: %v\n", dir, err)
		}
	}
}

// dockerdPID returns the pid in dir's pid file when that process is a
// dockerd started for dir, else 0.
func dockerdPID(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "dockerd.pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	if comm(pid) != "dockerd" || !bytes.Contains(cmdline(pid), []byte(dir+"/")) {
		return 0
	}
	return pid
}

// anyDockerd reports whether any dockerd runs on the host.
func anyDockerd() bool {
	for _, pid := range pids() {
		if comm(pid) == "dockerd" && alive(pid) {
			return true
		}
	}
	return false
}

// strayContainerd lists containerd processes (daemon and shims) started for
// dir's exec root.
func strayContainerd(dir string) []int {
	var out []int
	needle := []byte(dir + "/exec/")
	for _, pid := range pids() {
		if strings.HasPrefix(comm(pid), "containerd") && bytes.Contains(cmdline(pid), needle) {
			out = append(out, pid)
		}
	}
	return out
}

// shimContainerID returns the container ID a containerd shim serves (its
// -id argument), or "".
func shimContainerID(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	args := strings.Split(string(b), "\x00")
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-id" && !strings.ContainsAny(args[i+1], "/.") {
			return args[i+1]
		}
	}
	return ""
}

// children lists the processes whose parent is pid.
func children(pid int) []int {
	var out []int
	for _, p := range pids() {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:])) // state, ppid, ...
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

func pids() []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

func comm(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(b))
}

func cmdline(pid int) []byte {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return bytes.ReplaceAll(b, []byte{0}, []byte{' '})
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z'
}

// waitGone waits up to d for pid to end.
func waitGone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// mountsUnder lists mount points under dir, deepest first.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		m := unescapeMountinfo(fields[4])
		if strings.HasPrefix(m, dir+"/") {
			out = append(out, m)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(out)))
	return out
}

// unescapeMountinfo undoes the octal escapes (\040 for a space) of
// /proc/self/mountinfo.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// logTail returns the end of dockerd's log for an error message.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return "dockerd log " + path + ":\n" + strings.Join(lines, "\n")
}
