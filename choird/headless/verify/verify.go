// Package verify runs a headless run's verifiers apart from it (seed 002
// §8, §3's verification zone): each verifier command in its own
// short-lived container, with no network, the run's worktree mounted
// read-only, and the same hardened profile as agent containers
// (lifecycle.Hardened: no capabilities at all, no-new-privileges, a
// read-only root, tmpfs /tmp and /run, cgroup limits), from the image the
// caller names (the agent's image, so the verifier sees the agent's
// toolchain).
//
// The verifier's raw output (stdout and stderr interleaved, capped) is
// stored in the object store and never returned: what comes back is a
// Report (exit code, duration, pass, the output's object hash, a failure
// signature, counts parsed from go test or "N passed, N failed" lines) and
// an Attestation binding run, verifier, the worktree's diff hash and the
// report's hash, both stored as objects too. A run's model context gets at
// most the Report; the director decides from Attestations.
//
// A verifier that exceeds its timeout is killed; its container is removed
// whatever happens (also when ctx ends). Containers carry choird's
// lifecycle labels (choir.managed, choir.instance), so a verifier left
// running by a choird killed -9 is removed with the other orphans at the
// next start.
package verify

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"choir/choird/headless/objects"
	"choir/choird/lifecycle"
	"choir/internal/config"
	"choir/internal/docker"
)

// Verifier is one verifier definition: a command run in the worktree
// (exec'd directly: write ["sh", "-c", "..."] for a shell), passing when it
// exits 0 within Timeout. In JSON (config) it reads
// {"name": "go-test", "command": ["go", "test", "./..."], "timeout_s": 600}.
type Verifier struct {
	Name    string
	Command []string
	Timeout time.Duration
}

type verifierJSON struct {
	Name     string   `json:"name"`
	Command  []string `json:"command"`
	TimeoutS int64    `json:"timeout_s"`
}

// MarshalJSON writes the config form, the timeout in whole seconds.
func (v Verifier) MarshalJSON() ([]byte, error) {
	return json.Marshal(verifierJSON{Name: v.Name, Command: v.Command, TimeoutS: int64(v.Timeout / time.Second)})
}

// UnmarshalJSON reads the config form, refusing unknown fields; Check
// validates the values.
func (v *Verifier) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var j verifierJSON
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("verifier: %w", err)
	}
	if j.TimeoutS < 0 || j.TimeoutS > int64(MaxTimeout/time.Second) {
		return fmt.Errorf("verifier %q: timeout_s %d is not between 1 and %d", j.Name, j.TimeoutS, int64(MaxTimeout/time.Second))
	}
	*v = Verifier{Name: j.Name, Command: j.Command, Timeout: time.Duration(j.TimeoutS) * time.Second}
	return nil
}

// MaxTimeout bounds a verifier's timeout.
const MaxTimeout = 2 * time.Hour

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)

// Check reports what is wrong with v, if anything.
func (v Verifier) Check() error {
	var bad []string
	if !namePattern.MatchString(v.Name) {
		bad = append(bad, fmt.Sprintf("name %q is not 1-64 of a-z, 0-9, '.', '_', '-' starting with a letter or digit", v.Name))
	}
	if len(v.Command) == 0 || v.Command[0] == "" {
		bad = append(bad, "command is empty")
	}
	for i, a := range v.Command {
		if strings.ContainsRune(a, 0) {
			bad = append(bad, fmt.Sprintf("command[%d] holds a NUL byte", i))
		}
	}
	if v.Timeout <= 0 || v.Timeout > MaxTimeout {
		bad = append(bad, fmt.Sprintf("timeout %s is not between 0 and %s", v.Timeout, MaxTimeout))
	}
	if len(bad) > 0 {
		return fmt.Errorf("verifier %q: %s", v.Name, strings.Join(bad, "; "))
	}
	return nil
}

// Where things are inside a verifier container.
const (
	WorkspaceTarget = lifecycle.WorkspaceTarget // the worktree, read-only
	Home            = "/tmp"                    // HOME, the tmpfs
	// Labels naming what a verifier container is for.
	LabelRun      = "choir.run"
	LabelVerifier = "choir.verifier"
)

// Env is the environment of every verifier (added to the image's): a home,
// caches and temporary files on the tmpfs. The worktree's .git names a
// directory on the host that the container does not have, so git cannot
// work in /workspace: Go is told not to stamp builds with VCS data (which
// would run git), and to use the toolchain the image has (there is no
// network to fetch another).
var Env = []string{"HOME=" + Home, "TMPDIR=/tmp", "XDG_CACHE_HOME=/tmp/.cache", "GOFLAGS=-buildvcs=false", "GOTOOLCHAIN=local"}

// DefaultMaxOutput is how much of a verifier's output is kept (1 MiB).
const DefaultMaxOutput = 1 << 20

