package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestTrimOnceAfterEachBusySpell(t *testing.T) {
	tr := trimmer{last: 1 << 20, dirty: true} // as trimWhenIdle starts
	allocated := tr.last
	for i, tc := range []struct {
		alloc uint64 // allocated during the interval
		trim  bool
	}{
		{0, true},           // quiet after the start
		{4 << 10, false},    // heartbeats only: trimmed already
		{0, false},          // still quiet
		{8 << 20, false},    // a turn: never while it runs
		{1 << 20, false},    // still busy
		{8 << 10, true},     // quiet again
		{quietBytes, false}, // the threshold itself is quiet
		{quietBytes + 1, false},
		{quietBytes, true},
	} {
		allocated += tc.alloc
		if got := tr.tick(allocated); got != tc.trim {
			t.Errorf("interval %d (%d bytes allocated): trim = %v; want %v", i, tc.alloc, got, tc.trim)
		}
	}
}

func TestTrimWhenIdleTrimsAndStops(t *testing.T) {
	var allocated atomic.Uint64
	trimmed := make(chan struct{}, 4)
	ticks := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		trimWhenIdle(ctx, ticks, allocated.Load, func() { trimmed <- struct{}{} })
	}()
	ticks <- time.Time{} // nothing allocated since the start: trim
	<-trimmed
	allocated.Add(1 << 20)
	ticks <- time.Time{} // busy
	ticks <- time.Time{} // quiet: trim
	<-trimmed
	cancel()
	<-done
	if len(trimmed) != 0 {
		t.Errorf("%d trims more than the two spells", len(trimmed))
	}
}

func TestHeapAllocatedCounts(t *testing.T) {
	before := heapAllocated()
	sink = make([]byte, 1<<20)
	if after := heapAllocated(); after-before < 1<<20 {
		t.Errorf("heapAllocated rose by %d after a 1 MiB allocation", after-before)
	}
}

var sink []byte
