package main

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
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

// percentile is the nearest-rank percentile p (0-100] of ds, 0 for none.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	if rank < 1 {
		rank = 1
	}
	if rank > len(s) {
		rank = len(s)
	}
	return s[rank-1]
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
	rows := []struct {
		name string
		cell func(r result) string
	}{
		{"container PSS per agent (MiB)", func(r result) string { return mib(r.ContainerPSS) }},
		{"shim PSS per agent (MiB)", func(r result) string { return mib(r.ShimPSS) }},
		{"all-in per agent: container + shim PSS (MiB)", func(r result) string { return mib(r.ContainerPSS + r.ShimPSS) }},
		{"MemAvailable drop per agent (MiB)", func(r result) string { return mib(r.MemAvailDrop) }},
		{"choird RSS (MiB)", func(r result) string { return mib(float64(r.ChoirdRSS)) }},
		{"choird RSS growth per agent (KiB)", func(r result) string { return kib(r.ChoirdGrowth) }},
		{"choird CPU, " + window + " (% of a core)", func(r result) string { return pct(r.ChoirdCPU) }},
		{"choird CPU per idle heartbeat (µs)", us},
		{"all agents' CPU, " + window + " (% of a core)", func(r result) string { return pct(r.AgentsCPU) }},
		{"database CPU, " + window + " (% of a core)", func(r result) string { return pct(r.DBCPU) }},
		{"start→running of the Nth agent (ms)", func(r result) string { return ms(r.StartNth) }},
		{"chat --once, " + chat1 + ": p50 / p95 (ms)", func(r result) string { return pair(r.Chat1P50, r.Chat1P95) }},
		{"chat --once, " + chat10 + ": p50 / p95 (ms)", func(r result) string { return pair(r.Chat10P50, r.Chat10P95) }},
		{"the model's own answer, p50 (ms)", func(r result) string { return ms(r.ModelP50) }},
	}
	var b strings.Builder
	b.WriteString("| |")
	for _, r := range rs {
		fmt.Fprintf(&b, " N=%d |", r.N)
	}
	b.WriteString("\n|---|")
	for range rs {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, row := range rows {
		b.WriteString("| " + row.name + " |")
		for _, r := range rs {
			b.WriteString(" " + row.cell(r) + " |")
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
