package lane

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"choir/internal/config"
	"choir/internal/openai"
	"choir/testkit/openaitest"
)

// instantModel answers at once, in process: a tool call (fs.read of a.txt)
// when the last message is the user's and tools are wanted, text otherwise.
type instantModel struct{ useTool bool }

var _ ModelClient = (*instantModel)(nil)

func (m *instantModel) Chat(_ context.Context, req openai.ChatRequest) (*openai.ChatResponse, error) {
	last := req.Messages[len(req.Messages)-1]
	if m.useTool && last.Role == openai.RoleUser {
		return &openai.ChatResponse{ToolCalls: []openai.ToolCall{{ID: "call_1", Name: "choir_fs_read", Arguments: `{"path":"a.txt"}`}}}, nil
	}
	return &openai.ChatResponse{Content: "done"}, nil
}

func (m *instantModel) ChatWithRateLimitRetry(ctx context.Context, req openai.ChatRequest, _ openai.RateLimitRetry) (*openai.ChatResponse, error) {
	return m.Chat(ctx, req)
}

// The lane's own cost of a turn: commit the message, build the prompt over
// a full event window, one model call answered at once, commit the reply.
func BenchmarkTurnText(b *testing.B) {
	benchTurn(b, &instantModel{})
}

// A turn with one tool call: two model calls, the arbiter's pipeline and a
// real choir.fs.read of a small file.
func BenchmarkTurnOneTool(b *testing.B) {
	benchTurn(b, &instantModel{useTool: true})
}

func benchTurn(b *testing.B, m ModelClient) {
	e := newEnv(b, envOptions{model: m, ident: Identity{UserMD: "Name: Ada.", SoulMD: "Be brief."}, budgets: unlimited, compactor: &compactor{}})
	e.write("a.txt", "hello\n")
	ctx := context.Background()
	for range DefaultEventWindow { // fill the window
		e.lane.Handle(ctx, "warm up")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if reply, err := e.lane.Handle(ctx, "go"); err != nil || reply != "done" {
			b.Fatalf("Handle = %q, %v", reply, err)
		}
	}
}

// The same turn against the fake server through the real HTTP client, for
// comparison: the difference is HTTP and JSON on both sides.
func BenchmarkTurnOneToolHTTP(b *testing.B) {
	e := newEnv(b, envOptions{budgets: unlimited, compactor: &compactor{}})
	e.write("a.txt", "hello\n")
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		e.model.Expect(
			openaitest.Chat().ReplyToolCalls(openaitest.ToolCall{ID: "call_1", Name: "choir_fs_read", Arguments: `{"path":"a.txt"}`}),
			openaitest.Chat().ReplyText("done"))
		if reply, err := e.lane.Handle(ctx, "go"); err != nil || reply != "done" {
			b.Fatalf("Handle = %q, %v", reply, err)
		}
	}
}

// stamp is an instant in-process model that notes when each call arrives
// and answers at once: text for the edge; for a core, finish (or, with
// idle set, nothing until the call ends).
type stamp struct {
	idle    bool
	arrived chan time.Time
}

func (m *stamp) Chat(ctx context.Context, req openai.ChatRequest) (*openai.ChatResponse, error) {
	at := time.Now()
	if laneOf(req) == "edge" {
		m.arrived <- at
		return &openai.ChatResponse{Content: "done"}, nil
	}
	m.arrived <- at
	if m.idle {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &openai.ChatResponse{ToolCalls: []openai.ToolCall{{ID: "f", Name: "choir_core_finish", Arguments: `{"summary":"ok"}`}}}, nil
}

func (m *stamp) ChatWithRateLimitRetry(ctx context.Context, req openai.ChatRequest, _ openai.RateLimitRetry) (*openai.ChatResponse, error) {
	return m.Chat(ctx, req)
}

// next waits for the next call to arrive.
func (m *stamp) next(b *testing.B) time.Time {
	select {
	case at := <-m.arrived:
		return at
	case <-time.After(deadline):
		b.Fatal("no model call")
		return time.Time{}
	}
}

// unlimited budgets keep a benchmark's session going however long it runs.
var unlimited = config.Budgets{MaxCoreJobs: 1 << 30, TotalSessionTokens: 1 << 62, MaxToolCallsPerSession: 1 << 30,
	PerJobMaxSteps: 50, PerJobMaxToolCalls: 100, PerJobWallTimeMS: 3600000, PerJobMaxInjections: 10}

// reportQuantiles reports the median and 99th percentile of d.
func reportQuantiles(b *testing.B, d []time.Duration, unit string) {
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Nanoseconds()), "ns-p50-"+unit)
	b.ReportMetric(float64(d[len(d)*99/100].Nanoseconds()), "ns-p99-"+unit)
}

// The lane's overhead from a user message arriving (Post) to the first
// model request leaving, with a full event window, working memory
// compacting as it goes, and a model that answers at once.
func BenchmarkMessageToFirstRequest(b *testing.B) {
	m := &stamp{arrived: make(chan time.Time, 4)}
	e := newEnv(b, envOptions{model: m, laneTools: true, compactor: &compactor{}, ident: Identity{UserMD: "Name: Ada.", SoulMD: "Be brief."}, budgets: unlimited})
	for i := range DefaultEventWindow {
		e.lane.Post(rpcMsg(fmt.Sprint("warm", i), "warm up"))
		m.next(b)
		e.nextReply()
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		e.lane.Post(rpcMsg(fmt.Sprint("m", i), "go"))
		lat = append(lat, m.next(b).Sub(t0))
		e.nextReply()
	}
	b.StopTimer()
	reportQuantiles(b, lat, "to-first-request")
}

// Time to spawn a core job: from a validated CoreJobStart to the job's
// first model request (CREATED, INITIALIZING, CoreStarted committed, its
// prompt built). Each job then finishes at once.
func BenchmarkSpawnCore(b *testing.B) {
	m := &stamp{arrived: make(chan time.Time, 4)}
	e := newEnv(b, envOptions{model: m, laneTools: true, budgets: unlimited})
	e.waitFor("Run", func() bool { e.lane.mu.Lock(); defer e.lane.mu.Unlock(); return e.lane.coreCtx != nil })
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		if _, err := e.lane.spawn(json.RawMessage(spawnArgs(fmt.Sprint("job", i), "do it"))); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, m.next(b).Sub(t0))
		e.nextReport()
	}
	b.StopTimer()
	reportQuantiles(b, lat, "spawn-to-first-request")
}

// Memory held by an idle core job: b.N jobs each waiting on its model,
// measured as live heap and goroutines per job. Run it with a fixed count:
// go test -run=^$ -bench=IdleCore -benchtime=200x ./agent/lane
func BenchmarkIdleCoreMemory(b *testing.B) {
	m := &stamp{idle: true, arrived: make(chan time.Time, 1024)}
	e := newEnv(b, envOptions{model: m, laneTools: true, budgets: unlimited})
	e.waitFor("Run", func() bool { e.lane.mu.Lock(); defer e.lane.mu.Unlock(); return e.lane.coreCtx != nil })
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	b.ResetTimer()
	for i := range b.N {
		if _, err := e.lane.spawn(json.RawMessage(spawnArgs(fmt.Sprint("job", i), "wait"))); err != nil {
			b.Fatal(err)
		}
		m.next(b)
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "heap-B/idle-core")
	b.ReportMetric(float64(after.StackInuse-before.StackInuse)/float64(b.N), "stack-B/idle-core")
	b.ReportMetric(float64(runtime.NumGoroutine()-g0)/float64(b.N), "goroutines/idle-core")
}
