package embed_test

import (
	"fmt"
	"testing"
	"time"

	"choir/internal/embed"
	"choir/testkit/embedtest"
)

// BenchmarkEmbedThroughput embeds texts through the client against the fake
// server (1536 dimensions, JSON floats), 32 per call as the queue sends them
// versus one per call, with no added latency (loopback: the cost of HTTP and
// JSON) and with 20 ms per answer (a distant provider). texts/s is the figure.
func BenchmarkEmbedThroughput(b *testing.B) {
	texts := make([]string, 1024)
	for i := range texts {
		texts[i] = fmt.Sprintf("chunk %d: the user asked about the deploy of service %d; the tool answered with %d lines of log output and the build passed", i, i%17, i*3)
	}
	for _, latency := range []time.Duration{0, 20 * time.Millisecond} {
		for _, batch := range []int{embed.MaxBatch, 1} {
			b.Run(fmt.Sprintf("latency=%v/batch=%d", latency, batch), func(b *testing.B) {
				s := embedtest.New(b)
				s.SetLatency(latency)
				c := newClient(b, s, embed.DefaultDimensions)
				b.ResetTimer()
				for i := 0; i < b.N; i += batch {
					n := min(batch, b.N-i)
					start := i % (len(texts) - batch)
					if _, err := c.Embed(b.Context(), texts[start:start+n]); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "texts/s")
			})
		}
	}
}

// BenchmarkHashing is the offline embedder's own cost per text, 1536
// dimensions.
func BenchmarkHashing(b *testing.B) {
	h := embed.Hashing{Dims: embed.DefaultDimensions}
	text := []string{"chunk 7: the user asked about the deploy of service 7; the tool answered with 21 lines of log output and the build passed"}
	for b.Loop() {
		if _, err := h.Embed(b.Context(), text); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "texts/s")
}
