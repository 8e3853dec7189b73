package lane

import (
	"testing"

	"choir/agent/arbiter"
	"choir/internal/config"
)

// The agent's cost of resuming a 10,000-event session (§13.2): the
// arbiter restores the log it is given and the lanes rebuild from it,
// with a snapshot (the tail is the edge's window) and without (the whole
// log). Reading the events from choird is measured by the store's
// BenchmarkEventsPage.
func BenchmarkResume10k(b *testing.B) {
	e := newEnv(b, envOptions{model: &instantModel{}, compactor: &compactor{text: "The user says hello a lot."},
		budgets: config.Budgets{TotalSessionTokens: 1 << 40}})
	for range 5000 { // a turn commits its message and the reply
		e.handle("hello")
	}
	raw, err := e.lane.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	head, _ := e.a.Head()
	all := e.a.Events(0)
	for _, c := range []struct {
		name string
		snap bool
	}{{"snapshot", true}, {"no-snapshot", false}} {
		b.Run(c.name, func(b *testing.B) {
			from, snapRev, snap := int64(0), int64(0), []byte(nil)
			if c.snap {
				from, snapRev, snap = TailFrom(raw, head), head, raw
			}
			var baseHash string
			if from > 0 {
				baseHash = all[from-1].Hash
			}
			for b.Loop() {
				a := arbiter.New(arbiter.Config{Tools: e.lane.cfg.Tools, Workspace: e.ws})
				if _, err := a.Restore(from, baseHash, all[from:]); err != nil {
					b.Fatal(err)
				}
				cfg := e.lane.cfg
				cfg.Arbiter = a
				l, err := New(cfg)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := l.Resume(Resume{Snapshot: snap, SnapshotRev: snapRev, Events: a.Events(0)}); err != nil {
					b.Fatal(err)
				}
				l.edge.sync() // the window rebuilt from the log, as its first turn does
			}
			b.ReportMetric(float64(len(all)-int(from)), "tail-events")
		})
	}
}
