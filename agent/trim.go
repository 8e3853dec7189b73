package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Idle trim: once the agent goes quiet after work, its heap's free pages go
// back to the host. A burst (the session's start, a turn, a tool's output)
// leaves free pages the Go runtime keeps for reuse and hands back only
// slowly: ~0.45 MiB an agent after a chat, multiplied on a host of a
// thousand mostly idle agents (DESIGN, performance).
const (
	trimEvery = 10 * time.Second // how often the allocation count is read
	// quietBytes is what an interval may allocate and still be quiet: an
	// idle agent's heartbeats allocate a few KiB per interval.
	quietBytes = 256 << 10
)

// trimmer decides when to trim: after an interval that allocated more than
// quietBytes (work), the first one that did not (quiet) trims, once.
type trimmer struct {
	last  uint64
	dirty bool // work since the last trim
}

// tick takes the cumulative bytes allocated so far and says whether to trim
// now.
func (t *trimmer) tick(allocated uint64) bool {
	busy := allocated-t.last > quietBytes
	t.last = allocated
	if busy {
		t.dirty = true
		return false
	}
	trim := t.dirty
	t.dirty = false
	return trim
}

// trimWhenIdle runs until ctx ends, trimming after each busy spell; ticks
// drives it (a time.Ticker's channel in the agent).
func trimWhenIdle(ctx context.Context, ticks <-chan time.Time, allocated func() uint64, trim func()) {
	t := trimmer{last: allocated(), dirty: true} // the start is work
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
			if t.tick(allocated()) {
				trim()
			}
		}
	}
}

// heapAllocated is the bytes the Go heap has allocated since the start.
func heapAllocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// startIdleTrim trims choir-agent's heap when it goes quiet, until ctx ends.
func startIdleTrim(ctx context.Context) {
	tk := time.NewTicker(trimEvery)
	go func() {
		defer tk.Stop()
		trimWhenIdle(ctx, tk.C, heapAllocated, debug.FreeOSMemory)
	}()
}
