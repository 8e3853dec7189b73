package arbiter

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"choir/agent/lock"
	"choir/agent/tool"
)

// benchArbiter runs an arbiter whose only tool is test.noop: no work, one
// file lock (file:<path> X).
func benchArbiter(b *testing.B) *Arbiter {
	noop := &fakeTool{name: "test.noop", mode: "X", noDecode: true}
	reg, err := tool.Load([]tool.Tool{noop}, "", "")
	if err != nil {
		b.Fatal(err)
	}
	// The same call again and again: the loop breaker counts (its cost is
	// measured) but never trips.
	unbounded := func() LoopLimits { return LoopLimits{Repeats: math.MaxInt, StaleSteps: math.MaxInt} }
	a := New(Config{Tools: reg, Workspace: b.TempDir(), Loops: unbounded})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	b.Cleanup(func() { cancel(); <-done })
	return a
}

// reportFigures adds throughput and latency figures: commits/s counts tool calls
// committed (requested, committed, result: three events each), events/s the
// log appends, p50/p99 the latency of one Submit.
func reportFigures(b *testing.B, elapsed time.Duration, lat []time.Duration) {
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Nanoseconds()) / 1e3 }
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "commits/s")
	b.ReportMetric(3*float64(b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}

// One lane submitting one call after another: the latency of a commit.
func BenchmarkCommitOneLane(b *testing.B) {
	a := benchArbiter(b)
	ctx := context.Background()
	in := json.RawMessage(`{"path":"bench/a.txt"}`)
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		t0 := time.Now()
		out, err := a.Submit(ctx, Proposal{ID: fmt.Sprint(i), Lane: lock.Edge, Tool: "test.noop", Input: in})
		lat = append(lat, time.Since(t0))
		if err != nil || out.Status != tool.StatusSuccess {
			b.Fatalf("Submit = %+v, %v", out, err)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	reportFigures(b, elapsed, lat)
}

// Eight lanes (cores) submitting at once, each on its own file: the
// arbiter's throughput when the lock manager lets everything through.
func BenchmarkCommitEightLanes(b *testing.B) {
	a := benchArbiter(b)
	ctx := context.Background()
	const lanes = 8
	var next atomic.Int64
	var mu sync.Mutex
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for l := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner, _ := lock.Core(fmt.Sprintf("bench-%d", l))
			in := json.RawMessage(fmt.Sprintf(`{"path":"bench/%d.txt"}`, l))
			mine := make([]time.Duration, 0, b.N/lanes+1)
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					break
				}
				t0 := time.Now()
				out, err := a.Submit(ctx, Proposal{ID: fmt.Sprint(i), Lane: owner, Tool: "test.noop", Input: in})
				mine = append(mine, time.Since(t0))
				if err != nil || out.Status != tool.StatusSuccess {
					b.Errorf("Submit = %+v, %v", out, err)
					return
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	reportFigures(b, elapsed, lat)
}
