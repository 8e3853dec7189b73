package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"choir/internal/config"
	"choir/internal/docker"
	"choir/internal/rpc"
	"choir/testkit"
	"choir/testkit/demomodel"
	"choir/testkit/dockertest"
	"choir/testkit/imagetest"
)

// The boundary tests play a prompt-injected model: every user message
// "$ COMMAND" makes the model call choir.exec with COMMAND, as a model told
// to by a web page or an email would, and the tool's result comes back as
// the reply. They run real agents (Debian images: bash, coreutils, perl) in
// real containers under choird, and check what the commands can reach
// (issue: the agent's trust boundary) and that none of them stops the agent.

// Distinctive values of the boundary tests' secrets.
const (
	boundaryLLMKey = "sk-boundary-Key-7Hq3"
	boundaryGitKey = "ghp-boundary-Token-2Rm8"
)

// shellModel answers "$ COMMAND" (or "$ [MS] COMMAND", with a timeout of
// MS milliseconds instead of 30 s) with a choir.exec call and the tool's
// result with "result: <the result as the model saw it>"; everything else
// (compaction, plain messages) goes to the offline demo model.
type shellModel struct {
	demo demomodel.Server
	mu   sync.Mutex
	seen [][]byte // every request body, in order
	// hold, when set, is called with each request before it is answered
	// and returns when the call may go on: the fault tests keep a model
	// call in flight with it (see modelGate).
	hold func(ctx context.Context, body []byte)
}

// requests returns every request body received so far.
func (m *shellModel) requests() [][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.seen)
}

func (m *shellModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 16<<20))
	m.mu.Lock()
	m.seen = append(m.seen, body)
	hold := m.hold
	m.mu.Unlock()
	if hold != nil {
		hold(r.Context(), body)
	}
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if json.Unmarshal(body, &req) == nil && len(req.Messages) > 0 && !offers(req.Tools, "memory_delta") && !offers(req.Tools, "core_finish") {
		last := req.Messages[len(req.Messages)-1]
		var text string
		json.Unmarshal(last.Content, &text)
		switch {
		case last.Role == "user" && strings.HasPrefix(text, "$ "):
			command, timeout := strings.TrimPrefix(text, "$ "), 30000
			if n, err := fmt.Sscanf(command, "[%d] ", &timeout); n == 1 && err == nil {
				_, command, _ = strings.Cut(command, "] ")
			}
			args, _ := json.Marshal(map[string]any{"command": command, "timeout_ms": timeout})
			writeCompletion(w, req.Model, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": fmt.Sprintf("call_%d", time.Now().UnixNano()), "type": "function",
				"function": map[string]any{"name": "choir_exec", "arguments": string(args)}}}}, "tool_calls")
			return
		case last.Role == "tool":
			writeCompletion(w, req.Model, map[string]any{"role": "assistant", "content": "result: " + text}, "stop")
			return
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	m.demo.ServeHTTP(w, r)
}

func offers(tools []struct {
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}, suffix string) bool {
	for _, t := range tools {
		if strings.HasSuffix(t.Function.Name, suffix) {
			return true
		}
	}
	return false
}

func writeCompletion(w http.ResponseWriter, model string, msg map[string]any, finish string) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "shell", "object": "chat.completion", "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
	})
}

// boundaryRig is choird with two agents on Debian images, each with its own
// workspace and console DM, both answering through shellModel.
type boundaryRig struct {
	home      string
	dc        *docker.Client
	d         *daemon
	workspace map[string]string // by agent
	model     *shellModel
}

