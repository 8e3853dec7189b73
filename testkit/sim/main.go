// Command sim is `make bench-sim`: the simulation beyond one host (issue
// 26). It runs a real choird, built from the tree, with its HTTPS agent
// transport (--transport=http) and plays N agents against it that speak
// the agent RPC exactly as choir-agent does, then reports choird's CPU and
// memory, the p50/p99 of each verb, and what gives out first, as a
// markdown table (DESIGN.md's performance section).
//
// No container runs. choird's DOCKER_HOST is a fake Docker Engine API the
// command serves on a unix socket (engine.go): the calls choird's agent
// lifecycle makes (_ping, version, the bridge network, whose gateway is a
// loopback address of the command's choosing so that choird's HTTPS
// endpoint listens there, the agent image with the labels `agent build`
// gives it, create, start, wait, logs, inspect, stop, kill, remove,
// list). A container's start starts a goroutine agent (agent.go) with
// what choir-agent would find in its container: the session id, agent id,
// lease token and heartbeat interval from the environment choird set, the
// endpoint from the command line, choird's CA from the socket directory
// choird mounts. It says INIT_HELLO, fetches its secrets and config,
// holds the push stream open and heartbeats at the configured interval
// (default 5 s); on a fraction of the ticks (-turns) it commits a user
// message and a model answer (hash-chained events carried by the
// heartbeat) and sends the answer with choir.dm.send, which choird queues
// in its durable outbox and delivers to a fake Telegram Bot API.
//
// Agents are started through choird's admin API (what `choirctl agent
// start` calls), -parallel at a time, up to each N of the list; each stage
// then settles two heartbeats and measures over -window: choird's CPU
// (/proc/<pid>/stat), RSS and PSS, its open files and threads, PGlite's CPU
// and the simulator's own (it shares the cores), and the latency of every
// call. A stage in which starts fail or choird ends running sessions is
// where choird gave out: later stages are not tried (-keep-going tries
// them). Postgres is CHOIR_DATABASE_URL, else PGlite
// (testkit/pgtest/pglite.sh, one connection).
//
// Everything it started goes at the end, also on SIGINT or SIGTERM; a
// second signal kills choird instead of waiting for its graceful stop.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"

	"choir/testkit/hostbench"
)

func main() {
	ctx, force, stop := hostbench.Signals("sim", os.Stderr)
	err := run(ctx, force, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(hostbench.ExitStatus("sim", err, os.Stderr))
}

// options are the command's flags.
type options struct {
	ns          []int
	window      time.Duration
	parallel    int
	turnRate    float64
	maxFailures int
	keepGoing   bool
	pool        int
	stdout      io.Writer
	stderr      io.Writer
}

func run(ctx context.Context, force <-chan struct{}, args []string, stdout, stderr io.Writer) error {
	o := options{stdout: stdout, stderr: stderr}
	h := &hostbench.Host{Name: "sim", Stderr: stderr, DBURL: os.Getenv("CHOIR_DATABASE_URL")}
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: sim [-n 1000,10000] [-window 60s] [-parallel 16] [-turns 0.02] (make bench-sim ARGS='...')")
		fs.PrintDefaults()
	}
	fs.StringVar(&h.Bin, "bin", "bin", "the directory holding choird and choirctl (make build)")
	fs.StringVar(&h.Repo, "repo", ".", "the choir checkout (for testkit's scripts)")
	list := fs.String("n", "1000,10000", "the numbers of agents to grow to, comma-separated")
	fs.DurationVar(&o.window, "window", 60*time.Second, "the window each stage is measured over")
	fs.IntVar(&o.parallel, "parallel", 16, "agent starts at once")
	fs.Float64Var(&o.turnRate, "turns", 0.02, "the fraction of heartbeat ticks that carry a turn (two events and a choir.dm.send)")
	fs.IntVar(&o.maxFailures, "max-failures", 50, "a stage stops starting agents after this many failed starts")
	fs.BoolVar(&o.keepGoing, "keep-going", false, "try the later stages even after choird gave out")
	fs.IntVar(&o.pool, "pool", 1, "choird's Postgres pool size (PGlite serves one connection)")
	if done, err := hostbench.ParseFlags(fs, args, stderr); done {
		return err
	}
	ns, err := parseNs(*list)
	if err != nil {
		fmt.Fprintf(stderr, "sim: %v\n", err)
		return hostbench.ErrUsage
	}
	o.ns = ns
	if o.window < time.Second || o.parallel < 1 || o.turnRate < 0 || o.turnRate > 1 || o.pool < 1 {
		fmt.Fprintln(stderr, "sim: -window must be at least 1s, -parallel and -pool at least 1, -turns between 0 and 1")
		return hostbench.ErrUsage
	}
	s := &sim{options: o, Host: h, force: force, rec: newRecorder()}
	defer s.teardown()
	if err := s.run(ctx); ctx.Err() == nil {
		return err
	}
	return ctx.Err()
}

// parseNs reads the -n list: positive, distinct, ascending.
func parseNs(list string) ([]int, error) {
	ns, err := hostbench.ParseCounts("-n", list)
	if err == nil && len(ns) == 0 {
		err = fmt.Errorf("-n %q names no number of agents", list)
	}
	return ns, err
}

func (s *sim) run(ctx context.Context) error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("the simulator reads /proc: it runs on Linux only (this is %s)", runtime.GOOS)
	}
	for _, b := range []string{"choird", "choirctl"} {
		if _, err := os.Stat(s.Bin + "/" + b); err != nil {
			return fmt.Errorf("%s/%s is missing: run make build first (make bench-sim does)", s.Bin, b)
		}
	}
	raiseFileLimit()
	var err error
	if s.Work, err = os.MkdirTemp("", "choir-sim-"); err != nil {
		return err
	}
	s.Home = s.Work + "/home"
	steps := []struct {
		what string
		do   func(context.Context) error
	}{
		{"fake engine and Telegram", func(context.Context) error { return s.servers() }},
		{"Postgres", s.StartPostgres},
		{"home and config", s.configure},
		{"choird", s.startChoird},
	}
	for _, st := range steps {
		if err := st.do(ctx); err != nil {
			return fmt.Errorf("%s: %w", st.what, err)
		}
	}
	var results []result
	for _, n := range s.ns {
		r, err := s.stage(ctx, n)
		if err != nil {
			if len(results) > 0 {
				fmt.Fprintf(s.stdout, "\nMeasured before N=%d failed:\n\n", n)
				writeTable(s.stdout, results)
			}
			return fmt.Errorf("N=%d: %w", n, err)
		}
		results = append(results, r)
		s.Say("N=%d measured; the table so far:", n)
		writeTable(s.stderr, results)
		if r.gaveOut() && !s.keepGoing {
			s.Say("choird gave out at N=%d: later stages not tried (-keep-going tries them)", n)
			break
		}
	}
	fmt.Fprintln(s.stdout)
	writeTable(s.stdout, results)
	if calls := s.eng.notServedCalls(); len(calls) > 0 {
		fmt.Fprintf(s.stdout, "\nEngine calls the fake did not serve (answered 404): %s\n", strings.Join(calls, ", "))
	}
	return nil
}

// raiseFileLimit lifts the soft limit on open files to the hard one, for
// the simulator and the choird it starts (which inherits it): each agent
// holds connections on both sides.
func raiseFileLimit() {
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil && rl.Cur < rl.Max {
		rl.Cur = rl.Max
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
	}
}
