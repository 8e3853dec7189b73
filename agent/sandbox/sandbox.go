// Package sandbox keeps choir-agent out of reach of the processes its tools
// start (design §5.1, DESIGN.md "Threat model").
//
// choird starts the container as root with every capability dropped except
// SETUID, SETGID and KILL. At start, Enter makes choir-agent:
//
//   - act on files as the workspace's owner (its fsuid and fsgid on every
//     thread), so what it writes in /workspace belongs to that user;
//   - non-dumpable, so no process of another uid (and none without
//     CAP_SYS_PTRACE) can read its /proc/<pid>/{environ,mem,maps,fd} or
//     ptrace it;
//
// and every process choir-agent starts afterwards (choir.exec's bash,
// external tools, ripgrep) runs as the workspace's owner, never root, with
// no capability, through the launcher (Launch): choir-agent re-executed with
// LaunchArg, which raises its own oom_score_adj to the maximum (the kernel
// kills tools before the agent when the container runs out of memory),
// bounds the tools' processes below the container's pids limit (a fork bomb
// cannot take the threads the agent needs) and then executes the tool.
// A tool process may signal, trace or read only processes of its own uid:
// choir-agent and docker-init (PID 1) are root's, so `kill -9 -1`, `kill
// -STOP <agent>` or a ptrace attach fail with EPERM.
//
// Outside such a container (tests, development) Enter is not called and
// tools run as choir-agent's own user.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// LaunchArg, as choir-agent's first argument, makes it the launcher;
// IdleArg makes it a process that waits to be killed (the NPROC probe's).
const (
	LaunchArg = "--choir-launch"
	IdleArg   = "--choir-idle"
	probeArg  = "--choir-probe"
)

// ProbeProcs is how many processes the tools' process limit must leave
// room for at start, or it is dropped (see Enter).
const ProbeProcs = 32

// ToolOOMScoreAdj is the oom_score_adj of every tool process: the first the
// kernel's OOM killer picks.
const ToolOOMScoreAdj = 1000

// AgentReserve is how many of the container's pids (processes and threads)
// tools may never take: choir-agent's own threads and docker-init.
const AgentReserve = 64

// Sandbox is who tool processes run as and how they start.
type Sandbox struct {
	UID, GID int
	// Launcher is choir-agent's own executable.
	Launcher string
	// NProc is RLIMIT_NPROC for tools (0: none), the container's pids limit
	// less AgentReserve.
	NProc uint64
	// NoNProc says why NProc is 0 although the container has a pids limit.
	NoNProc string
}

var current atomic.Pointer[Sandbox]

// Current is the sandbox Enter installed, or nil.
func Current() *Sandbox { return current.Load() }

// Enter hardens choir-agent and installs the sandbox for its tools. It
// needs root with CAP_SETUID and CAP_SETGID (choird's container profile) and
// a workspace owned by a user other than root: tools run as that user, and
// root would share the agent's uid.
func Enter(workspace string) (*Sandbox, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("choir-agent runs as uid %d: the container must start it as root (with only CAP_SETUID, CAP_SETGID and CAP_KILL) so that its tools can run as another user", os.Geteuid())
	}
	fi, err := os.Stat(workspace)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, fmt.Errorf("workspace %s: no owner information", workspace)
	}
	if st.Uid == 0 {
		return nil, fmt.Errorf("workspace %s is owned by root: tools run as the workspace's owner and must not share choir-agent's uid; chown it to an unprivileged user on the host", workspace)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find choir-agent's executable: %w", err)
	}
	sb := &Sandbox{UID: int(st.Uid), GID: int(st.Gid), Launcher: exe}
	if max, ok := pidsMax(); ok && max > AgentReserve*2 {
		sb.NProc = max - AgentReserve
		// RLIMIT_NPROC counts the user's processes on the whole host (there
		// is no user namespace): a workspace owner with many processes
		// there would leave tools unable to fork at all. Then the limit is
		// dropped, and said why.
		if err := sb.probe(); err != nil {
			sb.NoNProc = fmt.Sprintf("uid %d cannot start %d processes under a limit of %d (%v): it has processes outside this container; a dedicated user for workspaces keeps fork bombs from the agent's threads", sb.UID, ProbeProcs, sb.NProc, err)
			sb.NProc = 0
		}
	}
	// Supplementary groups: none (root's would reach group-0 files).
	if err := syscall.Setgroups(nil); err != nil {
		return nil, fmt.Errorf("drop supplementary groups: %w", err)
	}
	if err := setFS(unix.SYS_SETFSGID, sb.GID); err != nil {
		return nil, err
	}
	if err := setFS(unix.SYS_SETFSUID, sb.UID); err != nil {
		return nil, err
	}
	// After the credential changes: the kernel resets dumpability on every
	// change of fsuid, so this must come last.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("make choir-agent non-dumpable: %w", err)
	}
	current.Store(sb)
	return sb, nil
}