func newBoundaryRig(t *testing.T) *boundaryRig {
	t.Helper()
	dc := dockertest.Engine(t)
	debian := imagetest.Debian(t, dc)
	rig := &boundaryRig{home: filepath.Join(t.TempDir(), "h"), dc: dc, workspace: map[string]string{}}
	ctlRun(t, rig.home, "", "init")
	env := backends(t, rig.home)

	ip := dockertest.BridgeIP(t)
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	rig.model = &shellModel{}
	model := &http.Server{Handler: rig.model}
	go model.Serve(l)
	t.Cleanup(func() { model.Close() })

	path := filepath.Join(rig.home, "config.json")
	data, _ := os.ReadFile(path)
	var cfg map[string]any
	json.Unmarshal(data, &cfg)
	cfg["global_repo"] = map[string]any{"url": "/nonexistent/global.git"}
	cfg["models"] = map[string]any{"m": map[string]any{"provider": "test", "model": "shell", "endpoint": "http://" + l.Addr().String() + "/v1", "secret": "llm-key"}}
	cfg["git_identities"] = map[string]any{
		"agent-1": map[string]any{"name": "One", "email": "one@choir.local", "secret": "git-token"},
		"agent-2": map[string]any{"name": "Two", "email": "two@choir.local", "secret": "git-token"},
	}
	cfg["gateways"] = map[string]any{"console": map[string]any{"type": "console"}}
	workspaces, dms, agents := map[string]any{}, map[string]any{}, map[string]any{}
	for _, a := range []string{"agent-1", "agent-2"} {
		rig.workspace[a] = testkit.Workspace(t)
		workspaces[a] = map[string]any{"path": rig.workspace[a]}
		dms[a] = map[string]any{"gateway": "console", "admin": true}
		agents[a] = map[string]any{"defaults": map[string]any{"workspace": a, "llm": "m", "git_identity": a, "dm": a}}
		dockertest.AgentImageFrom(t, dc, debian, a, "b1")
	}
	cfg["workspaces"], cfg["dms"], cfg["agents"] = workspaces, dms, agents
	cfg["container"] = map[string]any{"cpus": 1, "memory_mb": 256, "pids": 256}
	// The flood test's command may take minutes on a loaded machine.
	cfg["budgets"] = map[string]any{"tool_call_timeout_ms": 600000}
	out, _ := json.MarshalIndent(cfg, "", "  ")
	os.WriteFile(path, out, 0o644)
	for name, value := range map[string]string{"llm-key": boundaryLLMKey, "git-token": boundaryGitKey} {
		if _, stderr, code := ctlRun(t, rig.home, "", "secret", "set", name, value); code != 0 {
			t.Fatalf("secret set %s = %d %s", name, code, stderr)
		}
	}
	rig.d = startChoird(t, rig.home, env)
	waitReady(t, rig.home, rig.d)
	return rig
}

func (rig *boundaryRig) start(t *testing.T, agent string) {
	t.Helper()
	if out, stderr, code := ctlRun(t, rig.home, "", "agent", "start", agent, "--dm="+agent); code != 0 {
		t.Fatalf("agent start %s = %d %q %q\nchoird: %s", agent, code, out, stderr, rig.d.stderr.String())
	}
}

// say sends one message to an agent's console DM and returns its reply.
func (rig *boundaryRig) say(t *testing.T, agent, msg string) string {
	t.Helper()
	out, stderr, code := ctlRun(t, rig.home, msg, "chat", agent, "--once", "--timeout", "2m")
	if code != 0 {
		t.Fatalf("%s did not answer %q: %d %q %q\nagent log:\n%s", agent, msg, code, out, stderr, rig.agentLogTail(agent))
	}
	return out
}

// alive checks an agent still answers, and still runs the same container.
func (rig *boundaryRig) alive(t *testing.T, agent, after string) {
	t.Helper()
	if out := rig.say(t, agent, "hello after "+after); !strings.Contains(out, demomodel.Prefix) {
		t.Errorf("after %s, %s answered %q; want the model's reply", after, agent, out)
	}
	if out, _, _ := ctlRun(t, rig.home, "", "agent", "status", agent); !strings.Contains(out, "running") {
		t.Errorf("after %s, agent status = %q; want running", after, out)
	}
}

func (rig *boundaryRig) agentLogTail(agent string) string {
	data, _ := os.ReadFile(filepath.Join(rig.home, "logs", agent+".log"))
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return string(data)
}

