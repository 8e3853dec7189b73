package store

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkLedger measures what the usage ledger costs per model call in
// the store: "record" is the extra time a heartbeat's transaction takes to
// write a batch's call records (a batch of 8 events, 4 of them ModelCall,
// against the same batch of plain events: the difference over 4 is one
// record's cost, off the reply path); "totals" is the one round trip a
// capped call's reserve makes, over a ledger of 10,000 rows.
//
//	go test -run='^$' -bench=Ledger -benchtime=200x ./choird/store/
func BenchmarkLedger(b *testing.B) {
	payload := func(rev int64) string {
		return fmt.Sprintf(`{"call_id":"c%d","model":"m","purpose":"turn","prompt_tokens":1200,"completion_tokens":80,"cached_tokens":900,"cost":0.0042,"cost_source":"price","currency":"USD","latency_ms":800,"outcome":"ok"}`, rev)
	}
	for _, calls := range []bool{false, true} {
		b.Run(fmt.Sprintf("record/calls=%v", calls), func(b *testing.B) {
			s := newStore(b, Config{}, "alpha")
			ctx := context.Background()
			if _, err := s.CreateSession(ctx, NewSession{SessionID: "s1", AgentID: "alpha", LeaseID: "l", StartedAt: time.Now()}); err != nil {
				b.Fatal(err)
			}
			var log []Event
			if calls {
				log = callLog(b, int64(8*b.N), payload)
			} else {
				log = benchLog(8 * b.N)
			}
			b.ResetTimer()
			for i := range b.N {
				if _, err := s.Replicate(ctx, "s1", Batch{Events: log[8*i : 8*i+8]}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("totals", func(b *testing.B) {
		s := newStore(b, Config{}, "alpha")
		ctx := context.Background()
		now := time.Now()
		for i := range 10_000 {
			if _, err := s.InsertCall(ctx, CallRow{SessionID: "s1", CallID: fmt.Sprint(i), AgentID: "alpha", At: now.Add(-time.Duration(i) * time.Minute),
				PromptTokens: 1000, CompletionTokens: 50, Cost: 0.01, CostSource: "price", Outcome: "ok"}); err != nil {
				b.Fatal(err)
			}
		}
		day := now.Truncate(24 * time.Hour)
		month := day.AddDate(0, 0, -day.Day()+1)
		open := []string{"1", "2", "x", "y"}
		b.ResetTimer()
		for range b.N {
			if _, err := s.SpendTotals(ctx, "alpha", day, month, open); err != nil {
				b.Fatal(err)
			}
		}
	})
}
