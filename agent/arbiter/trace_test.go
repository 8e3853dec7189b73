package arbiter

import (
	"choir/testkit"
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"choir/agent/lock"
	"choir/agent/tool"
	"choir/internal/logs"
)

// stepClock is a clock that moves only when the test says.
type stepClock struct {
	base time.Time
	off  atomic.Int64
}

func (c *stepClock) now() time.Time          { return c.base.Add(time.Duration(c.off.Load())) }
func (c *stepClock) advance(d time.Duration) { c.off.Add(int64(d)) }

// find returns the one record of msg in l whose call_id is id.
func find(t *testing.T, l *testkit.Buffer, msg, id string) map[string]any {
	t.Helper()
	var found map[string]any
	for _, m := range l.Records(t, msg) {
		if m[keyCall] == id {
			if found != nil {
				t.Errorf("two %q records for %s", msg, id)
			}
			found = m
		}
	}
	if found == nil {
		t.Fatalf("no %q record for %s; log:\n%s", msg, id, l.String())
	}
	return found
}

func resultOf(t *testing.T, h *harness, id string) ResultCommitted {
	t.Helper()
	e := h.waitEvent("result of "+id, isEvent(ToolResultCommitted, id))
	var p ResultCommitted
	if err := json.Unmarshal(e.Payload, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// A call that waits for another lane's lock reports how long it waited,
// and a call reports how long its tool ran: in the committed result (which
// choird stores) and in the log, with the session and the lane (§22.1).
func TestToolTraces(t *testing.T) {
	clock := &stepClock{base: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	lines := &testkit.Buffer{}
	log := slog.New(slog.NewJSONHandler(lines, nil)).With(logs.KeySession, "sess-1")
	running := make(chan string, 2)
	gates := map[string]chan struct{}{"A": make(chan struct{}), "B": make(chan struct{})}
	gated := &fakeTool{name: "test.gated", mode: "X", run: func(ctx context.Context, in fakeInput, env tool.Env) (tool.Result, error) {
		running <- in.Tag
		<-gates[in.Tag]
		return tool.Success("done "+in.Tag, nil), nil
	}}
	h := newHarness(t, Config{Now: clock.now, Log: log}, gated)
	ctx := context.Background()
	prop := func(id string, owner lock.Owner) Proposal {
		return Proposal{ID: id, Lane: owner, Tool: "test.gated", Input: json.RawMessage(`{"path":"shared.txt","tag":"` + id + `"}`)}
	}
	coreA, coreB := mustCore("a"), mustCore("b")

	doneA, doneB := make(chan Outcome, 1), make(chan Outcome, 1)
	go func() { doneA <- h.submit(ctx, prop("A", coreA)) }()
	if got := <-running; got != "A" {
		t.Fatalf("running %s; want A", got)
	}
	go func() { doneB <- h.submit(ctx, prop("B", coreB)) }()
	waitFor(t, "B waiting for A's lock", func() bool {
		snap := h.a.Locks().Snapshot()
		return len(snap.Waiting) == 1 && snap.Waiting[0].Owner == coreB
	})
	clock.advance(250 * time.Millisecond) // while A runs and B waits
	close(gates["A"])
	<-doneA
	if got := <-running; got != "B" {
		t.Fatalf("running %s; want B", got)
	}
	close(gates["B"])
	<-doneB
	refused := h.submit(ctx, Proposal{ID: "R", Lane: lock.Edge, Tool: "no.such.tool"})

	for _, tt := range []struct {
		id             string
		lane           string
		status         string
		code           string
		duration, wait int64
	}{
		{"A", "core:a", "success", "", 250, 0},
		{"B", "core:b", "success", "", 0, 250},
		{"R", "edge", "error", tool.CodeUnknownTool, 0, 0},
	} {
		p := resultOf(t, h, tt.id)
		if p.DurationMS != tt.duration || p.LockWaitMS != tt.wait {
			t.Errorf("ToolResultCommitted %s: duration_ms %d, lock_wait_ms %d; want %d, %d", tt.id, p.DurationMS, p.LockWaitMS, tt.duration, tt.wait)
		}
		for _, msg := range []string{msgProposed, msgToolResult} {
			m := find(t, lines, msg, tt.id)
			if m[logs.KeySession] != "sess-1" || m[logs.KeyLane] != tt.lane {
				t.Errorf("%q record of %s: session %v, lane %v; want sess-1, %s", msg, tt.id, m[logs.KeySession], m[logs.KeyLane], tt.lane)
			}
		}
		m := find(t, lines, msgToolResult, tt.id)
		if m[keyStatus] != tt.status || m[keyDuration] != float64(tt.duration) || m[keyLockWait] != float64(tt.wait) {
			t.Errorf("%q record of %s = %v; want status %s, duration_ms %d, lock_wait_ms %d", msgToolResult, tt.id, m, tt.status, tt.duration, tt.wait)
		}
		if code, _ := m[keyCode].(string); code != tt.code {
			t.Errorf("%q record of %s: error_code %q; want %q", msgToolResult, tt.id, code, tt.code)
		}
	}
	if refused.Status != tool.StatusError {
		t.Errorf("R = %+v; want an error", refused)
	}
	b := find(t, lines, msgLocked, "B")
	if b[keyLockWait] != float64(250) || b[keyLocks] != float64(1) {
		t.Errorf("%q record of B = %v; want lock_wait_ms 250, locks 1", msgLocked, b)
	}
	if m := find(t, lines, msgToolResult, "A"); m[keyReleased] != float64(1) {
		t.Errorf("%q record of A: locks_released %v; want 1", msgToolResult, m[keyReleased])
	}
	if n := len(lines.Records(t, msgLocked)); n != 2 {
		t.Errorf("%d %q records; want 2 (the refused call holds none)", n, msgLocked)
	}
}
