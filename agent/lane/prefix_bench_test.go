package lane

import "testing"

// The share of prompt tokens a provider's prefix cache could serve over a
// 20-turn session with five core jobs and a skill run through its states
// (prefixSession), when the pretend provider reports cached tokens by the
// longest common prefix with the stream's previous request
// (openaitest.PrefixCache). Reported as cache-share (0 to 1), with the
// session's prompt and cached tokens; the time per op is a whole session.
//
//	go test -run '^$' -bench PrefixCacheShare -benchtime 5x ./agent/lane
func BenchmarkPrefixCacheShare(b *testing.B) {
	var share float64
	var cached, prompt int
	for range b.N {
		p := newPrefixSession(b)
		for i := range 20 {
			p.turn(b, i)
		}
		share, cached, prompt = p.cacheShare()
	}
	b.ReportMetric(share, "cache-share")
	b.ReportMetric(float64(prompt), "prompt-tokens")
	b.ReportMetric(float64(cached), "cached-tokens")
}
