package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"choir/internal/chain"
	"choir/internal/rpc"
)

// benchLog is n events as an agent commits them in a working session: a
// mix of user messages, model outputs, tool calls and results of a few
// hundred bytes, chained.
func benchLog(n int) []Event {
	out := make([]Event, n)
	prev := ""
	var h chain.Hasher
	t0 := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	for i := range out {
		rev := int64(i + 1)
		var typ, payload string
		switch i % 4 {
		case 0:
			typ, payload = "ToolCallRequested", fmt.Sprintf(`{"id":"inv-%d","input":{"path":"src/pkg/file_%d.go"},"tool":"choir.fs.read","tool_call_id":"call_%d"}`, i, i, i)
		case 1:
			typ, payload = "ToolCallCommitted", fmt.Sprintf(`{"id":"inv-%d","locks":[{"mode":"S","resource":"file:src/pkg/file_%d.go"}],"tool":"choir.fs.read"}`, i, i)
		case 2:
			typ, payload = "ToolResultCommitted", fmt.Sprintf(`{"id":"inv-%d","output":{"content":"%s","truncated":false},"status":"success","tool":"choir.fs.read","tool_call_id":"call_%d"}`, i, strings.Repeat("package pkg // line ", 12), i)
		default:
			typ, payload = "ModelOutput", fmt.Sprintf(`{"model":"gpt-4o","text":"Reading the next file (%d) to find where the handler is registered."}`, i)
		}
		e := Event{Rev: rev, Type: typ, Lane: "edge", Time: t0.Add(time.Duration(i) * time.Millisecond), Payload: json.RawMessage(payload)}
		e.Hash, _ = h.Hash(prev, chain.Event{Rev: e.Rev, Type: e.Type, Lane: e.Lane, Payload: e.Payload, Time: e.Time})
		out[i], prev = e, e.Hash
	}
	return out
}

// BenchmarkReplicate measures replication for one agent: heartbeats of
// batch new events each (chain verified from the stored head, stored in
// one transaction), back to back, as a backlog drains. It reports the
// events stored per second and the bytes a heartbeat carries per event
// (its JSON body over the events).
//
//	go test -run='^$' -bench=Replicate -benchtime=40x ./choird/store/
func BenchmarkReplicate(b *testing.B) {
	for _, batch := range []int{rpc.HeartbeatMaxEvents, 256, 32} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s := newStore(b, Config{}, "alpha")
			ctx := context.Background()
			if _, err := s.CreateSession(ctx, NewSession{SessionID: "s1", AgentID: "alpha", LeaseID: "l", StartedAt: time.Now()}); err != nil {
				b.Fatal(err)
			}
			log := benchLog(b.N * batch)
			bytes := 0
			b.ResetTimer()
			for i := range b.N {
				evs := log[i*batch : (i+1)*batch]
				if _, err := s.Replicate(ctx, "s1", Batch{Events: evs}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				req := rpc.HeartbeatReq{BaseRev: evs[0].Rev - 1, NewRev: evs[len(evs)-1].Rev, Timestamp: time.Now(),
					HashPrev: strings.Repeat("0", 64), HashNew: evs[len(evs)-1].Hash}
				for _, e := range evs {
					req.Patches = append(req.Patches, rpc.Event{Rev: e.Rev, Type: e.Type, Lane: e.Lane, Payload: e.Payload, Hash: e.Hash, Time: e.Time})
				}
				body, _ := json.Marshal(req)
				bytes += len(body)
				b.StartTimer()
			}
			b.StopTimer()
			events := float64(b.N * batch)
			b.ReportMetric(events/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(bytes)/events, "heartbeat-bytes/event")
			payload := 0
			for _, e := range log {
				payload += len(e.Payload)
			}
			b.ReportMetric(float64(payload)/events, "payload-bytes/event")
		})
	}
}

// BenchmarkEventsPage is choird's side of resuming a 10,000-event session
// (§13.2): the head and newest snapshot, then the tail a page of 512 at a
// time as FETCH_EVENTS reads it: the whole log without a snapshot, the
// last 50 events (an edge window) with one.
func BenchmarkEventsPage(b *testing.B) {
	s := newStore(b, Config{}, "alpha")
	ctx := context.Background()
	if _, err := s.CreateSession(ctx, NewSession{SessionID: "s1", AgentID: "alpha", LeaseID: "l", StartedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	log := benchLog(10000)
	for i := 0; i < len(log); i += 512 {
		if _, err := s.Replicate(ctx, "s1", Batch{Events: log[i:min(i+512, len(log))]}); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.SaveSnapshot(ctx, "s1", 10000, json.RawMessage(`{"lane_state":{}}`)); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		from int64
	}{{"snapshot", 9950}, {"no-snapshot", 0}} {
		b.Run(c.name, func(b *testing.B) {
			n := 0
			for b.Loop() {
				if _, err := s.LogHead(ctx, "s1"); err != nil {
					b.Fatal(err)
				}
				if _, err := s.LatestSnapshot(ctx, "s1"); err != nil {
					b.Fatal(err)
				}
				n = 0
				for after := c.from; after < 10000; {
					_, page, err := s.EventsPage(ctx, "s1", after, 512)
					if err != nil {
						b.Fatal(err)
					}
					n += len(page)
					after = page[len(page)-1].Rev
				}
			}
			b.ReportMetric(float64(n), "events")
		})
	}
}
