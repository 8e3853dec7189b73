package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/internal/ctl"
	"choir/internal/docker"
	"choir/internal/openai"
	"choir/testkit"
	"choir/testkit/dockertest"
)

// Headless runs' cost outside the model (issue 16, "Measure"), on the
// real engine and a real choird with the default limits (container
// limits, moods, budgets), the fake model answering at once:
//
//	set -a; . /tmp/choir-shared.env; set +a   # DOCKER_HOST, where shared
//	go test -run '^$' -bench HeadlessRun -benchtime 5x -timeout 30m ./choirctl
//	CHOIR_BENCH_RUNS=4 go test -run '^$' -bench HeadlessConcurrentRuns -benchtime 1x -timeout 30m ./choirctl
//
// (make bench-headless runs both.) They skip, saying why, without an
// engine or a database.

// headlessBench is a choird with one agent, r16-b1, whose workspace is a
// git repository; the fake model writes done-<run>.txt, holding a run's
// model call while hold says so; the verifier "done" waits for a file
// named gate in the worktree when gated.
type headlessBench struct {
	home string
	dc   *docker.Client
	d    *daemon
	mu   sync.Mutex
	hold chan struct{} // nil: answer at once
	seen int           // model calls of runs begun
}

func newHeadlessBench(b *testing.B, maxRuns int, gated bool) *headlessBench {
	b.Helper()
	hb := &headlessBench{dc: dockertest.Engine(b)}
	hb.home = filepath.Join(b.TempDir(), "h")
	ctlRun(b, hb.home, "", "init")
	env := backends(b, hb.home)
	ws := testkit.Workspace(b)
	gitIn := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", ws, "-c", "safe.directory=*"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	gitIn("init", "-q", "-b", "main")
	for name, body := range map[string]string{"README": "bench\n", ".gitignore": "gate\n"} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	gitIn("add", ".")
	gitIn("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "start")
	if err := filepath.Walk(ws, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, testkit.ToolUID, testkit.ToolGID)
	}); err != nil {
		b.Fatal(err)
	}
	model := &callerModel{call: func(text string) (string, string, bool) {
		i := strings.Index(text, "[choir headless run ")
		if i < 0 {
			return "", "", false
		}
		run, _, _ := strings.Cut(text[i+len("[choir headless run "):], ",")
		hb.mu.Lock()
		hb.seen++
		hold := hb.hold
		hb.mu.Unlock()
		if hold != nil {
			<-hold
		}
		args, _ := json.Marshal(map[string]any{"path": "done-" + run + ".txt", "op": "create", "content": "done\n"})
		return openai.WireName("choir.fs.write"), string(args), true
	}}
	l, err := net.Listen("tcp", net.JoinHostPort(dockertest.BridgeIP(b), "0"))
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: model}
	go srv.Serve(l)
	b.Cleanup(func() { srv.Close() })
	verifier := []string{"true"}
	if gated {
		verifier = []string{"sh", "-c", "while [ ! -e gate ]; do sleep 0.2; done"}
	}
	editConfig(b, hb.home, func(cfg map[string]any) {
		cfg["global_repo"] = map[string]any{"url": "/nonexistent/global.git"}
		cfg["workspaces"] = map[string]any{"main": map[string]any{"path": ws}}
		cfg["models"] = map[string]any{"m": map[string]any{"provider": "test", "model": "x", "endpoint": "http://" + l.Addr().String() + "/v1", "secret": "llm-key"}}
		cfg["git_identities"] = map[string]any{"dev": map[string]any{"name": "Dev", "email": "dev@choir.local", "secret": "git-token"}}
		cfg["gateways"] = map[string]any{"console": map[string]any{"type": "console"}}
		cfg["dms"] = map[string]any{"dm1": map[string]any{"gateway": "console", "admin": true}}
		cfg["agents"] = map[string]any{"r16-b1": map[string]any{"defaults": map[string]any{"workspace": "main", "llm": "m", "git_identity": "dev", "dm": "dm1"}}}
		h := map[string]any{"verifiers": map[string]any{"done": map[string]any{"command": verifier, "timeout_s": 600}}}
		if maxRuns > 0 {
			h["max_runs"] = maxRuns
		}
		cfg["headless"] = h
	})
	for name, value := range map[string]string{"llm-key": apiSecret, "git-token": "ghp-e2e-Token-5Yt"} {
		if _, stderr, code := ctlRun(b, hb.home, "", "secret", "set", name, value); code != 0 {
			b.Fatalf("secret set %s = %d %s", name, code, stderr)
		}
	}
	dockertest.AgentImage(b, hb.dc, "r16-b1", "e2e1")
	hb.d = startChoird(b, hb.home, env)
	waitReady(b, hb.home, hb.d)
	return hb
}

func (hb *headlessBench) report() string { return "choird:\n" + tail(hb.d.stderr.String(), 4000) }

