package main

import (
	"strings"
	"testing"
	"time"
)

// BenchmarkConfigApplyReachesTheAgent measures, on a real engine, the time
// from `config apply` (a hot change: the model's endpoint) to the running
// agent reporting the new config version (§16.3; the goal is within one
// heartbeat interval, 200 ms here).
//
//	go test -run '^$' -bench ConfigApplyReachesTheAgent -benchtime 10x ./choirctl
func BenchmarkConfigApplyReachesTheAgent(b *testing.B) {
	ag := newBuiltAgent(b)
	endpoints := []string{serveModel(b, &countingModel{}), serveModel(b, &countingModel{})}
	i := 0
	for b.Loop() {
		b.StopTimer()
		editConfig(b, ag.home, func(cfg map[string]any) {
			cfg["models"].(map[string]any)["m"].(map[string]any)["endpoint"] = endpoints[i%2]
		})
		i++
		if _, stderr, code := ctlRun(b, ag.home, "", "config", "load"); code != 0 {
			b.Fatalf("config load = %d %q", code, stderr)
		}
		b.StartTimer()
		if _, stderr, code := ctlRun(b, ag.home, "", "config", "apply"); code != 0 {
			b.Fatalf("config apply = %d %q", code, stderr)
		}
		version := choirdStatus(b, ag.home).ConfigVersion
		waitUntil(b, "the agent on the new version", time.Minute, func() bool {
			return agentState(b, ag.home, "agent-1").ConfigVersion == version
		}, ag.report)
	}
}

// BenchmarkAgentUpdateWithoutRebuild measures `agent update` when the image
// it needs is already built (the agent repo alternates between two commits
// whose images exist): fetch and check, stop with the session saved, start
// on the other image and resume (§17.4).
//
//	go test -run '^$' -bench AgentUpdateWithoutRebuild -benchtime 5x ./choirctl
func BenchmarkAgentUpdateWithoutRebuild(b *testing.B) {
	ag := newBuiltAgent(b)
	souls := []string{"soul A\n", "soul B\n"}
	// Build both images once, outside the measurement.
	for _, soul := range souls {
		commitFile(b, ag.agentRepo, "identity/SOUL.md", soul, 0o644)
		if out, stderr, code := ctlRun(b, ag.home, "", "agent", "update", "agent-1"); code != 0 {
			b.Fatalf("agent update = %d %q %q", code, out, stderr)
		}
	}
	i := 0
	for b.Loop() {
		b.StopTimer()
		commitFile(b, ag.agentRepo, "identity/SOUL.md", souls[i%2], 0o644)
		i++
		b.StartTimer()
		out, stderr, code := ctlRun(b, ag.home, "", "agent", "update", "agent-1")
		if code != 0 {
			b.Fatalf("agent update = %d %q %q", code, out, stderr)
		}
		b.StopTimer()
		if want := "agent-1: redeployed"; !strings.Contains(out, want) {
			b.Fatalf("agent update = %q; want %q", out, want)
		}
		b.StartTimer()
	}
}