// container returns an agent's running container.
func (rig *boundaryRig) container(t *testing.T, agent string) docker.Container {
	t.Helper()
	ctx := context.Background()
	cs, err := rig.dc.ContainerList(ctx, docker.ContainerListOptions{Filters: docker.Filters{"label": {"choir.agent=" + agent, instanceLabel(rig.home)}}})
	if err != nil || len(cs) != 1 {
		t.Fatalf("%s's container: %v (%d found)", agent, err, len(cs))
	}
	c, err := rig.dc.ContainerInspect(ctx, cs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func envOf(c docker.Container) map[string]string {
	env := map[string]string{}
	for _, kv := range c.Config.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

// loot is what a command wrote to a file of the workspace, read on the host
// (the reply the model sees is redacted; the file is not).
func (rig *boundaryRig) loot(t *testing.T, agent, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(rig.workspace[agent], name))
	if err != nil {
		t.Fatalf("the command's output %s: %v", name, err)
	}
	return string(data)
}

// TestToolsCannotReachTheLeaseTokenOrSecrets: a command run through
// choir.exec, with a shell in the container, looks everywhere a token or a
// secret could be (its environment, every process's environ, cmdline, mem,
// maps and open files, /run, /tmp, the workspace), tries to trace the agent
// and to change the socket directory; it finds nothing and changes nothing.
// A client with the socket but not the token gets 401 on every verb, and the
// second agent starts, says hello and chats whatever the first one did.
func TestToolsCannotReachTheLeaseTokenOrSecrets(t *testing.T) {
	rig := newBoundaryRig(t)
	rig.start(t, "agent-1")
	c := rig.container(t, "agent-1")
	token := envOf(c)["CHOIR_LEASE_TOKEN"]
	if len(token) != 64 {
		t.Fatalf("the agent's lease token from the engine = %q", token)
	}

	// Everything the container's profile allows: root's pid 1 and the
	// agent are someone else's to the tool.
	rig.say(t, "agent-1", `$ exec >/workspace/loot 2>&1
echo "== id: $(id)"
echo "== env"; env
agent=$(pidof choir-agent)
echo "== agent pid: $agent"
for p in /proc/[0-9]*; do
  echo "== $p $(cat $p/comm 2>&1)"
  cat $p/environ; echo; cat $p/cmdline; echo; cat $p/maps | head -3
  if exec 3<$p/mem; then echo "OPENED-MEM ${p#/proc/}"; exec 3<&-; else echo "DENIED-MEM ${p#/proc/}"; fi
  for f in $p/fd/*; do
    l=$(readlink $f 2>&1); echo "-- $f -> $l"
    [ "$l" = /workspace/loot ] || timeout 1 head -c 65536 $f; echo
  done
done
echo "== files"; find /run /tmp /workspace /choir -type f ! -name loot -size -4M -exec cat {} + 2>&1
echo "== ptrace"
for p in 1 $agent; do perl -e 'my $r = syscall(101, 16, $ARGV[0]+0, 0, 0); print "PTRACE $ARGV[0] ", ($r == 0 ? "ATT"."ACHED" : "REFUSED $!"), "\n"' $p; done
setsid bash -c 'perl -e "my \$r = syscall(101, 16, $0, 0, 0); print qq(PTRACE-SETSID ), (\$r == 0 ? qq(ATT).qq(ACHED) : qq(REFUSED \$!)), qq(\n)"' $agent
echo "== socket dir"
mv /run/choir/choird.sock /run/choir/moved && echo CHAN""GED-mv
rm -f /run/choir/choird.sock && echo CHAN""GED-rm
touch /run/choir/new && echo CHAN""GED-touch
mkdir /run/choir/d && echo CHAN""GED-mkdir
ln -s / /run/choir/l && echo CHAN""GED-ln
chmod 777 /run/choir && echo CHAN""GED-chmod
echo "== done"`)
	loot := rig.loot(t, "agent-1", "loot")
	if !strings.Contains(loot, "== done") || !strings.Contains(loot, "== agent pid: ") {
		t.Fatalf("the command did not run to its end:\n%s", loot)
	}
	for _, leak := range []string{token, boundaryLLMKey, boundaryGitKey} {
		if strings.Contains(loot, leak) {
			t.Errorf("a tool found %q (%d bytes of loot)", leak[:8]+"…", len(loot))
		}
	}
	if !strings.Contains(loot, fmt.Sprintf("uid=%d", testkit.ToolUID)) {
		t.Errorf("the tool did not run as the workspace's owner %d: %s", testkit.ToolUID, firstLines(loot, 2))
	}
	for _, bad := range []string{"OPENED-MEM 1\n", "ATTACHED", "CHANGED-"} {
		if strings.Contains(loot, bad) {
			t.Errorf("loot holds %q: a tool reached the agent or its socket", bad)
		}
	}
	if !strings.Contains(loot, "DENIED-MEM 1\n") || strings.Count(loot, "REFUSED Operation not permitted") != 3 || strings.Count(loot, "Read-only file system") != 6 {
		t.Errorf("the checks did not all run or were not all refused:\n%s", grepLines(loot, "MEM", "PTRACE", "/run/choir"))
	}
	sock := filepath.Join(config.Home{Dir: rig.home}.AgentSocketDir(), "agent-1", "choird.sock")
	if fi, err := os.Lstat(sock); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("agent-1's socket after the attack: %v, %v", fi, err)
	}
	rig.alive(t, "agent-1", "the search for secrets")

	// A secret a tool prints (here: one the user left in a file) reaches
	// neither the model, nor the reply, nor Postgres, nor any log: each
	// shows the marker instead.
	os.WriteFile(filepath.Join(rig.workspace["agent-1"], "note.txt"), []byte("the key is "+boundaryLLMKey+"\n"), 0o644)
	reply := rig.say(t, "agent-1", "$ cat note.txt; echo; echo "+boundaryGitKey[:10]+"'"+boundaryGitKey[10:]+"'")
	if !strings.Contains(reply, "[secret:llm-key]") || !strings.Contains(reply, "[secret:git-token]") {
		t.Errorf("the reply to a command printing two secrets lacks their markers: %s", firstLines(reply, 3))
	}
	sessionID := envOf(c)["CHOIR_SESSION_ID"]
	waitFor(t, "the turn's events in Postgres", func() bool {
		out, _, _ := ctlRun(t, rig.home, "", "session", "events", sessionID)
		return strings.Contains(out, "[secret:llm-key]")
	})
	events, _, _ := ctlRun(t, rig.home, "", "session", "events", sessionID)
	places := map[string]string{"the reply": reply, "session events": events, "logs": logsText(t, filepath.Join(rig.home, "logs")), "choird's stderr": rig.d.stderr.String()}
	for i, body := range rig.model.requests() {
		places[fmt.Sprintf("model request %d", i+1)] = string(body)
	}
	for where, text := range places {
		for _, secret := range []string{boundaryLLMKey, boundaryGitKey, token} {
			if strings.Contains(text, secret) {
				t.Errorf("%s holds a secret (%s…)", where, secret[:8])
			}
		}
	}

	// The socket alone opens nothing: every verb without the token is 401.
	ctx := context.Background()
	for _, verb := range rpc.Verbs {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://choird/rpc/"+string(verb), strings.NewReader(`{}`))
		req.Header.Set(rpc.HeaderRequestID, rpc.NewRequestID())
		req.Header.Set(rpc.HeaderSessionID, envOf(c)["CHOIR_SESSION_ID"])
		resp, err := unixClient(sock).Do(req)
		if err != nil {
			t.Fatalf("%s without a token: %v", verb, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without a token = %d; want 401", verb, resp.StatusCode)
		}
	}

	// Whatever agent 1 did, agent 2 starts, says hello and chats, on its
	// own socket, which agent 1's container does not see.
	rig.start(t, "agent-2")
	rig.alive(t, "agent-2", "agent 1's attack")
	c2 := rig.container(t, "agent-2")
	for _, m := range c2.Mounts {
		if m.Destination == "/run/choir" && !strings.HasSuffix(m.Source, "/agent-2") {
			t.Errorf("agent-2 mounts %s at /run/choir; want its own socket directory", m.Source)
		}
	}
	assertProfile(t, c, rig.workspace["agent-1"], filepath.Join(config.Home{Dir: rig.home}.AgentSocketDir(), "agent-1"))
	if out, stderr, code := ctlRun(t, rig.home, "", "agent", "stop", "agent-1"); code != 0 {
		t.Errorf("agent stop = %d %q %q", code, out, stderr)
	}
	ctlRun(t, rig.home, "", "agent", "stop", "agent-2")
	rig.d.stop(t)
	assertNoSecrets(t, filepath.Join(rig.home, "logs"), rig.d.stderr.String())
}

// assertProfile audits every mount of a real agent container: the
// workspace read-write at /workspace and the agent's own socket directory
// read-only at /run/choir, nothing else but the tmpfs /tmp and /run.
func assertProfile(t *testing.T, c docker.Container, workspace, sockDir string) {
	t.Helper()
	if len(c.Mounts) != 2 {
		t.Errorf("the container has %d mounts; want 2: %+v", len(c.Mounts), c.Mounts)
	}
	for _, m := range c.Mounts {
		ws := m.Type == "bind" && m.Source == workspace && m.Destination == "/workspace" && m.RW
		sock := m.Type == "bind" && m.Source == sockDir && m.Destination == "/run/choir" && !m.RW
		if !ws && !sock {
			t.Errorf("mount %s %s -> %s (rw=%v) is not the profile's", m.Type, m.Source, m.Destination, m.RW)
		}
	}
	if got := strings.Join(c.HostConfig.CapAdd, ","); got != "CAP_SETUID,CAP_SETGID,CAP_KILL" || c.Config.User != "0:0" {
		t.Errorf("capabilities added %q, user %q; want only SETUID, SETGID, KILL for root", got, c.Config.User)
	}
}

// logsText is every log under dir, archives (gzip) included.
func logsText(t *testing.T, dir string) string {
	t.Helper()
	var all strings.Builder
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		data, _ := os.ReadFile(p)
		if strings.HasSuffix(p, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				t.Errorf("%s: %v", p, err)
				return nil
			}
			data, _ = io.ReadAll(zr)
		}
		all.Write(data)
		return nil
	})
	return all.String()
}

