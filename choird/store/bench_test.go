package store

import (
	"context"
	"testing"
	"time"
)

// BenchmarkAppendEvents measures one heartbeat's worth of replication: a
// batch of 10 new events, in one transaction.
func BenchmarkAppendEvents(b *testing.B) {
	s := newStore(b, Config{}, "alpha")
	ctx := context.Background()
	if _, err := s.CreateSession(ctx, NewSession{SessionID: "s1", AgentID: "alpha", LeaseID: "l", StartedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	var next int64 = 1
	b.ReportAllocs()
	for b.Loop() {
		batch := events(next, next+9)
		if _, err := s.AppendEvents(ctx, "s1", batch); err != nil {
			b.Fatal(err)
		}
		next += 10
	}
}
