package lifecycle

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Network attempts of an offline container (seed 002 §11, issue 25). A
// container without network has only a loopback: a connect or a send to
// any other address fails with ENETUNREACH, and the kernel counts each
// such failure in the container's own network namespace, IPv4 in
// /proc/<pid>/net/snmp ("Ip:" OutNoRoutes, tcp_v4_connect, udp_sendmsg,
// ping), IPv6 in /proc/<pid>/net/snmp6 (Ip6OutNoRoutes; Offline enables
// IPv6 on the loopback so that such connects reach the route lookup).
// A DNS lookup is such a send. choird reads them from the host, through
// the container's init process (the engine's State.Pid): nothing in the
// container can reset or forge them (no interface resets SNMP counters,
// and making another namespace needs CAP_SYS_ADMIN, which it has not).
// They count failed attempts, not destinations: a tool connecting to the
// container's own loopback is not counted, and neither is a socket of
// another family (a Unix socket; raw sockets need CAP_NET_RAW).

// NetAttemptsEvery is how often the counters of offline sessions are read
// (the control plane's health-probe cadence).
const NetAttemptsEvery = 5 * time.Second

// procRoot is where /proc is (tests point it elsewhere).
var procRoot = "/proc"

// netWatch is what choird knows of an offline container's counters.
type netWatch struct {
	mu       sync.Mutex
	pid      int    // the container's init process, 0 when not found
	why      string // why the counters cannot be read ("" = they can)
	count    int64  // OutNoRoutes + Ip6OutNoRoutes, as last read
	reported int64  // the count last reported (an interactive session's notice)
}

// NetAttempts is the network attempts counted in the session's container
// so far (as last read), and why they cannot be counted ("" when they
// can).
func (r *Run) NetAttempts() (int64, string) {
	r.net.mu.Lock()
	defer r.net.mu.Unlock()
	return r.net.count, r.net.why
}

// findNetns finds the counters of an offline session's container: its
// init process's, when that process is in this host's view (its cgroup
// names the container) and in a namespace with only a loopback. When it is
// not (an engine on another host, in another PID namespace), the attempts
// are not counted, and the log says why once.
func (m *Manager) findNetns(ctx context.Context, r *Run) {
	pid, why := 0, ""
	c, err := m.runtime().Inspect(ctx, r.ContainerID)
	switch {
	case err != nil:
		why = "inspect the container: " + err.Error()
	case c.Pid <= 0:
		why = "the engine reports no process of the container on this host"
	default:
		pid = c.Pid
		why = checkNetns(pid, r.ContainerID)
	}
	if why == "" {
		if _, err := readNoRoutes(pid); err != nil {
			why = err.Error()
		}
	}
	r.net.mu.Lock()
	r.net.pid, r.net.why = pid, why
	r.net.mu.Unlock()
	if why != "" {
		m.logf(r, "network attempts of this offline container are not counted", "reason", why)
	}
}

// checkNetns says why pid cannot stand for the container id ("" when it
// can): its cgroup must name the container, and its network namespace
// must hold nothing but a loopback, as a container without network does
// (so never choird's own). Both files are readable by choird's user
// (unlike /proc/<pid>/ns/net, which needs ptrace rights over the
// container's root).
func checkNetns(pid int, id string) string {
	dir := filepath.Join(procRoot, strconv.Itoa(pid))
	cg, err := os.ReadFile(filepath.Join(dir, "cgroup"))
	if err != nil {
		return "read the container's cgroup: " + err.Error()
	}
	if id == "" || !bytes.Contains(cg, []byte(id)) {
		return fmt.Sprintf("process %d is not the container's on this host (its cgroup does not name it): is the engine on another host or in another PID namespace?", pid)
	}
	dev, err := os.ReadFile(filepath.Join(dir, "net", "dev"))
	if err != nil {
		return "read the container's network interfaces: " + err.Error()
	}
	if ifs := interfaces(dev); len(ifs) != 1 || ifs[0] != "lo" {
		return fmt.Sprintf("the container's network namespace has the interfaces %v, not a loopback only: it is not a container without network", ifs)
	}
	return ""
}