// probe starts ProbeProcs idle processes as the tools would, under NProc.
func (sb *Sandbox) probe() error {
	cmd := exec.Command(sb.Launcher, LaunchArg, strconv.FormatUint(sb.NProc, 10), probeArg)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(sb.UID), Gid: uint32(sb.GID), Groups: []uint32{}}}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// runProbe, in the launcher, starts n idle copies of choir-agent and kills
// them; the first that cannot start fails it.
func runProbe(n int) error {
	var pids []int
	defer func() {
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
			var ws syscall.WaitStatus
			syscall.Wait4(pid, &ws, 0, nil)
		}
	}()
	for i := 0; i < n; i++ {
		pid, err := syscall.ForkExec("/proc/self/exe", []string{"choir-agent", IdleArg}, &syscall.ProcAttr{})
		if err != nil {
			return fmt.Errorf("process %d of %d: %w", i+1, n, err)
		}
		pids = append(pids, pid)
	}
	return nil
}

// setFS sets the fsuid or fsgid of every thread (setfsuid is per thread;
// AllThreadsSyscall needs a binary built without cgo, as choir-agent is).
// setfsuid reports no error, so the result is read back.
func setFS(trap uintptr, id int) error {
	name := map[uintptr]string{unix.SYS_SETFSUID: "fsuid", unix.SYS_SETFSGID: "fsgid"}[trap]
	if _, _, errno := syscall.AllThreadsSyscall(trap, uintptr(id), 0, 0); errno != 0 {
		return fmt.Errorf("set the %s of every thread to %d: %w", name, id, errno)
	}
	got, _, _ := syscall.RawSyscall(trap, ^uintptr(0), 0, 0) // -1: read only
	if int(got) != id {
		return fmt.Errorf("set the %s to %d: it is %d (is CAP_SETUID/CAP_SETGID missing?)", name, id, int(got))
	}
	return nil
}

// AsRoot runs fn with root's fsuid and fsgid, on a thread of its own, so
// that what fn creates belongs to root and tools cannot change it
// (gitident's files in /run); fn must not start goroutines that touch
// files. Every other thread keeps acting as the workspace's owner. The
// thread is released only once its ids are back and choir-agent is
// non-dumpable again (a change of fsuid resets that); otherwise it ends
// with fn's goroutine. Without a sandbox fn just runs.
func AsRoot(fn func() error) error {
	sb := current.Load()
	if sb == nil {
		return fn()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		var err error
		if err = setThreadFS(0, 0); err == nil {
			err = fn()
		}
		if setThreadFS(sb.UID, sb.GID) == nil && unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// setThreadFS sets the calling thread's fsuid and fsgid, and checks them.
func setThreadFS(uid, gid int) error {
	syscall.RawSyscall(unix.SYS_SETFSGID, uintptr(gid), 0, 0)
	syscall.RawSyscall(unix.SYS_SETFSUID, uintptr(uid), 0, 0)
	u, _, _ := syscall.RawSyscall(unix.SYS_SETFSUID, ^uintptr(0), 0, 0)
	g, _, _ := syscall.RawSyscall(unix.SYS_SETFSGID, ^uintptr(0), 0, 0)
	if int(u) != uid || int(g) != gid {
		return fmt.Errorf("set a thread's fsuid:fsgid to %d:%d: it is %d:%d (is CAP_SETUID/CAP_SETGID missing?)", uid, gid, int(u), int(g))
	}
	return nil
}

// pidsMax reads the container's pids limit (cgroup v1 or v2).
func pidsMax() (uint64, bool) {
	for _, p := range []string{"/sys/fs/cgroup/pids/pids.max", "/sys/fs/cgroup/pids.max"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		return n, err == nil
	}
	return 0, false
}

// Command is exec.CommandContext for a tool process: under the sandbox it
// runs as the workspace's owner through the launcher; without one, directly.
// Its environment is Env(), never choir-agent's own. The caller sets Dir,
// the streams, SysProcAttr fields other than Credential, and may narrow Env.
func Command(ctx context.Context, path string, args ...string) *exec.Cmd {
	sb := current.Load()
	if sb == nil {
		cmd := exec.CommandContext(ctx, path, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{}
		cmd.Env = Env()
		return cmd
	}
	largs := []string{LaunchArg, strconv.FormatUint(sb.NProc, 10), path}
	cmd := exec.CommandContext(ctx, sb.Launcher, append(largs, args...)...)
	cmd.Args[0] = path // what ps shows as the tool's name until it executes
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uint32(sb.UID), Gid: uint32(sb.GID), Groups: []uint32{}},
	}
	cmd.Env = Env()
	return cmd
}

// running counts the tool processes started and not yet waited for; mu
// also holds new starts back while a sweep runs.
var (
	mu      sync.Mutex
	running int
)

// Begin is called before a tool process starts; the returned end, after it
// has been waited for. When the last running tool process ends, the sandbox
// sweeps: every process left in the container but docker-init and
// choir-agent (a daemon that left its process group with setsid, what a
// fork bomb left behind) is killed. Nothing a tool starts outlives the
// calls that are running. Without a sandbox, end does nothing more.
func Begin() (end func()) {
	mu.Lock()
	running++
	mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			if running--; running == 0 && current.Load() != nil {
				sweep()
			}
		})
	}
}

