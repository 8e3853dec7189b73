package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"choir/choird/lease"
	"choir/internal/config"
	"choir/internal/rpc"
)

const snmpSample = `Ip: Forwarding DefaultTTL InReceives InHdrErrors InAddrErrors ForwDatagrams InUnknownProtos InDiscards InDelivers OutRequests OutDiscards OutNoRoutes ReasmTimeout ReasmReqds ReasmOKs ReasmFails FragOKs FragFails FragCreates OutTransmits
Ip: 1 64 0 0 0 0 0 0 0 0 0 %d 0 0 0 0 0 0 0 0
Icmp: InMsgs InErrors
Icmp: 0 0
`

const devLoopback = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0
`

const snmp6Sample = `Ip6InReceives                   	0
Ip6OutNoRoutes                  	%d
Ip6InAddrErrors                 	0
`

func TestParseSNMP(t *testing.T) {
	if n, err := parseSNMP([]byte(fmt.Sprintf(snmpSample, 7)), "Ip", "OutNoRoutes"); err != nil || n != 7 {
		t.Errorf("parseSNMP(OutNoRoutes) = %d, %v; want 7", n, err)
	}
	if n, err := parseSNMP6([]byte(fmt.Sprintf(snmp6Sample, 3)), "Ip6OutNoRoutes"); err != nil || n != 3 {
		t.Errorf("parseSNMP6 = %d, %v; want 3", n, err)
	}
	for _, bad := range []string{"", "Ip: Forwarding OutNoRoutes\n", "Ip: Forwarding OutNoRoutes\nIp: 1\n", "Ip: Forwarding OutNoRoutes\nIp: 1 x\n", "Ip: A B\nIp: 1 2\n"} {
		if n, err := parseSNMP([]byte(bad), "Ip", "OutNoRoutes"); err == nil {
			t.Errorf("parseSNMP(%q) = %d; want an error", bad, n)
		}
	}
	if _, err := parseSNMP6([]byte("Ip6InReceives 1\n"), "Ip6OutNoRoutes"); err == nil {
		t.Error("parseSNMP6 without the counter: no error")
	}
}

// fakeProc is a /proc with one container process, pid, whose counters
// the test sets; the container ids the fake engine hands out are in its
// cgroup.
type fakeProc struct {
	t   *testing.T
	dir string
	pid int
}

func newFakeProc(t *testing.T, pid int) *fakeProc {
	dir := t.TempDir()
	old := procRoot
	procRoot = dir
	t.Cleanup(func() { procRoot = old })
	p := &fakeProc{t: t, dir: dir, pid: pid}
	var cg strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&cg, "0::/docker/c%011d\n", i)
	}
	for _, f := range []struct{ path, data string }{{"cgroup", cg.String()}} {
		p.write(filepath.Join(strconv.Itoa(pid), f.path), f.data)
	}
	p.write(filepath.Join(strconv.Itoa(pid), "net", "dev"), devLoopback)
	p.set(0, 0)
	return p
}

func (p *fakeProc) write(rel, data string) {
	path := filepath.Join(p.dir, rel)
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// set makes the container's counters v4 and v6.
func (p *fakeProc) set(v4, v6 int) {
	p.write(filepath.Join(strconv.Itoa(p.pid), "net", "snmp"), fmt.Sprintf(snmpSample, v4))
	p.write(filepath.Join(strconv.Itoa(p.pid), "net", "snmp6"), fmt.Sprintf(snmp6Sample, v6))
}

// An agent in network mode "policy" runs without a route even when
// choird serves HTTP: network none, IPv6 on its loopback, its own
// socket, its model calls and connections through choird; a rise of its
// network attempts is told once per rise.
func TestPolicyAgentIsOffline(t *testing.T) {
	rig := newRunRig(t)
	proc := newFakeProc(t, 4242)
	rig.d.pid = 4242
	l, _ := rig.m.Config()
	a := l.Config.Agents["a1"]
	a.Network = config.Network{Mode: config.NetworkPolicy}
	l.Config.Agents["a1"] = a
	rig.m.HTTP = &HTTPEndpoint{URL: "https://172.17.0.1:9400", CA: []byte("ca")}
	told := make(chan [2]int64, 4)
	rig.m.NetworkAttempts = func(agentID, sessionID string, total, added int64) { told <- [2]int64{total, added} }
	ctx := context.Background()
	st, err := rig.m.Start(ctx, "a1", lease.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	rig.e.mu.Lock()
	name := rig.e.names[len(rig.e.names)-1]
	hc, cmd := rig.e.created[name], rig.e.cmds[name]
	rig.e.mu.Unlock()
	if hc.NetworkMode != "none" || hc.Sysctls["net.ipv6.conf.lo.disable_ipv6"] != "0" || !slices.Contains(cmd, "--control-plane=uds") {
		t.Errorf("policy agent's container: network %q, sysctls %v, cmd %v; want none, IPv6 on lo, the socket", hc.NetworkMode, hc.Sysctls, cmd)
	}
	call := rpc.WithCall(ctx, rpc.Call{SessionID: st.SessionID})
	hello, err := rig.m.HandleInitHello(call, rpc.InitHelloReq{AgentID: "a1", SessionID: st.SessionID, ImageVersion: "v1"})
	if err != nil || !hello.ModelProxy || !hello.Tunnel {
		t.Errorf("INIT_HELLO = model proxy %v, tunnel %v, %v; want both", hello.ModelProxy, hello.Tunnel, err)
	}
	if id, b, ok := rig.m.TunnelBindings(st.SessionID); !ok || id != "a1" || b.Notion != "wiki" {
		t.Errorf("TunnelBindings = %q %+v %v; want a1 with its Notion", id, b, ok)
	}
	rig.m.watchNetAttempts()
	proc.set(2, 1)
	rig.m.watchNetAttempts()
	rig.m.watchNetAttempts() // no rise: nothing told
	proc.set(4, 1)
	rig.m.watchNetAttempts()
	for _, want := range [][2]int64{{3, 3}, {5, 2}} {
		if got := <-told; got != want {
			t.Errorf("told (total, added) = %v; want %v", got, want)
		}
	}
	select {
	case got := <-told:
		t.Errorf("told %v more", got)
	default:
	}
	if n, why := rig.m.run("a1").NetAttempts(); n != 5 || why != "" {
		t.Errorf("NetAttempts = %d, %q; want 5", n, why)
	}

	// An open agent is on the bridge and HTTPS, with no tunnel.
	rig.m.Stop(ctx, "a1")
	a.Network = config.Network{}
	l.Config.Agents["a1"] = a
	st, err = rig.m.Start(ctx, "a1", lease.Overrides{Fresh: true})
	if err != nil {
		t.Fatal(err)
	}
	rig.e.mu.Lock()
	name = rig.e.names[len(rig.e.names)-1]
	hc, cmd = rig.e.created[name], rig.e.cmds[name]
	rig.e.mu.Unlock()
	if hc.NetworkMode != "bridge" || len(hc.Sysctls) != 0 || !slices.Contains(cmd, "--control-plane=http") {
		t.Errorf("open agent's container: network %q, sysctls %v, cmd %v; want the bridge and HTTPS", hc.NetworkMode, hc.Sysctls, cmd)
	}
	if _, _, ok := rig.m.TunnelBindings(st.SessionID); ok {
		t.Error("an open agent's connections are carried")
	}
}

// A run without network has its attempts in its Outcome; its
// connections are carried only with credentials (without, it holds no
// key of any service).
func TestRunCountsNetworkAttempts(t *testing.T) {
	for _, creds := range []bool{false, true} {
		rig := newRunRig(t)
		proc := newFakeProc(t, 4343)
		rig.d.pid = 4343
		ctx := context.Background()
		done := rig.perform(ctx, Performance{RunID: "r-1", AgentID: "a1", Worktree: rig.ws, Objective: "do it",
			Tools: []string{"choir.exec"}, Network: false, Credentials: creds})
		sid, msg := rig.ss.objective(t, rig.runSession)
		call := rpc.WithCall(ctx, rpc.Call{SessionID: sid})
		hello, _ := rig.m.HandleInitHello(call, rpc.InitHelloReq{AgentID: "a1", SessionID: sid, ImageVersion: "v1"})
		if _, _, ok := rig.m.TunnelBindings(sid); ok != creds || hello.Tunnel != creds {
			t.Errorf("credentials %v: tunnel %v, TunnelBindings ok %v; want %v", creds, hello.Tunnel, ok, creds)
		}
		proc.set(1, 1) // a tool tried curl
		in, _ := json.Marshal(rpc.DMSend{Kind: rpc.DMReply, ReplyTo: msg.ID, Text: "done"})
		rig.m.HandleHostTool(call, rpc.HostToolReq{ToolName: rpc.HostToolDMSend, CallID: "c", Input: in})
		out := wait(t, done)
		if out.Status != RunAnswered || out.NetworkAttempts != 2 {
			t.Errorf("credentials %v: Perform = %+v; want answered with 2 network attempts", creds, out)
		}
	}
}

// A process that is not the container's (its cgroup does not name it),
// or one in a namespace with more than a loopback (choird's own), is not
// read.
func TestNetnsMustBeTheContainers(t *testing.T) {
	proc := newFakeProc(t, 4444)
	if why := checkNetns(4444, "c00000000003"); why != "" {
		t.Errorf("checkNetns(the container) = %q", why)
	}
	if why := checkNetns(4444, "deadbeef"); !strings.Contains(why, "cgroup does not name it") {
		t.Errorf("checkNetns(another container) = %q", why)
	}
	proc.write("4444/net/dev", devLoopback+"  eth0:  1 2 0 0 0 0 0 0 3 4 0 0 0 0 0 0\n")
	if why := checkNetns(4444, "c00000000003"); !strings.Contains(why, "not a loopback only") {
		t.Errorf("checkNetns(a namespace with eth0) = %q", why)
	}
	if why := checkNetns(9999, "c00000000003"); why == "" {
		t.Error("checkNetns(no such process) = ok")
	}
}
