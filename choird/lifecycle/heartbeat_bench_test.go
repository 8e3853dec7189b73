package lifecycle

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"choir/choird/lease"
	"choir/choird/store"
	"choir/internal/config"
	"choir/internal/rpc"
	"choir/testkit/pgtest"
)

// pgStore is the lifecycle's Store with replication and liveness in
// Postgres (choird/store), as choird's adapter (choird/stores.go) has
// them; the rest stays in memory.
type pgStore struct {
	*memStore
	st *store.Store
}

func (p pgStore) Replicate(ctx context.Context, id string, b Replication) (Replicated, error) {
	evs := make([]store.Event, len(b.Events))
	for i, e := range b.Events {
		evs[i] = store.Event{Rev: e.Rev, Type: e.Type, Lane: e.Lane, Hash: e.Hash, Payload: e.Payload, Time: e.Time}
	}
	batch := store.Batch{Events: evs, Snapshot: b.Snapshot, SnapshotRev: b.SnapshotRev, Summary: b.Summary}
	if b.Beat != nil {
		batch.Beat = (*store.Liveness)(b.Beat)
	}
	got, err := p.st.Replicate(ctx, id, batch)
	var refused *store.RefusedError
	if errors.As(err, &refused) {
		return Replicated{}, &ReplicationRefused{Head: rpc.ChainHead(refused.Head), Reason: refused.Error()}
	}
	if err != nil {
		return Replicated{}, err
	}
	return Replicated{Head: rpc.ChainHead(got.Head), SnapshotRev: got.SnapshotRev}, nil
}

func (p pgStore) RecordLiveness(ctx context.Context, beats []Liveness) ([]string, error) {
	out := make([]store.Liveness, len(beats))
	for i, b := range beats {
		out[i] = store.Liveness(b)
	}
	return p.st.RecordLiveness(ctx, out)
}

// heartbeatRig is choird's side of running agents over the real agent
// protocol server (each agent its own Unix socket) and Postgres.
type heartbeatRig struct {
	m      *Manager
	st     *store.Store
	agents []rigAgent
}

// rigAgent is one agent of the rig: its socket, session and lease token.
type rigAgent struct{ sock, session, token string }

