package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"choir/internal/docker"
	"choir/testkit/demomodel"
	"choir/testkit/hostbench"
)

// agentProc is one running agent as the host sees it.
type agentProc struct {
	id        string
	container string
	initPID   int // the container's first process (docker-init)
	shimPID   int // its parent: the containerd shim
	cg        cgroup
}

func (b *bench) run(ctx context.Context) error {
	if err := b.preflight(); err != nil {
		return err
	}
	var err error
	if b.Work, err = os.MkdirTemp("", "choir-scale-"); err != nil {
		return err
	}
	b.Home = filepath.Join(b.Work, "home")
	steps := []struct {
		what string
		do   func(context.Context) error
	}{
		{"Docker engine", b.engine},
		{"Postgres", b.StartPostgres},
		{"Debian base image", b.debian},
		{"model and Telegram", b.servers},
		{"home, repos and config", b.configure},
		{"choird", b.startChoird},
	}
	for _, s := range steps {
		if err := s.do(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
	}
	if b.baseline, err = b.readBaseline(ctx); err != nil {
		return err
	}
	var results []result
	for _, n := range b.ns {
		r, err := b.stage(ctx, n)
		if err != nil {
			if len(results) > 0 {
				fmt.Fprintf(b.stdout, "\nMeasured before N=%d failed:\n\n", n)
				b.printTable(results)
			}
			return fmt.Errorf("N=%d: %w", n, err)
		}
		results = append(results, r)
		b.Say("N=%d measured; the table so far:", n)
		one, ten := b.chatLabels()
		writeTable(b.stderr, results, one, ten)
	}
	fmt.Fprintln(b.stdout)
	b.printTable(results)
	if b.keep {
		b.Say("-keep: everything runs until SIGINT or SIGTERM: home %s, DOCKER_HOST=%s, choirctl --home %s", b.Home, b.dc.Host(), b.Home)
		<-ctx.Done()
	}
	return nil
}

func (b *bench) printTable(rs []result) {
	one, ten := b.chatLabels()
	writeTable(b.stdout, rs, one, ten)
}

// chatLabels name the two chat measurements in the table.
func (b *bench) chatLabels() (one, ten string) {
	return fmt.Sprintf("1 agent × %d in a row", b.chat1), fmt.Sprintf("10 agents × %d at once", b.chat10)
}

// readBaseline waits for choird to settle with no agent, then reads its
// RSS.
func (b *bench) readBaseline(ctx context.Context) (baseline, error) {
	if err := sleep(ctx, b.settle); err != nil {
		return baseline{}, err
	}
	rss, err := readRSS(b.ChoirdPID())
	if err != nil {
		return baseline{}, fmt.Errorf("choird's RSS: %w", err)
	}
	return baseline{choirdRSS: rss}, nil
}

// stage grows the running agents to n and measures. The images are built
// first, so that MemAvailable is compared across the starts alone.
func (b *bench) stage(ctx context.Context, n int) (result, error) {
	r := result{N: n, DBCPU: math.NaN()}
	have := len(b.agents)
	b.Say("N=%d: building %s … %s", n, agentID(have+1), agentID(n))
	from := have + 1
	if b.oneBuild && have == 0 { // the others are copies of the first
		if err := b.build(ctx, agentID(1)); err != nil {
			return r, err
		}
		from = 2
	}
	if err := b.each(ctx, from, n, func(ctx context.Context, id string) error { return b.build(ctx, id) }); err != nil {
		return r, err
	}
	availBefore, err := readMemAvailable()
	if err != nil {
		return r, err
	}
	b.Say("N=%d: starting %s … %s", n, agentID(have+1), agentID(n))
	started := make([]*agentProc, n-have)
	if err := b.each(ctx, have+1, n-1, func(ctx context.Context, id string) error {
		a, err := b.start(ctx, id)
		if a != nil {
			b.mu.Lock()
			started[agentIndex(id)-have-1] = a
			b.mu.Unlock()
		}
		return err
	}); err != nil {
		b.keepStarted(started)
		return r, err
	}
	t0 := time.Now()
	a, err := b.start(ctx, agentID(n))
	started[n-have-1] = a
	b.keepStarted(started)
	if err != nil {
		return r, err
	}
	r.StartNth = time.Since(t0)
	if err := b.ChoirdExited(); err != nil {
		return r, err
	}
	if err := sleep(ctx, b.settle); err != nil {
		return r, err
	}
	availAfter, err := readMemAvailable()
	if err != nil {
		return r, err
	}
	b.memDrop += availBefore - availAfter
	if err := b.memory(&r); err != nil {
		return r, err
	}
	b.Say("N=%d: idle for %v", n, b.idle)
	if err := b.idleCPU(ctx, &r); err != nil {
		return r, err
	}
	b.Say("N=%d: chatting", n)
	b.model.take()
	lat, err := b.chat(ctx, b.agents[:1], b.chat1)
	if err != nil {
		return r, err
	}
	r.Chat1P50, r.Chat1P95 = hostbench.Percentile(lat, 50), hostbench.Percentile(lat, 95)
	if n >= 10 {
		lat, err := b.chat(ctx, b.agents[:10], b.chat10)
		if err != nil {
			return r, err
		}
		r.Chat10P50, r.Chat10P95 = hostbench.Percentile(lat, 50), hostbench.Percentile(lat, 95)
	}
	r.ModelP50 = hostbench.Percentile(b.model.take(), 50)
	return r, b.ChoirdExited()
}

// keepStarted adds the agents a stage started to b.agents, in order.
func (b *bench) keepStarted(started []*agentProc) {
	for _, a := range started {
		if a != nil {
			b.agents = append(b.agents, a)
		}
	}
}

func agentIndex(id string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(id, "sc-"))
	return n
}

