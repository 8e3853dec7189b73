package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"choir/testkit/hostbench"
)

// writeTable writes the results as a markdown table, one column per N,
// then what each stage's errors were.
func writeTable(w io.Writer, rs []result) error {
	mib := func(b int64) string { return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) }
	pct := func(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) }
	ms := func(d time.Duration) string {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64)
	}
	window := "window"
	if len(rs) > 0 {
		window = rs[0].Window.String() + " window"
	}
	type row = hostbench.Row[result]
	rows := []row{
		{Name: "agents started / failed this stage", Cell: func(r result) string {
			s := fmt.Sprintf("%d / %d", r.Started, r.Failed)
			if r.Stopped {
				s += " (stopped)"
			}
			return s
		}},
		{Name: "running at the window's end (choird's list)", Cell: func(r result) string { return strconv.Itoa(r.Running) }},
		{Name: "the stage's starts, wall (s)", Cell: func(r result) string { return strconv.FormatFloat(r.StartWall.Seconds(), 'f', 1, 64) }},
		{Name: "choird CPU, " + window + " (% of a core)", Cell: func(r result) string { return pct(r.ChoirdCPU) }},
		{Name: "choird CPU per agent call (µs)", Cell: func(r result) string {
			calls := 0
			for _, c := range []string{callIdle, callEvents, callDMSend} {
				calls += len(r.T.lat[c])
			}
			if calls == 0 {
				return "—"
			}
			return strconv.FormatFloat(r.ChoirdCPU*float64(r.Window)/float64(calls)/1e3, 'f', 0, 64)
		}},
		{Name: "database CPU (% of a core)", Cell: func(r result) string {
			if !r.HasDB {
				return "—"
			}
			return pct(r.DBCPU)
		}},
		{Name: "simulator CPU, same cores (% of a core)", Cell: func(r result) string { return pct(r.SimCPU) }},
		{Name: "choird RSS / PSS (MiB)", Cell: func(r result) string { return mib(r.Choird.rss) + " / " + mib(r.Choird.pss) }},
		{Name: "choird open files / threads", Cell: func(r result) string { return fmt.Sprintf("%d / %d", r.Choird.fds, r.Choird.threads) }},
	}
	for _, c := range callOrder {
		rows = append(rows, row{Name: c + ": p50 / p99 ms (calls, errors)", Cell: func(r result) string {
			ds := r.T.lat[c]
			e := r.T.errorCount(c)
			if len(ds) == 0 && e == 0 {
				return "—"
			}
			if len(ds) == 0 {
				return fmt.Sprintf("— (0, %d)", e)
			}
			return fmt.Sprintf("%s / %s (%d, %d)", ms(hostbench.Percentile(ds, 50)), ms(hostbench.Percentile(ds, 99)), len(ds), e)
		}})
	}
	rows = append(rows,
		row{Name: "choir.dm.send answered / delivered to Telegram, window", Cell: func(r result) string { return fmt.Sprintf("%d / %d", r.DMSent, r.Delivered) }},
		row{Name: "sessions choird ended under a running agent (401)", Cell: func(r result) string { return strconv.FormatInt(r.Ended401, 10) }},
		row{Name: "agents that failed to open their session", Cell: func(r result) string { return strconv.FormatInt(r.HelloFail, 10) }},
		row{Name: "event streams choird closed", Cell: func(r result) string { return strconv.FormatInt(r.StreamDrops, 10) }},
		row{Name: "load average at the window's end", Cell: func(r result) string { return r.Load }},
	)
	var b strings.Builder
	hostbench.WriteTable(&b, rs, func(r result) int { return r.N }, rows)
	for _, r := range rs {
		classes := r.T.errorClasses()
		if len(classes) == 0 && r.FirstFailure == "" {
			continue
		}
		fmt.Fprintf(&b, "\nN=%d:", r.N)
		if r.FirstFailure != "" {
			fmt.Fprintf(&b, " first failed start: %s.", r.FirstFailure)
		}
		if len(classes) > 0 {
			fmt.Fprintf(&b, " Errors: %s.", strings.Join(classes, ", "))
			for _, c := range sortedKeys(r.T.sample) {
				fmt.Fprintf(&b, "\n  - %s: %s", c, r.T.sample[c])
			}
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}
