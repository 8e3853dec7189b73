// Command scale is `make bench-scale`: it measures what N idle agents cost
// one host, on the real Docker engine and Postgres, with a real choird, and
// prints a markdown table (issue 19; DESIGN.md's performance section).
//
// It uses the engine it finds (DOCKER_HOST, /var/run/docker.sock) or starts
// a private one (testkit/dockertest/engine.sh), the Postgres of
// CHOIR_DATABASE_URL or an embedded PGlite (testkit/pgtest/pglite.sh), the
// cached Debian base image of testkit/imagetest, the offline demo model on
// the Docker bridge and a minimal fake Telegram Bot API on loopback. In a
// throwaway home it configures agents sc-1 … sc-N, each with its own
// workspace, git identity and Telegram DM (leases are exclusive), builds
// and starts them through choirctl, and for each N of the list (grown one
// stage from the last) measures:
//
//   - per-agent host memory: the PSS (/proc/<pid>/smaps_rollup) of the
//     processes in the container's cgroup (v1 or v2, whichever the host
//     runs), the PSS of its containerd shim, and the drop of MemAvailable
//     (/proc/meminfo) since before the first agent, over N;
//   - choird's RSS;
//   - the CPU of choird and of the database server (/proc/<pid>/stat) and of
//     all agents (cpuacct.usage or cpu.stat) over an idle window, and
//     choird's CPU per idle heartbeat;
//   - how long `choirctl agent start` of the Nth agent takes with N-1
//     running;
//   - `choirctl chat <agent> --once` p50/p95 for one agent (messages in a
//     row) and for ten agents at once.
//
// It removes everything it started (agents, containers, the images it
// built, choird, PGlite, the engine if it started one, its temp
// directory), also on SIGINT or SIGTERM; a second signal skips the
// graceful stop of choird and removes the containers at once.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"choir/testkit/hostbench"
)

func main() {
	ctx, force, stop := hostbench.Signals("scale", os.Stderr)
	err := run(ctx, force, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(hostbench.ExitStatus("scale", err, os.Stderr))
}

// options are the command's flags.
type options struct {
	ns        []int // stages, ascending
	idle      time.Duration
	heartbeat time.Duration
	parallel  int
	chat1     int // messages in a row to one agent
	chat10    int // messages from each of ten agents at once
	settle    time.Duration
	keep      bool
	oneBuild  bool // build sc-1 only; the others get copies of its image
	pool      int  // choird's Postgres pool
	stdout    io.Writer
	stderr    io.Writer
}

func run(ctx context.Context, force <-chan struct{}, args []string, stdout, stderr io.Writer) error {
	o := options{stdout: stdout, stderr: stderr}
	h := &hostbench.Host{Name: "scale", Stderr: stderr, DBURL: os.Getenv("CHOIR_DATABASE_URL")}
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: scale [-ns 1,10,100] [-n 1000] [-idle 30s] [-one-build] [-pool N] [-keep] [-quick] (make bench-scale ARGS='...')")
		fs.PrintDefaults()
	}
	fs.StringVar(&h.Bin, "bin", "bin", "the directory holding choird, choirctl and choir-agent (make build)")
	fs.StringVar(&h.Repo, "repo", ".", "the choir checkout (for testkit's scripts)")
	list := fs.String("ns", "1,10,100", "the numbers of agents to measure at, comma-separated")
	big := fs.Int("n", 0, "one larger N to measure at after the list (e.g. 1000); 0 for none")
	fs.DurationVar(&o.idle, "idle", 30*time.Second, "the idle window CPU is measured over")
	fs.DurationVar(&o.heartbeat, "heartbeat", 5*time.Second, "the agents' heartbeat interval (config heartbeat_interval_ms)")
	fs.IntVar(&o.parallel, "parallel", 4, "agents built and started at once while growing a stage")
	fs.BoolVar(&o.keep, "keep", false, "after the table, keep everything running until SIGINT or SIGTERM (to look around)")
	fs.BoolVar(&o.oneBuild, "one-build", false, "build only the first agent's image through choird and give the others copies of it (its layers, their own labels: "+
		"N=1000 without a thousand builds; the copies start unverified, having no build record)")
	fs.IntVar(&o.pool, "pool", 1, "choird's Postgres pool size (PGlite serves one connection; more with CHOIR_DATABASE_URL)")
	quick := fs.Bool("quick", false, "for development: a 5 s idle window, 5 messages to one agent and 2 from each of ten")
	if done, err := hostbench.ParseFlags(fs, args, stderr); done {
		return err
	}
	ns, err := parseNs(*list, *big)
	if err != nil {
		fmt.Fprintf(stderr, "scale: %v\n", err)
		return hostbench.ErrUsage
	}
	o.ns = ns
	o.chat1, o.chat10, o.settle = 20, 5, 4*o.heartbeat
	if *quick {
		o.idle, o.chat1, o.chat10, o.settle = 5*time.Second, 5, 2, o.heartbeat
	}
	if o.idle < time.Second || o.heartbeat < 100*time.Millisecond || o.parallel < 1 || o.pool < 1 {
		fmt.Fprintln(stderr, "scale: -idle must be at least 1s, -heartbeat at least 100ms, -parallel and -pool at least 1")
		return hostbench.ErrUsage
	}
	b := &bench{options: o, Host: h, force: force}
	defer b.teardown()
	if err := b.run(ctx); ctx.Err() == nil {
		return err
	}
	return ctx.Err() // interrupted: a clean stop, not a failure
}

// parseNs reads the -ns list and -n: positive, distinct, ascending.
func parseNs(list string, big int) ([]int, error) {
	ns, err := hostbench.ParseCounts("-ns", list)
	if err != nil {
		return nil, err
	}
	if big < 0 {
		return nil, fmt.Errorf("-n %d: want a positive number of agents, or 0 for none", big)
	}
	if big > 0 && !slices.Contains(ns, big) {
		ns = append(ns, big)
		slices.Sort(ns)
	}
	if len(ns) == 0 {
		return nil, fmt.Errorf("-ns %q and -n %d name no number of agents", list, big)
	}
	return ns, nil
}