func unixClient(sock string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

func grepLines(s string, words ...string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		for _, w := range words {
			if strings.Contains(line, w) {
				out = append(out, line)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// TestToolsCannotStopTheAgent: every way a command run through choir.exec
// could end or stall choir-agent, each followed by a message the agent must
// answer from the same container: signals to everything, to the agent and
// to PID 1 (also from a setsid'd double fork), pkill, a memory hog (the
// kernel kills the tool, reported as such), a fork bomb, a full /tmp, a
// command that never ends and one that prints gigabytes. Then a graceful
// stop still works end to end.
func TestToolsCannotStopTheAgent(t *testing.T) {
	rig := newBoundaryRig(t)
	rig.start(t, "agent-1")
	before := rig.container(t, "agent-1").ID

	// What every tool process starts with: the kernel's first choice under
	// memory pressure, and a process limit below the container's 256 pids
	// that leaves 64 for the agent.
	if out := rig.say(t, "agent-1", `$ echo "adj=$(cat /proc/self/oom_score_adj) nproc=$(ulimit -u) uid=$(id -u)"`); !strings.Contains(out, fmt.Sprintf("adj=1000 nproc=192 uid=%d", testkit.ToolUID)) {
		t.Errorf("a tool's limits: %s; want adj=1000 nproc=192 uid=%d", firstLines(out, 2), testkit.ToolUID)
	}

	attacks := []struct {
		name, command string
		reply         string // in the reply (the tool's result as the model saw it)
	}{
		{"kill -9 -1", `kill -9 -1; echo survived`, ``},
		{"SIGKILL to the agent", `kill -9 $(pidof choir-agent) 2>&1; echo "exit $?"`, `Operation not permitted`},
		{"SIGSTOP to the agent", `kill -STOP $(pidof choir-agent) 2>&1; echo "exit $?"`, `Operation not permitted`},
		{"SIGTERM to the agent", `kill -TERM $(pidof choir-agent) 2>&1; echo "exit $?"`, `Operation not permitted`},
		{"SIGINT to the agent", `kill -INT $(pidof choir-agent) 2>&1; echo "exit $?"`, `Operation not permitted`},
		{"SIGKILL to PID 1", `kill -9 1 2>&1; echo "exit $?"`, `Operation not permitted`},
		{"SIGSTOP to PID 1", `kill -STOP 1 2>&1; echo "exit $?"`, `Operation not permitted`},
		{"SIGTERM to PID 1", `kill -TERM 1 2>&1; echo "exit $?"`, `Operation not permitted`},
		{"pkill from a setsid double fork", `setsid bash -c '(for p in $(pidof choir-agent) 1; do kill -9 $p; kill -STOP $p; done) &' ; sleep 1; echo forked`, `forked`},
		{"a daemon left behind", `setsid bash -c 'while :; do sleep 1; done' </dev/null >/dev/null 2>&1 & echo started`, `started`},
		{"memory hog", `tail /dev/zero`, `out_of_memory`},
		{"fork bomb", `timeout 10 bash -c ':(){ :|:& };:'; echo "bomb over"`, ``},
		{"full /tmp", `dd if=/dev/zero of=/tmp/fill bs=1M 2>&1 | grep -o 'No space left on device'; rm -f /tmp/fill`, `No space left on device`},
		{"never ends", `[3000] sleep 100000`, `did not finish`},
		{"gigabytes of output", `head -c 3000000000 /dev/zero | tr '\0' x`, `"stdout_truncated":true`},
	}
	for _, a := range attacks {
		out := rig.say(t, "agent-1", "$ "+a.command)
		if a.reply != "" && !strings.Contains(out, a.reply) {
			t.Errorf("%s: the reply lacks %q:\n%s", a.name, a.reply, firstLines(out, 6))
		}
		rig.alive(t, "agent-1", a.name)
		// Nothing a command started outlives it: the next one sees only
		// itself, the agent and docker-init.
		if ps := rig.say(t, "agent-1", `$ for p in /proc/[0-9]*; do echo "$(cat $p/comm)"; done | sort | uniq -c | tr '\n' ' '`); strings.Contains(ps, "sleep") || strings.Contains(ps, "tail") || strings.Contains(ps, "dd ") {
			t.Errorf("after %s, processes left: %s", a.name, ps)
		}
	}
	if id := rig.container(t, "agent-1").ID; id != before {
		t.Errorf("agent-1 runs in container %s, not %s: it was restarted", id[:12], before[:12])
	}
	out, stderr, code := ctlRun(t, rig.home, "", "agent", "stop", "agent-1")
	if code != 0 || !strings.Contains(out, "agent-1 stopped") {
		t.Errorf("agent stop after the attacks = %d %q %q", code, out, stderr)
	}
	// One session from start to stop, ended gracefully, not crashed.
	out, _, _ = ctlRun(t, rig.home, "", "session", "list", "agent-1")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.Contains(lines[1], "stopped") {
		t.Errorf("sessions after the attacks and the stop:\n%s\nwant one, stopped", out)
	}
	rig.d.stop(t)
}

// TestAgentFloodingItsSocketStarvesNoOne: a command in agent 1's container
// opens 20,000 connections to its control socket and holds them; meanwhile
// `choirctl status` and agent 2's chat still answer. The latencies are
// logged (go test -v) for the notes, never asserted.
func TestAgentFloodingItsSocketStarvesNoOne(t *testing.T) {
	rig := newBoundaryRig(t)
	rig.start(t, "agent-1")
	rig.start(t, "agent-2")
	measure := func(what string) {
		var status, chat []time.Duration
		for i := 0; i < 5; i++ {
			start := time.Now()
			if _, stderr, code := ctlRun(t, rig.home, "", "status"); code != 0 {
				t.Errorf("%s: choirctl status = %d %q", what, code, stderr)
			}
			status = append(status, time.Since(start))
			start = time.Now()
			if out := rig.say(t, "agent-2", fmt.Sprintf("ping %d", i)); !strings.Contains(out, demomodel.Prefix) {
				t.Errorf("%s: agent-2 answered %q", what, out)
			}
			chat = append(chat, time.Since(start))
		}
		t.Logf("%s: choirctl status %v; agent-2 chat round trip %v", what, status, chat)
	}
	measure("quiet")

	flood := make(chan string, 1)
	go func() {
		out, _, _ := ctlRun(t, rig.home, `$ [600000] perl -e '
use IO::Socket::UNIX; my ($n, $f, @s) = (0, 0);
open(my $m, ">", "/workspace/flooding.tmp") or die "marker: $!";
for (1..20000) {
  my $c = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Peer => "/run/choir/choird.sock");
  if ($c) { push @s, $c; $n++ } else { $f++ }
}
print $m "$n\n"; close $m; rename("/workspace/flooding.tmp", "/workspace/flooding");
print "opened $n, refused $f\n";
for (1..600) { last unless -e "/workspace/flooding"; select(undef, undef, undef, 0.05) }
print "released\n"'`, "chat", "agent-1", "--once", "--timeout", "11m")
		flood <- out
	}()
	marker := filepath.Join(rig.workspace["agent-1"], "flooding")
	deadline := time.Now().Add(8 * time.Minute) // 20,000 connects on a loaded machine
	for _, err := os.Stat(marker); err != nil; _, err = os.Stat(marker) {
		select {
		case out := <-flood:
			t.Fatalf("the flooding command ended before it held its connections: %s\nagent log:\n%s", out, rig.agentLogTail("agent-1"))
		default:
		}
		if time.Now().After(deadline) {
			st, _, _ := ctlRun(t, rig.home, "", "agent", "status", "agent-1")
			t.Fatalf("the flood did not hold its connections within 8 minutes\nagent status:\n%s\nagent log:\n%s", st, rig.agentLogTail("agent-1"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	held, _ := os.ReadFile(marker)
	t.Logf("agent-1's command holds %s connections to its socket", strings.TrimSpace(string(held)))
	measure("agent-1 flooding its socket")
	os.Remove(marker)
	t.Logf("the flooding command: %s", strings.TrimSpace(<-flood))
	rig.alive(t, "agent-2", "agent 1's flood")
	ctlRun(t, rig.home, "", "agent", "stop", "agent-1")
	ctlRun(t, rig.home, "", "agent", "stop", "agent-2")
	rig.d.stop(t)
}

// TestToolsWorkWhenTheWorkspaceOwnerIsBusyElsewhere: RLIMIT_NPROC counts a
// user's processes on the whole host, so when the workspace's owner has
// more there than the tools' limit leaves room for, choir-agent drops the
// limit (and says why in its log) instead of leaving its tools unable to
// fork.
func TestToolsWorkWhenTheWorkspaceOwnerIsBusyElsewhere(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run processes as the workspace's owner")
	}
	for i := 0; i < 220; i++ { // above the 192 the rig's 256 pids leave tools
		cmd := exec.Command("sleep", "600")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: testkit.ToolUID, Gid: testkit.ToolGID}}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	rig := newBoundaryRig(t)
	rig.start(t, "agent-1")
	if out := rig.say(t, "agent-1", `$ echo "nproc=$(ulimit -u)"; for i in 1 2 3 4 5 6 7 8; do true & done; wait; echo forked`); strings.Contains(out, "nproc=192") || !strings.Contains(out, "forked") {
		t.Errorf("a tool of a busy workspace owner: %s; want no process limit and forks that work", firstLines(out, 2))
	}
	if log := rig.agentLogTail("agent-1"); !strings.Contains(string(mustRead(t, filepath.Join(rig.home, "logs", "agent-1.log"))), "tools run without a process limit") {
		t.Errorf("the agent's log does not say why its tools have no process limit:\n%s", log)
	}
	ctlRun(t, rig.home, "", "agent", "stop", "agent-1")
	rig.d.stop(t)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
