package store

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkRecordLiveness measures the one statement that records idle
// sessions' heartbeats (every 15 s in choird) for 100 and 1000 active
// sessions; on PGlite, which runs one statement at a time on one core,
// its time is about the database's CPU.
//
//	go test -run '^$' -bench RecordLiveness -benchtime 20x ./choird/store/
func BenchmarkRecordLiveness(b *testing.B) {
	s := newStore(b, Config{}, "alpha")
	ctx := context.Background()
	const most = 1000
	if _, err := s.pool.Exec(ctx, s.q(`
		INSERT INTO choir_control.agents (agent_id) SELECT 'bench-' || i FROM generate_series(1, $1) AS i`), most); err != nil {
		b.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, s.q(`
		INSERT INTO choir_control.sessions (session_id, agent_id, lease_id, status, started_at)
		SELECT 's-' || i, 'bench-' || i, 'l-' || i, 'active', now() FROM generate_series(1, $1) AS i`), most); err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{100, most} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			beats := make([]Liveness, n)
			at := time.Now()
			for i := range b.N {
				for j := range beats {
					beats[j] = Liveness{SessionID: fmt.Sprintf("s-%d", j+1), At: at.Add(time.Duration(i) * time.Second), ConfigVersion: 1}
				}
				missing, err := s.RecordLiveness(ctx, beats)
				if err != nil || len(missing) != 0 {
					b.Fatalf("RecordLiveness = %d missing, %v", len(missing), err)
				}
			}
		})
	}
}
