package arbiter

import (
	"context"
	"testing"
	"time"
)

// The log reads back across its chunks, and its chain verifies.
func TestLogAcrossChunks(t *testing.T) {
	l := commitLog{clock: time.Now}
	n := 2*chunkSize + 10
	for range n {
		l.append(LaneEdge, UserMsg, []byte(`{"text":"x"}`))
	}
	for _, after := range []int64{0, 1, chunkSize - 1, chunkSize, chunkSize + 1, int64(n) - 1, int64(n), int64(n) + 5, -3} {
		evs := l.since(after)
		from := max(after, 0)
		if want := max(int64(n)-from, 0); int64(len(evs)) != want {
			t.Fatalf("since(%d) = %d events; want %d", after, len(evs), want)
		}
		for i, e := range evs {
			if e.Rev != from+int64(i)+1 {
				t.Fatalf("since(%d)[%d].Rev = %d; want %d", after, i, e.Rev, from+int64(i)+1)
			}
		}
	}
	all := l.since(0)
	if err := Verify("", all); err != nil {
		t.Fatal(err)
	}
	prev, ok := l.hashAt(chunkSize)
	if !ok || Verify(prev, l.since(chunkSize)) != nil {
		t.Error("the suffix after a chunk boundary does not verify from hashAt")
	}
	if _, ok := l.hashAt(int64(n) + 1); ok {
		t.Error("hashAt past the head = ok")
	}
	if rev, h := l.head(); rev != int64(n) || h != all[n-1].Hash {
		t.Errorf("head = %d %s", rev, h)
	}
}

func TestLogWait(t *testing.T) {
	l := commitLog{clock: time.Now}
	done := make(chan error, 1)
	go func() { done <- l.wait(context.Background(), 2) }()
	l.append("", Cancelled, []byte(`{}`))
	l.append("", Cancelled, []byte(`{}`))
	if err := <-done; err != nil {
		t.Errorf("wait = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.wait(ctx, 3); err != context.Canceled {
		t.Errorf("wait with a cancelled ctx = %v", err)
	}
}

// TestEventsAfterBounded: EventsAfter returns at most max events after a
// revision, across chunk boundaries, the same ones Events returns.
func TestEventsAfterBounded(t *testing.T) {
	var l commitLog
	l.clock = func() time.Time { return time.Unix(0, 0) }
	for range chunkSize + 10 {
		l.append("edge", UserMsg, []byte(`{"text":"x"}`))
	}
	all := l.since(0)
	for _, tc := range []struct {
		after    int64
		max      int
		from, to int64 // expected revisions, to < from for none
	}{
		{0, 3, 1, 3}, {chunkSize - 2, 5, chunkSize - 1, chunkSize + 3}, {chunkSize + 8, 100, chunkSize + 9, chunkSize + 10},
		{chunkSize + 10, 5, 1, 0}, {5, 0, 1, 0}, {-3, 2, 1, 2}, {0, -1, 1, chunkSize + 10},
	} {
		got := l.sinceN(tc.after, tc.max)
		want := []int64{}
		for r := tc.from; r <= tc.to; r++ {
			want = append(want, r)
		}
		if len(got) != len(want) {
			t.Errorf("sinceN(%d, %d) = %d events; want %d", tc.after, tc.max, len(got), len(want))
			continue
		}
		for i, e := range got {
			if e.Rev != want[i] || e.Hash != all[e.Rev-1].Hash {
				t.Errorf("sinceN(%d, %d)[%d] = rev %d; want %d", tc.after, tc.max, i, e.Rev, want[i])
				break
			}
		}
	}
}