// sweep kills every process of the container but PID 1 and choir-agent:
// kill(-1) skips init and the caller. It repeats while anything is left (a
// process in the middle of a fork, a zombie docker-init has not reaped
// yet), within a bound.
func sweep() {
	for i := 0; i < 200; i++ {
		if err := syscall.Kill(-1, syscall.SIGKILL); err == syscall.ESRCH {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// Launch is the launcher: args are what follows LaunchArg (the NPROC limit,
// the executable, its arguments). It never returns on success. It runs as
// the tool's user already, with no capability.
func Launch(args []string) error {
	if len(args) < 2 {
		return errors.New("usage: choir-agent " + LaunchArg + " NPROC PATH [ARG...]")
	}
	nproc, err := strconv.ParseUint(args[0], 10, 64)
	if err != nil {
		return fmt.Errorf("launcher: NPROC %q: %w", args[0], err)
	}
	if err := os.WriteFile("/proc/self/oom_score_adj", []byte(strconv.Itoa(ToolOOMScoreAdj)), 0); err != nil {
		return fmt.Errorf("launcher: raise oom_score_adj: %w", err)
	}
	if nproc > 0 {
		lim := unix.Rlimit{Cur: nproc, Max: nproc}
		if err := unix.Setrlimit(unix.RLIMIT_NPROC, &lim); err != nil {
			return fmt.Errorf("launcher: limit processes to %d: %w", nproc, err)
		}
	}
	if args[1] == probeArg {
		if err := runProbe(ProbeProcs); err != nil {
			return err
		}
		os.Exit(0)
	}
	path := args[1]
	argv := append([]string{path}, args[2:]...)
	if !strings.Contains(path, "/") {
		if path, err = exec.LookPath(path); err != nil {
			return fmt.Errorf("launcher: %w", err)
		}
	}
	// The launcher's environment is the one Command gave it: the tool's.
	return syscall.Exec(path, argv, os.Environ())
}

// OOMKills counts the container's OOM kills so far (cgroup v1
// memory.oom_control or v2 memory.events); false when neither is readable.
func OOMKills() (uint64, bool) {
	for _, p := range []string{"/sys/fs/cgroup/memory/memory.oom_control", "/sys/fs/cgroup/memory.events"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
				n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
				return n, err == nil
			}
		}
	}
	return 0, false
}

// Path is the PATH of tool processes.
const Path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Env is the whole environment of a tool process, built from an allowlist
// and never from choir-agent's own (which held the lease token): PATH, HOME,
// LANG, TERM, the agent's non-secret ids and what SetToolEnv added.
func Env() []string {
	env := []string{"PATH=" + Path, "HOME=/tmp", "LANG=C.UTF-8", "TERM=dumb"}
	for _, k := range []string{"CHOIR_AGENT_ID", "CHOIR_SESSION_ID"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	if extra := toolEnv.Load(); extra != nil {
		env = append(env, *extra...)
	}
	return env
}

var toolEnv atomic.Pointer[[]string]

// SetToolEnv sets the variables ("NAME=value") Env adds from now on: never
// a secret, only where to find things (gitident's GIT_CONFIG_SYSTEM).
func SetToolEnv(kv ...string) {
	kv = append([]string(nil), kv...)
	toolEnv.Store(&kv)
}
