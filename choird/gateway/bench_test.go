package gateway_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"choir/choird/gateway"
	"choir/internal/config"
	"choir/internal/rpc"
	"choir/internal/telegram"
)

// reportQuantiles reports the p50 and p99 of ds as custom metrics.
func reportQuantiles(b *testing.B, ds []time.Duration, prefix string) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	q := func(p float64) float64 { return float64(ds[int(p*float64(len(ds)-1))].Microseconds()) }
	b.ReportMetric(q(0.50), prefix+"-p50-µs")
	b.ReportMetric(q(0.99), prefix+"-p99-µs")
}

// BenchmarkUpdateToSendUserMessage is a user's text from the fake Bot API
// injecting it (which answers the open long poll) to Control.SendUserMessage
// being called: HTTP answer, decoding, allowlist, chat worker, routing.
func BenchmarkUpdateToSendUserMessage(b *testing.B) {
	h := newHarness(b, nil)
	h.fc.bind("alice", "alpha")
	got := make(chan struct{}, 1)
	h.fc.mu.Lock()
	h.fc.onSend = func() { got <- struct{}{} }
	h.fc.mu.Unlock()
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		h.srv.WaitPolling(b, h.bot)
		t0 := time.Now()
		h.srv.InjectText(h.bot, aliceUser, "ping")
		<-got
		ds = append(ds, time.Since(t0))
	}
	b.StopTimer()
	reportQuantiles(b, ds, "update")
}

// BenchmarkDeliverSendMessage is Deliver of a short reply until Telegram
// (the fake) has answered its sendMessage: DM lookup, chat lock, limiter,
// HTTP request and answer. Pacing is set out of the way (1 µs per chat).
func BenchmarkDeliverSendMessage(b *testing.B) {
	h := newHarness(b, func(c *gateway.Config) {
		c.Limiter = telegram.LimiterConfig{PerChatInterval: time.Microsecond, PerBotLimit: 1 << 30}
	})
	h.fc.bind("alice", "alpha")
	ds := make([]time.Duration, 0, b.N)
	msg := rpc.DMSend{Kind: rpc.DMReply, Text: "pong"}
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if err := h.gw.Deliver(b.Context(), "alpha", "alice", msg); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
	}
	b.StopTimer()
	reportQuantiles(b, ds, "deliver")
}

// BenchmarkThroughputAtRateLimit sends 2 messages to each of 60 DMs of one
// bot at Telegram's real limits (1 a second per chat, 30 a second per bot)
// and reports the rate the bot achieves once its first window's burst is
// spent. It takes about four seconds per iteration: run with -benchtime=1x.
func BenchmarkThroughputAtRateLimit(b *testing.B) {
	const chats, perChat = 60, 2
	h := newHarness(b, func(c *gateway.Config) {
		c.Limiter = telegram.LimiterConfig{} // Telegram's limits
		for i := range chats {
			c.DMs[fmt.Sprintf("dm%02d", i)] = config.DM{Gateway: "work", UserID: fmt.Sprint(20000 + i)}
		}
	})
	for i := range chats {
		h.fc.bind(fmt.Sprintf("dm%02d", i), fmt.Sprintf("agent%02d", i))
	}
	b.ResetTimer()
	for range b.N {
		var mu sync.Mutex
		var done []time.Time
		start := time.Now()
		var wg sync.WaitGroup
		for i := range chats {
			wg.Go(func() {
				for j := range perChat {
					err := h.gw.Deliver(b.Context(), fmt.Sprintf("agent%02d", i), fmt.Sprintf("dm%02d", i), rpc.DMSend{Kind: rpc.DMReply, Text: fmt.Sprint("m", j)})
					if err != nil {
						b.Error(err)
						return
					}
					mu.Lock()
					done = append(done, time.Now())
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		slices.SortFunc(done, func(x, y time.Time) int { return x.Compare(y) })
		first := telegram.DefaultPerBotLimit // the first window's burst
		steady := float64(len(done)-first) / done[len(done)-1].Sub(done[first-1]).Seconds()
		b.ReportMetric(float64(len(done))/elapsed.Seconds(), "msgs/s-overall")
		b.ReportMetric(steady, "msgs/s-steady")
	}
}
