package verify

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"choir/choird/headless/objects"
	"choir/choird/lifecycle"
	"choir/internal/config"
	"choir/internal/docker"
	"choir/testkit/dockertest"
	"choir/testkit/imagetest"
)

func TestMain(m *testing.M) { dockertest.Main(m) }

const testImage = "choir-test-verify:busybox"

const diffHash = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

type fixture struct {
	c        *docker.Client
	r        *Runner
	store    *objects.Store
	worktree string
}

func setup(t *testing.T) *fixture {
	t.Helper()
	c := dockertest.Engine(t)
	dockertest.BusyboxImage(t, c, testImage)
	store, err := objects.Open(filepath.Join(t.TempDir(), "objects"))
	if err != nil {
		t.Fatal(err)
	}
	wt := t.TempDir()
	os.WriteFile(filepath.Join(wt, "calc.go"), []byte("package calc\n"), 0o644)
	r := &Runner{Docker: c, Objects: store, Instance: "verify-test", Labels: dockertest.Labels(t, c),
		Limits: config.ContainerLimits{CPUs: 1, MemoryMB: 256, Pids: 64}}
	return &fixture{c: c, r: r, store: store, worktree: wt}
}

func (f *fixture) run(t *testing.T, name string, timeout time.Duration, cmd ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := f.r.Run(ctx, Request{RunID: "r-0000000000f1", Image: testImage, Worktree: f.worktree, DiffHash: diffHash,
		Verifier: Verifier{Name: name, Command: cmd, Timeout: timeout}})
	if err != nil {
		t.Fatalf("Run(%s): %v", name, err)
	}
	return res
}

func (f *fixture) output(t *testing.T, res Result) string {
	t.Helper()
	b, err := f.store.Get(res.Report.Output)
	if err != nil {
		t.Fatalf("verifier output %s: %v", res.Report.Output, err)
	}
	return string(b)
}