// Runner runs verifiers. Docker and Objects are required.
type Runner struct {
	Docker   *docker.Client
	Objects  *objects.Store
	Instance string                 // this choird's lifecycle.LabelInstance
	Limits   config.ContainerLimits // cgroup limits; zero values take config's defaults
	// MaxOutput caps the output kept (its first and last halves when
	// longer); 0 means DefaultMaxOutput.
	MaxOutput int64
	Labels    map[string]string // added to every container (tests mark theirs)
	// Now is the clock for Attestation.At; nil means time.Now.
	Now func() time.Time
}

// Request is one verifier to run against one worktree.
type Request struct {
	RunID    string
	Verifier Verifier
	Image    string // the agent's image
	Worktree string // host directory mounted read-only at /workspace
	DiffHash string // the worktree's patch hash (worktree.Patch.Hash) now
}

// Report is what a verifier did, without its output.
type Report struct {
	Verifier    string   `json:"verifier"`
	Command     []string `json:"command"`
	Image       string   `json:"image"`
	ExitCode    int      `json:"exit_code"` // -1 when killed at the timeout
	DurationMS  int64    `json:"duration_ms"`
	Passed      bool     `json:"passed"`
	TimedOut    bool     `json:"timed_out,omitempty"`
	Output      string   `json:"output"`       // object hash of the kept output
	OutputBytes int64    `json:"output_bytes"` // bytes the verifier wrote
	Truncated   bool     `json:"truncated,omitempty"`
	// Signature identifies a failure (mood.Signature of the failing lines,
	// with times, addresses and temporary paths taken out), so that the
	// anomaly detectors recognise a repeated one. "" when passed.
	Signature string   `json:"signature,omitempty"`
	Summary   *Summary `json:"summary,omitempty"`
}

// Attestation is the director's evidence that a verifier ran against one
// state of a run's worktree.
type Attestation struct {
	Kind     string    `json:"kind"` // AttestationKind
	RunID    string    `json:"run_id"`
	Verifier string    `json:"verifier"`
	DiffHash string    `json:"diff_hash"`
	Report   string    `json:"report"` // object hash of the Report
	Result   string    `json:"result"` // "pass" or "fail"
	At       time.Time `json:"at"`
}

// AttestationKind marks an Attestation object.
const AttestationKind = "choir.attestation.v1"

// Result is a verifier's report and attestation, with their object hashes.
type Result struct {
	Report          Report
	ReportHash      string
	Attestation     Attestation
	AttestationHash string
}

var runIDPattern = regexp.MustCompile(`^r-[0-9a-f]{12}$`)

func (r *Runner) check(req Request) error {
	var bad []string
	if r.Docker == nil || r.Objects == nil {
		bad = append(bad, "the runner has no Docker client or object store")
	}
	if !runIDPattern.MatchString(req.RunID) {
		bad = append(bad, fmt.Sprintf("run id %q is not r- and 12 hex digits", req.RunID))
	}
	if err := req.Verifier.Check(); err != nil {
		bad = append(bad, err.Error())
	}
	if req.Image == "" {
		bad = append(bad, "no image")
	}
	if !objects.Valid(req.DiffHash) {
		bad = append(bad, fmt.Sprintf("diff hash %q is not a sha256", req.DiffHash))
	}
	if !filepath.IsAbs(req.Worktree) {
		bad = append(bad, fmt.Sprintf("worktree %q is not an absolute path", req.Worktree))
	} else if fi, err := os.Lstat(req.Worktree); err != nil || !fi.IsDir() {
		bad = append(bad, fmt.Sprintf("worktree %s is not a directory", req.Worktree))
	}
	if len(bad) > 0 {
		return fmt.Errorf("verify run %s: %s", req.RunID, strings.Join(bad, "; "))
	}
	return nil
}

