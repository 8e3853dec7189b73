package lock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkAcquireRelease is one uncontended tool call: a two-key lockset
// acquired and released.
func BenchmarkAcquireRelease(b *testing.B) {
	var m Manager
	ctx := context.Background()
	set := []Request{{Key: "file:src/main.go", Mode: X}, {Key: ChoirTmp, Mode: X}}
	b.ReportAllocs()
	for b.Loop() {
		h, err := m.Acquire(ctx, coreA, set)
		if err != nil {
			b.Fatal(err)
		}
		h.Release()
	}
}

// BenchmarkContended runs 16 owners acquiring and releasing at once; ns/op
// is per lockset over all of them.
func BenchmarkContended(b *testing.B) {
	mixed := func(i int) [][]Request {
		rng := rand.New(rand.NewPCG(1, uint64(i)))
		sets := make([][]Request, 64)
		for j := range sets {
			sets[j] = randomSet(Owner("core:x"), rng)
		}
		return sets
	}
	tests := []struct {
		name string
		sets func(i int) [][]Request
	}{
		{"readers", func(int) [][]Request { return [][]Request{{{"file:a", S}, {ChoirTmp, S}}} }},
		{"writers", func(int) [][]Request { return [][]Request{{{"file:a", X}, {ChoirTmp, S}}} }},
		{"disjoint", func(i int) [][]Request { return [][]Request{{{Key(fmt.Sprintf("file:f%d", i)), X}}} }},
		{"mixed", mixed},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) { benchContended(b, 16, tt.sets) })
	}
}

func benchContended(b *testing.B, goroutines int, sets func(i int) [][]Request) {
	var m Manager
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for i := range goroutines {
		owner := Owner(fmt.Sprintf("core:bench-%d", i))
		mine := sets(i)
		wg.Go(func() {
			for n := next.Add(1); n <= int64(b.N); n = next.Add(1) {
				h, err := m.Acquire(ctx, owner, mine[int(n)%len(mine)])
				if err != nil {
					b.Error(err)
					return
				}
				h.Release()
			}
		})
	}
	wg.Wait()
}