// each runs do for agents from..to, b.parallel at a time; the first error
// stops the rest.
func (b *bench) each(ctx context.Context, from, to int, do func(context.Context, string) error) error {
	if from > to {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for w := 0; w < b.parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := do(ctx, agentID(i)); err != nil {
					mu.Lock()
					if first == nil {
						first = err
						cancel()
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := from; i <= to && ctx.Err() == nil; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
		}
		if i%100 == 0 {
			b.Say("… %s", agentID(i))
		}
	}
	close(next)
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// build builds one agent's image through choird and remembers it for
// teardown; with -one-build, every agent but the first gets a copy.
func (b *bench) build(ctx context.Context, id string) error {
	if b.oneBuild && id != agentID(1) {
		return b.copyImage(ctx, agentID(1), id)
	}
	var out bytes.Buffer
	err := b.Ctl(ctx, nil, &out, "agent", "build", id, "--json")
	b.remember(id)
	if err != nil {
		return err
	}
	var res struct {
		BaseImage string `json:"base_image"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return fmt.Errorf("agent build %s --json: %w", id, err)
	}
	b.mu.Lock()
	b.baseImage = res.BaseImage
	b.mu.Unlock()
	return nil
}

// copyImage gives agent to the image from's last build made, relabelled:
// a build of one label on from's image, so it shares every layer, as the
// images of agents built from one global repo share their base and
// choir-agent. choird starts it (its latest tag and labels are right) but
// cannot verify it: no build record names it.
func (b *bench) copyImage(ctx context.Context, from, agent string) error {
	img, err := b.dc.ImageInspect(ctx, "choir-agent-"+from+":latest")
	if err != nil {
		return fmt.Errorf("copy %s's image for %s: %w", from, agent, err)
	}
	labels := map[string]string{}
	if img.Config != nil {
		maps.Copy(labels, img.Config.Labels)
	}
	labels["choir.agent"] = agent
	version := labels["choir.image_version"]
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	df := []byte("FROM choir-agent-" + from + ":latest\n")
	tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(df))})
	tw.Write(df)
	tw.Close()
	b.remember(agent)
	tags := []string{"choir-agent-" + agent + ":latest"}
	if version != "" {
		tags = append(tags, "choir-agent-"+agent+":"+version)
	}
	if _, err := b.dc.ImageBuild(ctx, &ctxTar, docker.BuildOptions{Tags: tags, Labels: labels}); err != nil {
		return fmt.Errorf("copy %s's image for %s: %w", from, agent, err)
	}
	return nil
}

func (b *bench) remember(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.built = append(b.built, id)
}

// start starts one agent and finds its processes on the host.
func (b *bench) start(ctx context.Context, id string) (*agentProc, error) {
	var out bytes.Buffer
	if err := b.Ctl(ctx, nil, &out, "agent", "start", id, "--dm=dm-"+id, "--json"); err != nil {
		return nil, err
	}
	var st struct {
		Container string `json:"container"`
	}
	if err := json.Unmarshal(out.Bytes(), &st); err != nil || st.Container == "" {
		return nil, fmt.Errorf("agent start %s --json: no container in %q", id, abbrev(out.String()))
	}
	c, err := b.dc.ContainerInspect(ctx, st.Container)
	if err != nil {
		return nil, fmt.Errorf("inspect %s's container: %w", id, err)
	}
	if c.State == nil || c.State.Pid <= 0 {
		return nil, fmt.Errorf("%s's container %s has no running process", id, st.Container)
	}
	a := &agentProc{id: id, container: c.ID, initPID: c.State.Pid}
	if a.cg, err = findCgroup(a.initPID); err != nil {
		return nil, fmt.Errorf("%s's cgroup: %w", id, err)
	}
	s, err := readStat(a.initPID)
	if err != nil {
		return nil, fmt.Errorf("%s's first process: %w", id, err)
	}
	a.shimPID = s.PPid
	if shim, err := readStat(a.shimPID); err != nil || !strings.HasPrefix(shim.Comm, "containerd-shim") {
		return nil, fmt.Errorf("%s's container process %d has parent %d (%q), not a containerd shim", id, a.initPID, a.shimPID, shim.Comm)
	}
	return a, nil
}

// memory reads the per-agent host memory and choird's RSS.
func (b *bench) memory(r *result) error {
	var container, shim int64
	for _, a := range b.agents {
		pids, err := a.cg.pids()
		if err != nil {
			return fmt.Errorf("%s's processes: %w", a.id, err)
		}
		for _, pid := range pids {
			pss, err := readPss(pid)
			if err != nil {
				continue // a process that just ended
			}
			container += pss
		}
		pss, err := readPss(a.shimPID)
		if err != nil {
			return fmt.Errorf("%s's shim %d: %w", a.id, a.shimPID, err)
		}
		shim += pss
	}
	n := float64(len(b.agents))
	r.ContainerPSS, r.ShimPSS = float64(container)/n, float64(shim)/n
	var err error
	r.MemAvailDrop = float64(b.memDrop) / n
	if r.ChoirdRSS, err = readRSS(b.ChoirdPID()); err != nil {
		return fmt.Errorf("choird's RSS: %w", err)
	}
	r.ChoirdGrowth = float64(r.ChoirdRSS-b.baseline.choirdRSS) / n
	return nil
}

// cpuSample is CPU time so far, in nanoseconds.
type cpuSample struct{ choird, agents, db uint64 }

func (b *bench) sampleCPU() (cpuSample, error) {
	var s cpuSample
	st, err := readStat(b.ChoirdPID())
	if err != nil {
		return s, fmt.Errorf("choird's CPU: %w", err)
	}
	s.choird = st.CPUNanos()
	if b.DBPID > 0 {
		st, err := readStat(b.DBPID)
		if err != nil {
			return s, fmt.Errorf("PGlite's CPU: %w", err)
		}
		s.db = st.CPUNanos()
	}
	for _, a := range b.agents {
		ns, err := a.cg.cpuNanos()
		if err != nil {
			return s, fmt.Errorf("%s's CPU: %w", a.id, err)
		}
		s.agents += ns
	}
	return s, nil
}

// idleCPU measures CPU over the idle window.
func (b *bench) idleCPU(ctx context.Context, r *result) error {
	before, err := b.sampleCPU()
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := sleep(ctx, b.idle); err != nil {
		return err
	}
	after, err := b.sampleCPU()
	if err != nil {
		return err
	}
	wall := float64(time.Since(t0))
	r.Window = b.idle
	r.ChoirdCPU = float64(after.choird-before.choird) / wall
	r.AgentsCPU = float64(after.agents-before.agents) / wall
	if b.DBPID > 0 {
		r.DBCPU = float64(after.db-before.db) / wall
	}
	heartbeats := float64(len(b.agents)) * wall / float64(b.heartbeat)
	r.HeartbeatCPU = time.Duration(float64(after.choird-before.choird) / heartbeats)
	return nil
}

// chat sends each agent msgs messages in a row, all agents at once, each
// with `choirctl chat <agent> --once`, and returns every round trip.
func (b *bench) chat(ctx context.Context, agents []*agentProc, msgs int) ([]time.Duration, error) {
	var mu sync.Mutex
	var lat []time.Duration
	var first error
	var wg sync.WaitGroup
	for _, a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 1; k <= msgs; k++ {
				var out bytes.Buffer
				t0 := time.Now()
				err := b.Ctl(ctx, strings.NewReader(fmt.Sprintf("hello %d", k)), &out, "chat", a.id, "--once", "--timeout", "2m")
				d := time.Since(t0)
				if err == nil && !strings.Contains(out.String(), demomodel.Prefix) {
					err = fmt.Errorf("chat %s: the answer %q is not the model's", a.id, abbrev(out.String()))
				}
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				lat = append(lat, d)
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return lat, first
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
