package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/docker"
)

// Status is how a check went.
type Status string

// The statuses of a check. Only Fail makes the installation fail.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
	Skip Status = "skip" // the check could not apply (offline, or what it needs is missing)
)

// Result is one check's line of the report.
type Result struct {
	Check  string `json:"check"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"` // what to do, for anything not ok
}

// Report is every check's result, in order.
type Report struct {
	OK     bool     `json:"ok"` // nothing failed
	Checks []Result `json:"checks"`
}

// DefaultTimeout is how long one check may take before it is cut off.
const DefaultTimeout = 5 * time.Second

// Doctor checks the installation at Home. Set the fields, then call Run
// once.
type Doctor struct {
	Home       config.Home
	DockerHost string        // the engine; "" means DOCKER_HOST, else the default socket
	Timeout    time.Duration // per check; 0 means DefaultTimeout
	HTTP       *http.Client  // for the clock check; nil means a client of its own
	Now        func() time.Time

	// What earlier checks found, for later ones. A check that was cut off
	// may still be running: it writes through set, which drops its writes.
	mu     sync.Mutex
	loaded *config.Loaded
	status *ctl.Status    // choird's status, when it answered
	engine *docker.Client // the engine, when it answered
}

// Check is one check: its name and the function that runs it.
type Check struct {
	Name string
	Run  func(ctx context.Context) Result
}

// Checks are the doctor's checks, in the order they run: the checks of
// the agent images are known once the config has been read, so they are
// made then (imageChecks) and run between these two lists.
func (d *Doctor) checks() (before, after []Check) {
	before = []Check{
		{"config", d.checkConfig},
		{"secrets file", d.checkSecretsFile},
		{"sockets", d.checkSockets},
		{"choird", d.checkChoird},
		{"docker engine", d.checkEngine},
		{"docker disk", d.checkDisk},
		{"postgres", d.checkPostgres},
		{"base image", d.checkBaseImage},
	}
	after = []Check{
		{"logs", d.checkLogs},
		{"metrics", d.checkMetrics},
		{"spend", d.checkSpend},
		{"network", d.checkNetwork},
		{"clock", d.checkClock},
	}
	return before, after
}

// Run runs every check and returns the report.
func (d *Doctor) Run(ctx context.Context) Report {
	defer func() {
		if e := d.getEngine(); e != nil {
			e.Close()
		}
	}()
	before, after := d.checks()
	rep := RunChecks(ctx, before, d.timeout())
	rep.add(RunChecks(ctx, d.imageChecks(), d.timeout()))
	rep.add(RunChecks(ctx, after, d.timeout()))
	return rep
}

func (rep *Report) add(more Report) {
	rep.OK = rep.OK && more.OK
	rep.Checks = append(rep.Checks, more.Checks...)
}

// RunChecks runs checks one after another, each under its own deadline; a
// check still running at its deadline is reported as failed and left
// behind (its context is cancelled).
func RunChecks(ctx context.Context, checks []Check, timeout time.Duration) Report {
	rep := Report{OK: true}
	for _, c := range checks {
		r := runOne(ctx, c, timeout)
		r.Check = c.Name
		if r.Status == Fail {
			rep.OK = false
		}
		rep.Checks = append(rep.Checks, r)
	}
	return rep
}

func runOne(ctx context.Context, c Check, timeout time.Duration) Result {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan Result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- Result{Status: Fail, Detail: fmt.Sprintf("the check crashed: %v", p), Fix: "report this as a bug in choird"}
			}
		}()
		done <- c.Run(cctx)
	}()
	select {
	case r := <-done:
		return r
	case <-cctx.Done():
		if ctx.Err() != nil {
			return Result{Status: Fail, Detail: "interrupted", Fix: "run the doctor again"}
		}
		return Result{Status: Fail, Detail: fmt.Sprintf("no answer within %s: cut off", timeout),
			Fix: "something it asks hangs (a stopped or overloaded server, a firewall dropping packets): find out which, then run the doctor again"}
	}
}

func (d *Doctor) timeout() time.Duration {
	if d.Timeout > 0 {
		return d.Timeout
	}
	return DefaultTimeout
}

// inner is the deadline a check gives what it asks of the outside world
// (a server, a remote, an endpoint), so that it can still say what did not
// answer before its own deadline cuts it off.
func (d *Doctor) inner() time.Duration { return d.timeout() * 3 / 5 }

func (d *Doctor) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// set records what a check found, unless the check was cut off (its
// context ended): an abandoned check never changes what later ones see.
func (d *Doctor) set(ctx context.Context, f func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ctx.Err() == nil {
		f()
	}
}

func (d *Doctor) getLoaded() *config.Loaded {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.loaded
}

func (d *Doctor) getStatus() *ctl.Status {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.status
}

func (d *Doctor) getEngine() *docker.Client {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.engine
}

// WriteText writes the report, one line a check, then a summary line.
func (rep Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	counts := map[Status]int{}
	for _, r := range rep.Checks {
		counts[r.Status]++
		line := r.Detail
		if r.Fix != "" && r.Status != OK {
			line += " -- " + r.Fix
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Status, r.Check, oneLine(line))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	verdict := "nothing failed"
	if !rep.OK {
		verdict = "the installation has problems"
	}
	_, err := fmt.Fprintf(w, "\n%d ok, %d warn, %d fail, %d skip: %s.\n", counts[OK], counts[Warn], counts[Fail], counts[Skip], verdict)
	return err
}

// WriteJSON writes the report as indented JSON.
func (rep Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// oneLine folds a message that has line breaks (a list of config
// problems) onto one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " | ")), " ")
}

func ok(detail string, args ...any) Result {
	return Result{Status: OK, Detail: fmt.Sprintf(detail, args...)}
}

func skip(detail string, args ...any) Result {
	return Result{Status: Skip, Detail: fmt.Sprintf(detail, args...)}
}

func bad(s Status, fix, detail string, args ...any) Result {
	return Result{Status: s, Detail: fmt.Sprintf(detail, args...), Fix: fix}
}
