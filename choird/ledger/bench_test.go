package ledger

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"choir/choird/store"
	"choir/internal/config"
	"choir/internal/rpc"
)

// BenchmarkReserveSettle is the ledger's CPU per capped model call: a
// reserve and its settle, over a store answering from memory (the one
// database round trip a reserve makes is BenchmarkLedger/totals in
// choird/store).
//
//	go test -run='^$' -bench=ReserveSettle -benchmem ./choird/ledger/
func BenchmarkReserveSettle(b *testing.B) {
	l, _, _, _ := newLedger(b, tokenCaps(1<<40))
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprint(i)
		if r, err := l.Reserve(ctx, "a1", "s-a1", rpc.SpendReq{Op: rpc.SpendReserve, CallID: id, Model: "m", PromptTokens: 2000, MaxOutputTokens: 4096}); err != nil || !r.Allowed {
			b.Fatal(r, err)
		}
		if err := l.Settle(ctx, "a1", "s-a1", rpc.SpendReq{Op: rpc.SpendSettle, CallID: id, Record: &rpc.CallRecord{CallID: id, PromptTokens: 1900, CompletionTokens: 100}}); err != nil {
			b.Fatal(err)
		}
		if i%64 == 63 { // records arrive: their reservations close
			l.mu.Lock()
			clear(l.open)
			l.mu.Unlock()
		}
	}
}

// slowStore answers SpendTotals after a simulated database round trip.
type slowStore struct {
	Store
	rtt time.Duration
}

func (s slowStore) SpendTotals(ctx context.Context, agentID string, day, month time.Time, ids []string) (store.Totals, error) {
	time.Sleep(s.rtt) // the round trip's latency, for the benchmark only
	return s.Store.SpendTotals(ctx, agentID, day, month, ids)
}

// BenchmarkReserveParallel is what concurrent reserves of eight agents
// cost each when a reserve's one database round trip takes 2 ms (about
// PGlite's on this machine): ns/op is the wall time per reserve with
// 8×GOMAXPROCS reserves in flight. Reserves that held the ledger's lock
// across the round trip took the whole round trip each, one after
// another; reading unlocked, they overlap.
//
//	go test -run='^$' -bench=ReserveParallel ./choird/ledger/
func BenchmarkReserveParallel(b *testing.B) {
	cfg := tokenCaps(1 << 40)
	for i := range 8 {
		cfg.Agents[fmt.Sprintf("p%d", i)] = config.Agent{}
	}
	cfg.Spend = &config.Spend{PerDayTokens: ptr(int64(1 << 50))}
	l, fs, _, _ := newLedger(b, cfg)
	l.Store = slowStore{Store: fs, rtt: 2 * time.Millisecond}
	var next atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		n := next.Add(1)
		agent := fmt.Sprintf("p%d", n%8)
		for i := 0; pb.Next(); i++ {
			id := fmt.Sprintf("%d-%d", n, i)
			if r, err := l.Reserve(context.Background(), agent, "s-"+agent, rpc.SpendReq{Op: rpc.SpendReserve, CallID: id, Model: "m", PromptTokens: 2000, MaxOutputTokens: 4096}); err != nil || !r.Allowed {
				b.Error(r, err)
				return
			}
			l.mu.Lock()
			delete(l.open, id) // its record arrived
			l.mu.Unlock()
		}
	})
}