func newHeartbeatRig(t testing.TB, rpcOnly bool, agents int) *heartbeatRig {
	t.Helper()
	db := pgtest.DB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	st, err := store.Open(ctx, store.Config{DSN: db.DSN, Namespace: db.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Drop(context.Background()); st.Close() })
	ids := make([]string, agents)
	for i := range ids {
		ids[i] = "hb-" + strconv.Itoa(i+1)
	}
	if err := st.Bootstrap(ctx, ids, 3); err != nil {
		t.Fatal(err)
	}
	c := config.Default()
	loaded := &config.Loaded{Config: &c}
	m := &Manager{Docker: &stubDocker{}, Store: pgStore{newMemStore(), st}, Sessions: &stubSessions{}, Leases: lease.NewTable(), Logs: stubLogs{},
		Config: func() (*config.Loaded, int64) { return loaded, 1 }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	limits := rpc.DefaultLimits()
	limits.Rate, limits.Burst = 1e6, 1e6 // a benchmark sends back to back
	var h rpc.ControlPlaneHandler = m.Handler()
	if rpcOnly {
		h = constHeartbeat{h}
	}
	srv := rpc.NewServer(h, limits, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	dir, err := os.MkdirTemp("", "hb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	rig := &heartbeatRig{m: m, st: st}
	for _, id := range ids {
		session := "s-" + id
		if _, err := st.CreateSession(ctx, store.NewSession{SessionID: session, AgentID: id, LeaseID: session, StartedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		m.register(&Run{AgentID: id, SessionID: session, state: StateRunning,
			ready: make(chan struct{}), exited: make(chan struct{}), lanes: map[string]rpc.StatusReq{}})
		sock := filepath.Join(dir, id, "choir.sock")
		ln, err := srv.ListenAgent(sock, id)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		token := rpc.NewToken()
		srv.Open(session, id, token)
		rig.agents = append(rig.agents, rigAgent{sock: sock, session: session, token: token})
	}
	return rig
}

// envHeartbeatAgent asks the test binary to act as the agents of
// BenchmarkIdleHeartbeat: "count;every;socket,session,token;...".
const envHeartbeatAgent = "CHOIR_TEST_HEARTBEAT_AGENT"

// TestIdleHeartbeatAgent is the agents' process of BenchmarkIdleHeartbeat
// (it runs only when the benchmark starts it): it sends count idle
// heartbeats from the agents (each its own client, on its own socket),
// each agent's one after the other, every every (0: back to back).
func TestIdleHeartbeatAgent(t *testing.T) {
	spec := os.Getenv(envHeartbeatAgent)
	if spec == "" {
		t.Skip("run by BenchmarkIdleHeartbeat")
	}
	f := strings.Split(spec, ";")
	n, _ := strconv.Atoi(f[0])
	every, _ := time.ParseDuration(f[1])
	agents := f[2:]
	errs := make(chan error, len(agents))
	for i, a := range agents {
		a := strings.Split(a, ",")
		go func() {
			c, err := rpc.Dial(rpc.Options{Transport: rpc.TransportUDS, Socket: a[0], SessionID: a[1], LeaseToken: a[2]})
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			if every > 0 { // spread the agents over the interval
				time.Sleep(every * time.Duration(i) / time.Duration(len(agents)))
			}
			ctx := context.Background()
			for j := i; j < n; j += len(agents) {
				if _, err := c.Heartbeat(ctx, rpc.HeartbeatReq{ConfigVersion: 1, Timestamp: time.Now().UTC()}); err != nil {
					errs <- err
					return
				}
				time.Sleep(every)
			}
			errs <- nil
		}()
	}
	for range agents {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkIdleHeartbeat measures choird's CPU for an idle heartbeat (no
// events, no snapshot) through the real agent protocol server, the
// lifecycle and the store on Postgres. The agents are another process
// (this test binary, TestIdleHeartbeatAgent), each on its own agent
// socket, so choird-cpu-µs/op is this process's CPU alone; db-cpu-µs/op is
// the private PGlite's (a node child of this process), when it is one.
//
//	go test -run '^$' -bench IdleHeartbeat -benchtime 3000x ./choird/lifecycle/
func BenchmarkIdleHeartbeat(b *testing.B) {
	b.Run("choird", func(b *testing.B) { benchIdle(b, newHeartbeatRig(b, false, 1), 0) })
	// The agent protocol alone: the same server and socket answering
	// HEARTBEAT without the lifecycle or the store.
	b.Run("rpc-only", func(b *testing.B) { benchIdle(b, newHeartbeatRig(b, true, 1), 0) })
	// 50 agents, each heartbeating every 100 ms (idle in between, as
	// agents are between their heartbeats every 5 s): each heartbeat wakes
	// choird from its poller.
	b.Run("choird-50-paced", func(b *testing.B) { benchIdle(b, newHeartbeatRig(b, false, 50), 100*time.Millisecond) })
}

func benchIdle(b *testing.B, rig *heartbeatRig, every time.Duration) {
	spec := []string{"", every.String()}
	for _, a := range rig.agents {
		spec = append(spec, a.sock+","+a.session+","+a.token)
	}
	agent := func(n int) {
		spec[0] = strconv.Itoa(n)
		cmd := exec.Command(os.Args[0], "-test.run=^TestIdleHeartbeatAgent$", "-test.count=1")
		cmd.Env = append(os.Environ(), envHeartbeatAgent+"="+strings.Join(spec, ";"))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			b.Fatalf("agent process: %v\n%s", err, out.String())
		}
	}
	agent(len(rig.agents)) // warm up: the statement cache, each session's first heartbeat
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	db0 := nodeChildrenCPU()
	cpu0 := selfCPU()
	b.ResetTimer()
	agent(b.N)
	b.StopTimer()
	cpu := selfCPU() - cpu0
	db := nodeChildrenCPU() - db0
	runtime.ReadMemStats(&ms1)
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "choird-cpu-µs/op")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(b.N), "choird-allocs/op")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(b.N), "choird-B/op")
	if db0 > 0 {
		b.ReportMetric(float64(db.Microseconds())/float64(b.N), "db-cpu-µs/op")
	}
}

// constHeartbeat answers every HEARTBEAT at once (the rpc-only floor).
type constHeartbeat struct{ rpc.ControlPlaneHandler }

func (constHeartbeat) HandleHeartbeat(context.Context, rpc.HeartbeatReq) (rpc.HeartbeatResp, error) {
	return rpc.HeartbeatResp{ConfigVersionLatest: 1}, nil
}

// selfCPU is this process's user and system CPU.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// nodeChildrenCPU is the CPU of this process's node children (the private
// PGlite server), from /proc; 0 when there is none.
func nodeChildrenCPU() time.Duration {
	ents, _ := os.ReadDir("/proc")
	var ticks int64
	me := strconv.Itoa(os.Getpid())
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(raw)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || !strings.Contains(s[:i], "(node") {
			continue
		}
		f := strings.Fields(s[i+2:]) // state ppid ... utime(12) stime(13)
		if len(f) < 13 || f[1] != me {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		k, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + k
	}
	return time.Duration(ticks) * (time.Second / 100) // USER_HZ
}