// Run runs one verifier and stores its output, report and attestation. A
// verifier that fails or times out is a Result with Report.Passed false;
// an error means the verifier could not be run at all (a bad request, a
// missing image, the engine), and nothing was attested.
func (r *Runner) Run(ctx context.Context, req Request) (Result, error) {
	if err := r.check(req); err != nil {
		return Result{}, err
	}
	v := req.Verifier
	cfg, hc, err := r.containerConfig(req)
	if err != nil {
		return Result{}, err
	}
	if err := Check(cfg, hc, req.Worktree); err != nil {
		return Result{}, err
	}
	name := fmt.Sprintf("choir-verify-%s-%s-%s", req.RunID, v.Name, randomSuffix())
	created, err := r.Docker.ContainerCreate(ctx, name, cfg, hc)
	if err != nil {
		return Result{}, fmt.Errorf("verify run %s: create the container of verifier %s (image %s): %w", req.RunID, v.Name, req.Image, err)
	}
	id := created.ID
	defer r.remove(ctx, id)

	if err := r.Docker.ContainerStart(ctx, id); err != nil {
		return Result{}, fmt.Errorf("verify run %s: start verifier %s: %w", req.RunID, v.Name, err)
	}
	start := time.Now()
	out := newCapture(r.maxOutput())
	logCtx, stopLogs := context.WithCancel(ctx)
	defer stopLogs()
	var logErr error
	var logsDone sync.WaitGroup
	logsDone.Add(1)
	go func() {
		defer logsDone.Done()
		s, err := r.Docker.ContainerLogs(logCtx, id, docker.LogsOptions{Stdout: true, Stderr: true, Follow: true})
		if err != nil {
			logErr = err
			return
		}
		defer s.Close()
		if err := s.Copy(out, out); err != nil && logCtx.Err() == nil {
			logErr = err
		}
	}()

	waitCtx, cancel := context.WithTimeout(ctx, v.Timeout)
	w, err := r.Docker.ContainerWait(waitCtx, id, docker.WaitNotRunning)
	cancel()
	exit, timedOut := int(w.StatusCode), false
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, fmt.Errorf("verify run %s: verifier %s: %w", req.RunID, v.Name, ctx.Err())
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			return Result{}, fmt.Errorf("verify run %s: wait for verifier %s: %w", req.RunID, v.Name, err)
		}
		timedOut, exit = true, -1
		if err := r.kill(ctx, id); err != nil {
			return Result{}, fmt.Errorf("verify run %s: kill verifier %s at its timeout: %w", req.RunID, v.Name, err)
		}
	}
	elapsed := time.Since(start)
	// The log stream ends when the container stops; give it a moment to
	// deliver the last frames, no more.
	drained := make(chan struct{})
	go func() { logsDone.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(10 * time.Second):
		stopLogs()
		<-drained
	}
	if logErr != nil {
		return Result{}, fmt.Errorf("verify run %s: read verifier %s's output: %w", req.RunID, v.Name, logErr)
	}

	kept := out.Bytes()
	outHash, err := r.Objects.Put(kept)
	if err != nil {
		return Result{}, fmt.Errorf("verify run %s: store verifier %s's output: %w", req.RunID, v.Name, err)
	}
	rep := Report{
		Verifier: v.Name, Command: v.Command, Image: req.Image,
		ExitCode: exit, DurationMS: elapsed.Milliseconds(),
		Passed: exit == 0 && !timedOut, TimedOut: timedOut,
		Output: outHash, OutputBytes: out.written(), Truncated: out.written() > r.maxOutput(),
		Summary: summarize(kept),
	}
	if !rep.Passed {
		rep.Signature = signature(v.Name, kept, exit, timedOut)
	}
	repHash, err := objects.PutJSON(r.Objects, rep)
	if err != nil {
		return Result{}, fmt.Errorf("verify run %s: store verifier %s's report: %w", req.RunID, v.Name, err)
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	att := Attestation{Kind: AttestationKind, RunID: req.RunID, Verifier: v.Name, DiffHash: req.DiffHash, Report: repHash, Result: "fail", At: now().UTC()}
	if rep.Passed {
		att.Result = "pass"
	}
	attHash, err := objects.PutJSON(r.Objects, att)
	if err != nil {
		return Result{}, fmt.Errorf("verify run %s: store verifier %s's attestation: %w", req.RunID, v.Name, err)
	}
	return Result{Report: rep, ReportHash: repHash, Attestation: att, AttestationHash: attHash}, nil
}

// RunAll runs verifiers one after another against the same worktree and
// reports whether all passed. It stops at the first error (not at the
// first failure).
func (r *Runner) RunAll(ctx context.Context, req Request, vs []Verifier) ([]Result, bool, error) {
	var out []Result
	all := true
	for _, v := range vs {
		req.Verifier = v
		res, err := r.Run(ctx, req)
		if err != nil {
			return out, false, err
		}
		out = append(out, res)
		all = all && res.Report.Passed
	}
	return out, all, nil
}

func (r *Runner) maxOutput() int64 {
	if r.MaxOutput > 0 {
		return r.MaxOutput
	}
	return DefaultMaxOutput
}

// kill stops the container at once and waits until it has stopped.
func (r *Runner) kill(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := r.Docker.ContainerKill(ctx, id, "SIGKILL"); err != nil && !docker.IsConflict(err) && !docker.IsNotFound(err) {
		return err
	}
	_, err := r.Docker.ContainerWait(ctx, id, docker.WaitNotRunning)
	if docker.IsNotFound(err) {
		return nil
	}
	return err
}

// remove force-removes the container, even when ctx has ended.
func (r *Runner) remove(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_ = r.Docker.ContainerRemove(ctx, id, docker.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
}

func randomSuffix() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}
