package main

import (
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"choir/testkit/hostbench"
)

// result is what one stage (N agents running) measured. A zero duration
// or a NaN means "not measured" and prints as "—".
type result struct {
	N int

	ContainerPSS float64 // bytes per agent: PSS of the container's processes
	ShimPSS      float64 // bytes per agent: PSS of its containerd shim
	MemAvailDrop float64 // bytes per agent: MemAvailable lost across the agents' starts, over N
	ChoirdRSS    int64   // bytes
	ChoirdGrowth float64 // bytes per agent: choird's RSS now minus before the first agent, over N

	Window       time.Duration // the idle window
	ChoirdCPU    float64       // fraction of one core over the idle window
	AgentsCPU    float64       // all N containers together
	DBCPU        float64       // NaN when the database is not ours to see
	HeartbeatCPU time.Duration // choird CPU per idle heartbeat (in 10 ms ticks over N×window/interval heartbeats)

	StartNth time.Duration // agent start of the Nth agent, N-1 running

	Chat1P50, Chat1P95   time.Duration // one agent, messages in a row
	Chat10P50, Chat10P95 time.Duration // ten agents at once
	ModelP50             time.Duration // the fake model's own time to answer
}

// writeTable writes the results as a markdown table, one column per N.
func writeTable(w io.Writer, rs []result, chat1, chat10 string) error {
	mib := func(b float64) string {
		if math.IsNaN(b) {
			return "—"
		}
		return strconv.FormatFloat(b/(1<<20), 'f', 2, 64)
	}
	kib := func(b float64) string {
		if math.IsNaN(b) {
			return "—"
		}
		return strconv.FormatFloat(b/(1<<10), 'f', 0, 64)
	}
	pct := func(f float64) string {
		if math.IsNaN(f) {
			return "—"
		}
		return strconv.FormatFloat(100*f, 'f', 2, 64)
	}
	ms := func(d time.Duration) string {
		if d <= 0 {
			return "—"
		}
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64)
	}
	us := func(r result) string {
		if r.Window <= 0 {
			return "—"
		}
		return strconv.FormatFloat(float64(r.HeartbeatCPU)/float64(time.Microsecond), 'f', 0, 64)
	}
	pair := func(a, b time.Duration) string {
		if a <= 0 {
			return "—"
		}
		return ms(a) + " / " + ms(b)
	}
	window := "idle"
	if len(rs) > 0 && rs[0].Window > 0 {
		window = "idle " + rs[0].Window.String()
	}
	rows := []hostbench.Row[result]{
		{Name: "container PSS per agent (MiB)", Cell: func(r result) string { return mib(r.ContainerPSS) }},
		{Name: "shim PSS per agent (MiB)", Cell: func(r result) string { return mib(r.ShimPSS) }},
		{Name: "all-in per agent: container + shim PSS (MiB)", Cell: func(r result) string { return mib(r.ContainerPSS + r.ShimPSS) }},
		{Name: "MemAvailable drop per agent (MiB)", Cell: func(r result) string { return mib(r.MemAvailDrop) }},
		{Name: "choird RSS (MiB)", Cell: func(r result) string { return mib(float64(r.ChoirdRSS)) }},
		{Name: "choird RSS growth per agent (KiB)", Cell: func(r result) string { return kib(r.ChoirdGrowth) }},
		{Name: "choird CPU, " + window + " (% of a core)", Cell: func(r result) string { return pct(r.ChoirdCPU) }},
		{Name: "choird CPU per idle heartbeat (µs)", Cell: us},
		{Name: "all agents' CPU, " + window + " (% of a core)", Cell: func(r result) string { return pct(r.AgentsCPU) }},
		{Name: "database CPU, " + window + " (% of a core)", Cell: func(r result) string { return pct(r.DBCPU) }},
		{Name: "start→running of the Nth agent (ms)", Cell: func(r result) string { return ms(r.StartNth) }},
		{Name: "chat --once, " + chat1 + ": p50 / p95 (ms)", Cell: func(r result) string { return pair(r.Chat1P50, r.Chat1P95) }},
		{Name: "chat --once, " + chat10 + ": p50 / p95 (ms)", Cell: func(r result) string { return pair(r.Chat10P50, r.Chat10P95) }},
		{Name: "the model's own answer, p50 (ms)", Cell: func(r result) string { return ms(r.ModelP50) }},
	}
	var b strings.Builder
	hostbench.WriteTable(&b, rs, func(r result) int { return r.N }, rows)
	_, err := io.WriteString(w, b.String())
	return err
}
