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