// noContainers checks that no verifier container of these tests (which
// run one at a time) is left on the engine.
func (f *fixture) noContainers(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := f.c.ContainerList(ctx, docker.ContainerListOptions{All: true, Filters: docker.Filters{"label": {"choir.instance=verify-test"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) > 0 {
		t.Errorf("%d verifier containers left on the engine: %+v", len(list), list)
	}
}

func TestPassingVerifier(t *testing.T) {
	f := setup(t)
	res := f.run(t, "go-test", time.Minute, "sh", "-c",
		`echo "SECRET-$((6*7))-TOKEN"; printf 'ok  \tchoir/calc\t0.01s\n'; echo scratch > $HOME/x && cat $HOME/x >&2; cat /workspace/calc.go`)
	rep := res.Report
	if !rep.Passed || rep.ExitCode != 0 || rep.TimedOut || rep.Signature != "" {
		t.Fatalf("Report = %+v; want passed", rep)
	}
	if rep.Summary == nil || rep.Summary.PackagesOK != 1 {
		t.Errorf("Summary = %+v; want one ok package", rep.Summary)
	}
	out := f.output(t, res)
	for _, want := range []string{"SECRET-42-TOKEN", "ok  \tchoir/calc", "scratch", "package calc"} {
		if !strings.Contains(out, want) {
			t.Errorf("stored output %q lacks %q", out, want)
		}
	}
	if rep.OutputBytes != int64(len(out)) || rep.Truncated {
		t.Errorf("OutputBytes = %d, Truncated = %v; want %d, false", rep.OutputBytes, rep.Truncated, len(out))
	}
	// The output stays in the object store: the report and attestation
	// that go back to the director never carry it.
	for _, v := range []any{rep, res.Attestation} {
		b, _ := json.Marshal(v)
		if strings.Contains(string(b), "SECRET-42-TOKEN") {
			t.Errorf("%T carries the verifier's raw output: %s", v, b)
		}
	}
	gotRep, err := objects.GetJSON[Report](f.store, res.ReportHash)
	if err != nil || gotRep.Output != rep.Output || !gotRep.Passed {
		t.Errorf("stored report = %+v, %v", gotRep, err)
	}
	att, err := objects.GetJSON[Attestation](f.store, res.AttestationHash)
	if err != nil {
		t.Fatal(err)
	}
	if att.Kind != AttestationKind || att.RunID != "r-0000000000f1" || att.Verifier != "go-test" || att.DiffHash != diffHash || att.Report != res.ReportHash || att.Result != "pass" {
		t.Errorf("attestation = %+v", att)
	}
	f.noContainers(t)
}

func TestFailingVerifier(t *testing.T) {
	f := setup(t)
	fail := func(d string) Result {
		return f.run(t, "go-test", time.Minute, "sh", "-c", fmt.Sprintf(
			`printf -- '--- FAIL: TestAdd (%ss)\n    calc_test.go:9: Add(1, 2) = -1; want 3\nFAIL\nFAIL\tchoir/calc\t%ss\n'; exit 1`, d, d))
	}
	a, b := fail("0.01"), fail("0.37")
	if a.Report.Passed || a.Report.ExitCode != 1 || a.Attestation.Result != "fail" {
		t.Fatalf("Report = %+v, attestation %+v; want failed", a.Report, a.Attestation)
	}
	if a.Report.Summary == nil || a.Report.Summary.Failed != 1 || a.Report.Summary.PackagesFailed != 1 {
		t.Errorf("Summary = %+v; want one failed test in one failed package", a.Report.Summary)
	}
	if a.Report.Signature == "" || a.Report.Signature != b.Report.Signature {
		t.Errorf("signatures of the same failure: %q and %q; want equal and not empty", a.Report.Signature, b.Report.Signature)
	}
	f.noContainers(t)
}

func TestVerifierHasNoNetwork(t *testing.T) {
	f := setup(t)
	ip := dockertest.BridgeIP(t)
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Skipf("cannot listen on the bridge %s: %v", ip, err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Write([]byte("reached\n"))
			c.Close()
		}
	}()
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	dial := "echo hi | nc -w 5 " + host + " " + port
	// One stream: the engine copies stdout and stderr apart, so nc's error
	// could otherwise be logged before the listing.
	res := f.run(t, "net", time.Minute, "sh", "-c", "exec 2>&1; ls /sys/class/net; echo ---; "+dial)
	if res.Report.Passed {
		t.Fatalf("a verifier reached %s; report %+v", ln.Addr(), res.Report)
	}
	out := f.output(t, res)
	if strings.Contains(out, "reached") || accepted.Load() != 0 {
		t.Fatalf("the verifier reached the host's listener: %q", out)
	}
	if !strings.Contains(out, "unreachable") {
		t.Errorf("the verifier failed for another reason than having no network: %q", out)
	}
	if ifs := strings.Fields(strings.SplitN(out, "---", 2)[0]); len(ifs) != 1 || ifs[0] != "lo" {
		t.Errorf("network interfaces in the verifier: %v; want only lo", ifs)
	}

	// Control: the same command in a container on the bridge does reach it,
	// so the refusal above is the verifier's profile, not the host.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	created, err := f.c.ContainerCreate(ctx, "", &docker.ContainerConfig{Image: testImage, Cmd: []string{"sh", "-c", dial}, Labels: dockertest.Labels(t, f.c)},
		&docker.HostConfig{NetworkMode: "bridge"})
	if err != nil {
		t.Fatal(err)
	}
	f.c.ContainerStart(ctx, created.ID)
	w, err := f.c.ContainerWait(ctx, created.ID, docker.WaitNotRunning)
	if err == nil && w.StatusCode == 0 && accepted.Load() == 0 {
		t.Fatal("control container exited 0 without reaching the listener")
	}
	if accepted.Load() == 0 {
		t.Skip("a container on the bridge cannot reach the host either; the check above proves nothing here")
	}
}

func TestVerifierCannotWriteTheWorktree(t *testing.T) {
	f := setup(t)
	// A worktree owned by another user, as when an agent's tools wrote it.
	if os.Geteuid() == 0 {
		os.Chown(f.worktree, 65534, 65534)
		os.Chown(filepath.Join(f.worktree, "calc.go"), 65534, 65534)
	}
	res := f.run(t, "vandal", time.Minute, "sh", "-c",
		"id -u; echo scratch-ok > $HOME/s && cat $HOME/s; grep CapEff /proc/self/status; touch /rootfs-write 2>&1; echo tamper >> /workspace/calc.go || exit 3; touch /workspace/new || exit 4")
	if res.Report.Passed || res.Report.ExitCode != 3 {
		t.Errorf("Report = %+v; want exit 3 (the append refused)", res.Report)
	}
	b, _ := os.ReadFile(filepath.Join(f.worktree, "calc.go"))
	if string(b) != "package calc\n" {
		t.Errorf("calc.go = %q; the verifier changed the worktree", b)
	}
	if _, err := os.Stat(filepath.Join(f.worktree, "new")); err == nil {
		t.Error("the verifier created a file in the worktree")
	}
	out := f.output(t, res)
	if !strings.Contains(out, "CapEff:\t0000000000000000") {
		t.Errorf("the verifier holds capabilities: %q", out)
	}
	if !strings.Contains(out, "scratch-ok") {
		t.Errorf("the verifier's user cannot write its HOME on the tmpfs: %q", out)
	}
	if !strings.Contains(out, "Read-only file system") {
		t.Errorf("the root file system was writable: %q", out)
	}
	if os.Geteuid() == 0 && !strings.Contains(out, "65534\n") {
		t.Errorf("the verifier did not run as the worktree's owner (65534): %q", out)
	}
}

func TestVerifierTimeoutKillsAndRemoves(t *testing.T) {
	f := setup(t)
	res := f.run(t, "slow", time.Second, "sh", "-c", "echo started; sleep 600")
	rep := res.Report
	if rep.Passed || !rep.TimedOut || rep.ExitCode != -1 || rep.Signature == "" {
		t.Errorf("Report = %+v; want a timeout", rep)
	}
	if !strings.Contains(f.output(t, res), "started") {
		t.Error("the output before the timeout was lost")
	}
	f.noContainers(t)
}

func TestVerifierOutputIsCapped(t *testing.T) {
	f := setup(t)
	f.r.MaxOutput = 4096
	// 2000 lines "line N": the exact size is computed below.
	res := f.run(t, "chatty", time.Minute, "sh", "-c", `i=0; while [ $i -lt 2000 ]; do echo "line $i"; i=$((i+1)); done`)
	var want int64
	for i := 0; i < 2000; i++ {
		want += int64(len(fmt.Sprintf("line %d\n", i)))
	}
	rep := res.Report
	if !rep.Passed || !rep.Truncated || rep.OutputBytes != want {
		t.Fatalf("Report = %+v; want passed, truncated, %d bytes written", rep, want)
	}
	out := f.output(t, res)
	if len(out) > 4096+100 {
		t.Errorf("stored output is %d bytes; want about the cap of 4096", len(out))
	}
	if !strings.HasPrefix(out, "line 0\nline 1\n") || !strings.HasSuffix(out, "line 1998\nline 1999\n") || !strings.Contains(out, "bytes of output omitted") {
		t.Errorf("stored output does not keep head and tail with a marker: %q...%q", out[:40], out[len(out)-40:])
	}
}

func TestBadRequestsStartNothing(t *testing.T) {
	f := setup(t)
	ok := Request{RunID: "r-0000000000f1", Image: testImage, Worktree: f.worktree, DiffHash: diffHash,
		Verifier: Verifier{Name: "v", Command: []string{"true"}, Timeout: time.Minute}}
	file := filepath.Join(f.worktree, "calc.go")
	for name, mut := range map[string]func(*Request){
		"run id":            func(r *Request) { r.RunID = "../r-1" },
		"no image":          func(r *Request) { r.Image = "" },
		"relative worktree": func(r *Request) { r.Worktree = "worktree" },
		"missing worktree":  func(r *Request) { r.Worktree = filepath.Join(f.worktree, "nope") },
		"worktree is file":  func(r *Request) { r.Worktree = file },
		"bad diff hash":     func(r *Request) { r.DiffHash = "abc" },
		"empty command":     func(r *Request) { r.Verifier.Command = nil },
		"no timeout":        func(r *Request) { r.Verifier.Timeout = 0 },
		"bad name":          func(r *Request) { r.Verifier.Name = "a/b" },
	} {
		req := ok
		mut(&req)
		if _, err := f.r.Run(context.Background(), req); err == nil {
			t.Errorf("%s: Run succeeded", name)
		}
	}
	f.noContainers(t)
	req := ok
	req.Image = "choir-test-verify:no-such-image"
	if _, err := f.r.Run(context.Background(), req); err == nil || !strings.Contains(err.Error(), "no-such-image") {
		t.Errorf("Run with a missing image = %v; want an error naming it", err)
	}
}

func TestContainerProfile(t *testing.T) {
	wt := t.TempDir()
	r := &Runner{Instance: "i"}
	cfg, hc, err := r.containerConfig(Request{RunID: "r-0000000000f1", Image: "img", Worktree: wt, Verifier: Verifier{Name: "v", Command: []string{"true"}, Timeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(cfg, hc, wt); err != nil {
		t.Fatalf("the runner's own profile is refused: %v", err)
	}
	if len(cfg.Entrypoint) != 1 || cfg.Entrypoint[0] != "" {
		t.Errorf("Entrypoint = %q; want the image's cleared", cfg.Entrypoint)
	}
	// choird's startup sweep of orphans (lifecycle.RemoveOrphans) finds a
	// verifier left by a choird killed -9 by these labels.
	if cfg.Labels[lifecycle.LabelManaged] != "true" || cfg.Labels[lifecycle.LabelInstance] != "i" || cfg.Labels[LabelRun] != "r-0000000000f1" {
		t.Errorf("Labels = %v; want choird's managed and instance labels and the run", cfg.Labels)
	}
	for name, mut := range map[string]func(*docker.ContainerConfig, *docker.HostConfig){
		"bridge network": func(_ *docker.ContainerConfig, h *docker.HostConfig) { h.NetworkMode = "bridge" },
		"host network":   func(_ *docker.ContainerConfig, h *docker.HostConfig) { h.NetworkMode = "host" },
		"writable mount": func(_ *docker.ContainerConfig, h *docker.HostConfig) { h.Mounts[0].ReadOnly = false },
		"docker socket": func(_ *docker.ContainerConfig, h *docker.HostConfig) {
			h.Mounts = append(h.Mounts, docker.Mount{Type: docker.MountBind, Source: "/var/run/docker.sock", Target: "/s"})
		},
		"capability":    func(_ *docker.ContainerConfig, h *docker.HostConfig) { h.CapAdd = []string{"NET_RAW"} },
		"privileged":    func(_ *docker.ContainerConfig, h *docker.HostConfig) { h.Privileged = true },
		"writable root": func(_ *docker.ContainerConfig, h *docker.HostConfig) { h.ReadonlyRootfs = false },
		"no limits":     func(_ *docker.ContainerConfig, h *docker.HostConfig) { h.Memory = 0 },
		"unconfined": func(_ *docker.ContainerConfig, h *docker.HostConfig) {
			h.SecurityOpt = append(h.SecurityOpt, "seccomp=unconfined")
		},
		"host pid":         func(_ *docker.ContainerConfig, h *docker.HostConfig) { h.PidMode = "host" },
		"other mount path": func(_ *docker.ContainerConfig, h *docker.HostConfig) { h.Mounts[0].Source = "/" },
	} {
		c2, h2, _ := r.containerConfig(Request{RunID: "r-0000000000f1", Image: "img", Worktree: wt, Verifier: Verifier{Name: "v", Command: []string{"true"}, Timeout: time.Minute}})
		mut(c2, h2)
		if err := Check(c2, h2, wt); err == nil {
			t.Errorf("%s: Check accepted it", name)
		}
	}
}

func TestCancelledContextRemovesTheContainer(t *testing.T) {
	f := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := f.r.Run(ctx, Request{RunID: "r-0000000000f1", Image: testImage, Worktree: f.worktree, DiffHash: diffHash,
			Verifier: Verifier{Name: "long", Command: []string{"sh", "-c", "echo up; sleep 600"}, Timeout: time.Hour}})
		done <- err
	}()
	// Wait until the verifier's container runs, then cancel.
	deadline := time.Now().Add(time.Minute)
	for {
		list, _ := f.c.ContainerList(context.Background(), docker.ContainerListOptions{Filters: docker.Filters{"label": {LabelRun + "=r-0000000000f1", "choir.instance=verify-test"}}})
		if len(list) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the verifier's container never ran")
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run after cancel = %v; want context.Canceled", err)
	}
	f.noContainers(t)
}

// The agent's image (Debian, with choir-agent as its entrypoint) runs the
// verifier's command, not its entrypoint, with the toolchain it holds.
func TestAgentImageEntrypointIsBypassed(t *testing.T) {
	f := setup(t)
	debian := imagetest.Debian(t, f.c)
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	df := []byte("FROM " + debian + "\nENTRYPOINT [\"/bin/false\", \"entrypoint-ran\"]\n")
	tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(df))})
	tw.Write(df)
	tw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const ref = "choir-test-verify:entrypoint"
	if _, err := f.c.ImageBuild(ctx, &ctxTar, docker.BuildOptions{Tags: []string{ref}, ForceRemove: true}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(f.worktree, "test_calc.py"), []byte("assert 1 + 2 == 3\nprint('1 passed, 0 failed')\n"), 0o644)
	res, err := f.r.Run(ctx, Request{RunID: "r-0000000000f1", Image: ref, Worktree: f.worktree, DiffHash: diffHash,
		Verifier: Verifier{Name: "py", Timeout: time.Minute, Command: []string{"sh", "-c",
			`echo "HOME=$HOME GOFLAGS=$GOFLAGS"; exec python3 -B test_calc.py`}}})
	if err != nil {
		t.Fatal(err)
	}
	out := f.output(t, res)
	if !res.Report.Passed || strings.Contains(out, "entrypoint-ran") {
		t.Fatalf("Report = %+v, output %q; want the command run and passed", res.Report, out)
	}
	if res.Report.Summary == nil || res.Report.Summary.Passed != 1 {
		t.Errorf("Summary = %+v; want 1 passed (output %q)", res.Report.Summary, out)
	}
	if !strings.Contains(out, "HOME=/tmp GOFLAGS=-buildvcs=false") {
		t.Errorf("verifier environment: %q", out)
	}
}

// BenchmarkVerifierTrue is the fixed cost of one verifier: a container
// created, started, waited for, its output and report and attestation
// stored, and removed.
func BenchmarkVerifierTrue(b *testing.B) {
	c := dockertest.Engine(b)
	dockertest.BusyboxImage(b, c, testImage)
	store, err := objects.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	r := &Runner{Docker: c, Objects: store, Instance: "verify-bench", Labels: dockertest.Labels(b, c)}
	req := Request{RunID: "r-0000000000b1", Image: testImage, Worktree: b.TempDir(), DiffHash: diffHash,
		Verifier: Verifier{Name: "true", Command: []string{"true"}, Timeout: time.Minute}}
	for b.Loop() {
		res, err := r.Run(context.Background(), req)
		if err != nil || !res.Report.Passed {
			b.Fatalf("Run = %+v, %v", res.Report, err)
		}
	}
}
