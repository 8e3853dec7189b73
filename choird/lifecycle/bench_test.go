package lifecycle

import (
	"context"
	"slices"
	"testing"
	"time"

	"choir/choird/lease"
)

// BenchmarkStartStop measures, on the test engine, `agent start` until
// INIT_HELLO is acknowledged and `agent stop` until the container is gone,
// reporting the medians.
//
//	go test -run '^$' -bench StartStop -benchtime 10x ./choird/lifecycle/
func BenchmarkStartStop(b *testing.B) {
	h := newHarness(b)
	ctx := context.Background()
	var starts, stops []time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, err := h.m.Start(ctx, "lc-agent-1", lease.Overrides{}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := h.m.Stop(ctx, "lc-agent-1"); err != nil {
			b.Fatal(err)
		}
		starts, stops = append(starts, t1.Sub(t0)), append(stops, time.Since(t1))
	}
	b.StopTimer()
	slices.Sort(starts)
	slices.Sort(stops)
	b.ReportMetric(float64(starts[len(starts)/2].Milliseconds()), "start-to-hello-ms")
	b.ReportMetric(float64(stops[len(stops)/2].Milliseconds()), "stop-to-gone-ms")
}
