package ledger

import (
	"context"
	"fmt"
	"testing"

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