// queue adds a work item and queues its run.
func (hb *headlessBench) queue(b *testing.B, n int) string {
	b.Helper()
	var it ctl.WorkItem
	ctlJSON2(b, hb.home, &it, "work", "add", "r16-b1", fmt.Sprintf("write done file %d", n), "--accept", "a done file", "--verifier", "done")
	var r ctl.Run
	ctlJSON2(b, hb.home, &r, "run", "start", it.ID)
	return r.ID
}

func ctlJSON2(b testing.TB, home string, out any, args ...string) {
	b.Helper()
	stdout, stderr, code := ctlRun(b, home, "", append(args, "--json")...)
	if code != 0 || json.Unmarshal([]byte(stdout), out) != nil {
		b.Fatalf("choirctl %s --json = %d %q %q", strings.Join(args, " "), code, stdout, stderr)
	}
}

func (hb *headlessBench) show(b *testing.B, id string) ctl.RunDetail {
	var rd ctl.RunDetail
	ctlJSON2(b, hb.home, &rd, "run", "show", id)
	return rd
}

func (hb *headlessBench) waitCommitted(b *testing.B, id string) {
	b.Helper()
	waitUntil(b, "run "+id+" committed", 10*time.Minute, func() bool {
		st := hb.show(b, id).Run.Status
		if st == "failed" || st == "discarded" || st == "cancelled" {
			out, _, _ := ctlRun(b, hb.home, "", "run", "receipts", id)
			b.Fatalf("run %s ended %s:\n%s\n%s", id, st, out, hb.report())
		}
		return st == "committed"
	}, hb.report)
}

// BenchmarkHeadlessRun is one trivial run from queued to committed: a
// worktree, a run container whose agent writes one file (the model
// answers at once), a verifier container running `true`, the commit and
// their receipts. ns/op is the whole run as a user waits for it; the
// metrics split it by the receipts' times: queued→RunStarted (the loop
// waking, the worktree made), RunStarted→PatchReceipt (the objective, the
// run container started, the agent's session and its stop, the diff),
// PatchReceipt→VerifierResults (the verifier's container), and
// VerifierResults→CommitReceipt (the decision, the commit, the
// fast-forward, the worktree removed).
func BenchmarkHeadlessRun(b *testing.B) {
	hb := newHeadlessBench(b, 0, false)
	var start, session, verify, commit time.Duration
	n := 0
	for b.Loop() {
		id := hb.queue(b, n)
		hb.waitCommitted(b, id)
		b.StopTimer()
		var rs []ctl.Receipt
		ctlJSON2(b, hb.home, &rs, "run", "receipts", id)
		at := map[string]time.Time{}
		for _, r := range rs {
			if _, ok := at[r.Kind]; !ok {
				at[r.Kind] = r.At
			}
		}
		run := hb.show(b, id).Run
		start += at["RunStarted"].Sub(run.Created)
		session += at["PatchReceipt"].Sub(at["RunStarted"])
		verify += at["VerifierResults"].Sub(at["PatchReceipt"])
		commit += at["CommitReceipt"].Sub(at["VerifierResults"])
		n++
		b.StartTimer()
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }
	b.ReportMetric(ms(start), "start-ms/run")
	b.ReportMetric(ms(session), "session-ms/run")
	b.ReportMetric(ms(verify), "verifier-ms/run")
	b.ReportMetric(ms(commit), "commit-ms/run")
}

