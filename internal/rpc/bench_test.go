package rpc

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkHeartbeat measures a HEARTBEAT round trip carrying a 1 KiB patch
// on each transport, reporting p50 and p99 latency and calls per second.
//
//	go test -run='^$' -bench=Heartbeat -benchtime=20000x ./internal/rpc/
func BenchmarkHeartbeat(b *testing.B) {
	limits := DefaultLimits()
	limits.Rate, limits.Burst = math.MaxFloat64, math.MaxInt32
	srv := NewServer(&fakeHandler{}, limits, quietLogger())
	srv.Open("s1", testAgent, "t1")
	trs := serve(b, srv)
	payload := json.RawMessage(`"` + strings.Repeat("x", 1024-2) + `"`)
	req := HeartbeatReq{BaseRev: 1, NewRev: 2, Patches: []Event{{Rev: 2, Type: "UserMsg", Payload: payload, Hash: "h"}}}
	for _, tr := range trs {
		b.Run(tr.name, func(b *testing.B) {
			c := tr.dial(b, "s1", "t1")
			ctx := context.Background()
			if _, err := c.Heartbeat(ctx, req); err != nil { // warm the connection
				b.Fatal(err)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				t0 := time.Now()
				if _, err := c.Heartbeat(ctx, req); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			elapsed := time.Since(start)
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
		})
	}
}