// interfaces lists the interface names of /proc/net/dev.
func interfaces(dev []byte) []string {
	var out []string
	for _, line := range strings.Split(string(dev), "\n") {
		name, _, ok := strings.Cut(line, ":")
		if name = strings.TrimSpace(name); ok && name != "" && !strings.Contains(name, "|") {
			out = append(out, name)
		}
	}
	return out
}

// readNet reads the counters again (if they can be read) and returns the
// count. A container that has exited keeps the last count read.
func (m *Manager) readNet(r *Run) int64 {
	r.net.mu.Lock()
	defer r.net.mu.Unlock()
	if r.net.pid == 0 || r.net.why != "" {
		return r.net.count
	}
	n, err := readNoRoutes(r.net.pid)
	if err == nil && n >= r.net.count {
		r.net.count = n
	}
	return r.net.count
}

// watchNetAttempts reads the counters of every offline session; a rise
// in an interactive session's is logged and told (NetworkAttempts, once
// per rise). A run's count goes to its Outcome, and the runner records
// the anomaly.
func (m *Manager) watchNetAttempts() {
	for _, r := range m.allRuns() {
		if !r.Offline || r.getState() != StateRunning {
			continue
		}
		n := m.readNet(r)
		r.net.mu.Lock()
		added := n - r.net.reported
		if added > 0 {
			r.net.reported = n
		}
		r.net.mu.Unlock()
		if added <= 0 {
			continue
		}
		m.logWarn(r, "network attempts from an offline container: something in it tried to reach the network directly", "attempts", n, "new", added)
		if r.perf == nil && m.NetworkAttempts != nil {
			go m.NetworkAttempts(r.AgentID, r.SessionID, n, added)
		}
	}
}

// readNoRoutes sums OutNoRoutes (IPv4) and Ip6OutNoRoutes of a
// process's network namespace.
func readNoRoutes(pid int) (int64, error) {
	dir := filepath.Join(procRoot, strconv.Itoa(pid), "net")
	snmp, err := os.ReadFile(filepath.Join(dir, "snmp"))
	if err != nil {
		return 0, fmt.Errorf("read the container's network counters: %w", err)
	}
	v4, err := parseSNMP(snmp, "Ip", "OutNoRoutes")
	if err != nil {
		return 0, fmt.Errorf("%s: %w", filepath.Join(dir, "snmp"), err)
	}
	var v6 int64
	if snmp6, err := os.ReadFile(filepath.Join(dir, "snmp6")); err == nil { // absent without IPv6 in the kernel
		if v6, err = parseSNMP6(snmp6, "Ip6OutNoRoutes"); err != nil {
			return 0, fmt.Errorf("%s: %w", filepath.Join(dir, "snmp6"), err)
		}
	}
	return v4 + v6, nil
}

// parseSNMP finds a counter in /proc/net/snmp's form: for each protocol a
// line of names and a line of values, both prefixed "<proto>:".
func parseSNMP(data []byte, proto, name string) (int64, error) {
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != proto+":" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		if len(f) != len(names) {
			return 0, fmt.Errorf("%s values do not match their names (%d against %d)", proto, len(f), len(names))
		}
		for i, n := range names {
			if n == name {
				return strconv.ParseInt(f[i], 10, 64)
			}
		}
		return 0, fmt.Errorf("no %s %s counter", proto, name)
	}
	return 0, fmt.Errorf("no %s counters", proto)
}

// parseSNMP6 finds a counter in /proc/net/snmp6's form: a name and a
// value per line.
func parseSNMP6(data []byte, name string) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == name {
			return strconv.ParseInt(f[1], 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s counter", name)
}

// logWarn is logf at warning level.
func (m *Manager) logWarn(r *Run, msg string, args ...any) {
	args = append([]any{"agent_id", r.AgentID, "session_id", r.SessionID}, args...)
	m.Log.Warn(msg, args...)
	if al, err := m.Logs.Agent(r.AgentID); err == nil {
		al.Warn(msg, args[2:]...)
	}
}