// BenchmarkHeadlessConcurrentRuns holds CHOIR_BENCH_RUNS runs (default 4,
// headless.max_runs set to it) at once and measures their memory: with
// every run's agent waiting in its model call, the PSS of each run
// container's processes and of its containerd shim, and MemAvailable's
// drop since before the runs; then, with every run's verifier waiting for
// its gate, the same for the verifier containers. The host sustains about
// MemAvailable / (run PSS + shim PSS) runs at once by memory; each run
// container is also capped by config.json's container.memory (its
// default), which bounds the worst case. One iteration is enough
// (-benchtime 1x); more repeat the measurement.
func BenchmarkHeadlessConcurrentRuns(b *testing.B) {
	k := 4
	if v := os.Getenv("CHOIR_BENCH_RUNS"); v != "" {
		var err error
		if k, err = strconv.Atoi(v); err != nil || k < 1 || k > 64 {
			b.Fatalf("CHOIR_BENCH_RUNS=%q: want 1 to 64", v)
		}
	}
	hb := newHeadlessBench(b, k, true)
	n := 0
	var runPSS, runShim, runDrop, verPSS, verShim, verDrop float64
	for b.Loop() {
		hold := make(chan struct{})
		hb.mu.Lock()
		hb.hold, hb.seen = hold, 0
		hb.mu.Unlock()
		before, err := memAvailable()
		if err != nil {
			b.Skip(err)
		}
		ids := make([]string, k)
		for i := range ids {
			ids[i] = hb.queue(b, n*k+i)
		}
		// Every run's agent is in its model call: the run containers
		// are up and settled.
		waitUntil(b, fmt.Sprintf("%d runs in their model call", k), 10*time.Minute, func() bool {
			hb.mu.Lock()
			defer hb.mu.Unlock()
			return hb.seen >= k
		}, hb.report)
		pss, shim := hb.containersPSS(b, "choir.run", k, func(c docker.ContainerSummary) bool { return c.Labels["choir.verifier"] == "" })
		after, _ := memAvailable()
		runPSS, runShim, runDrop = runPSS+pss/float64(k), runShim+shim/float64(k), runDrop+float64(before-after)/float64(k)
		hb.mu.Lock()
		hb.hold = nil
		hb.mu.Unlock()
		close(hold)
		// Every run's verifier waits for its gate.
		waitUntil(b, fmt.Sprintf("%d verifiers running", k), 10*time.Minute, func() bool {
			return hb.countContainers(b, "choir.verifier") >= k
		}, hb.report)
		pss, shim = hb.containersPSS(b, "choir.verifier", k, nil)
		after, _ = memAvailable()
		verPSS, verShim, verDrop = verPSS+pss/float64(k), verShim+shim/float64(k), verDrop+float64(before-after)/float64(k)
		for _, id := range ids {
			os.WriteFile(filepath.Join(hb.show(b, id).Run.Worktree, "gate"), nil, 0o644)
		}
		// Runs at once on one workspace: the first to commit moves its
		// branch, and the others' fast-forwards are refused (their commit
		// stays on their run branch); any end will do here.
		for _, id := range ids {
			waitUntil(b, "run "+id+" ended", 10*time.Minute, func() bool {
				switch hb.show(b, id).Run.Status {
				case "committed", "failed", "discarded", "cancelled":
					return true
				}
				return false
			}, hb.report)
		}
		n++
	}
	mib := func(kb float64) float64 { return kb / 1024 / float64(n) }
	b.ReportMetric(float64(k), "runs")
	b.ReportMetric(mib(runPSS), "run-container-PSS-MiB/run")
	b.ReportMetric(mib(runShim), "run-shim-PSS-MiB/run")
	b.ReportMetric(mib(runDrop), "run-MemAvailable-drop-MiB/run")
	b.ReportMetric(mib(verPSS), "verifier-PSS-MiB/run")
	b.ReportMetric(mib(verShim), "verifier-shim-PSS-MiB/run")
	b.ReportMetric(mib(verDrop), "verifier-MemAvailable-drop-MiB/run")
	// A run holds its run container, then its verifier: the larger of
	// the two is what each run at once costs.
	if avail, err := memAvailable(); err == nil {
		per := max(runPSS+runShim, verPSS+verShim) / float64(n)
		b.ReportMetric(float64(avail)/per, "runs-by-MemAvailable")
	}
}

func (hb *headlessBench) countContainers(b *testing.B, label string) int {
	cs, err := hb.dc.ContainerList(context.Background(), docker.ContainerListOptions{Filters: docker.Filters{"label": {label, instanceLabel(hb.home)}}})
	if err != nil {
		b.Fatal(err)
	}
	return len(cs)
}

// containersPSS sums, in KiB, the PSS of the processes of the running
// containers carrying label (and keep), and of their shims.
func (hb *headlessBench) containersPSS(b *testing.B, label string, want int, keep func(docker.ContainerSummary) bool) (pss, shim float64) {
	ctx := context.Background()
	cs, err := hb.dc.ContainerList(ctx, docker.ContainerListOptions{Filters: docker.Filters{"label": {label, instanceLabel(hb.home)}}})
	if err != nil {
		b.Fatal(err)
	}
	got := 0
	for _, c := range cs {
		if keep != nil && !keep(c) {
			continue
		}
		ins, err := hb.dc.ContainerInspect(ctx, c.ID)
		if err != nil || ins.State.Pid == 0 {
			b.Fatalf("inspect %s: %v (pid %d)", c.ID, err, ins.State.Pid)
		}
		for _, pid := range processTree(ins.State.Pid) {
			kb, err := pssKB(pid)
			if err != nil {
				b.Skipf("read the PSS of pid %d: %v (run as root to read other processes' smaps_rollup)", pid, err)
			}
			pss += float64(kb)
		}
		if pp := parentPid(ins.State.Pid); pp > 1 {
			kb, _ := pssKB(pp)
			shim += float64(kb)
		}
		got++
	}
	if got != want {
		b.Fatalf("%d containers labelled %s running; want %d", got, label, want)
	}
	return pss, shim
}

// processTree is pid and its descendants, from /proc/<pid>/task/*/children.
func processTree(pid int) []int {
	out := []int{pid}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		data, _ := os.ReadFile(t)
		for _, f := range strings.Fields(string(data)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, processTree(c)...)
			}
		}
	}
	return out
}

func parentPid(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...: comm may hold blanks and parentheses.
	rest := data[bytes.LastIndexByte(data, ')')+1:]
	f := strings.Fields(string(rest))
	if len(f) < 2 {
		return 0
	}
	pp, _ := strconv.Atoi(f[1])
	return pp
}

func pssKB(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, err
	}
	return kbLine(data, "Pss:")
}

func memAvailable() (int64, error) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	return kbLine(data, "MemAvailable:")
}

func kbLine(data []byte, prefix string) (int64, error) {
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				return strconv.ParseInt(f[0], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("no %s line", prefix)
}
