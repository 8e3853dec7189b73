package hostbench

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Row is one line of a results table: its name and its cell for one
// stage's result.
type Row[R any] struct {
	Name string
	Cell func(r R) string
}

// WriteTable writes rows as a markdown table with one column per result,
// headed N=<n(r)>.
func WriteTable[R any](b *strings.Builder, rs []R, n func(R) int, rows []Row[R]) {
	b.WriteString("| |")
	for _, r := range rs {
		fmt.Fprintf(b, " N=%d |", n(r))
	}
	b.WriteString("\n|---|")
	for range rs {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, row := range rows {
		b.WriteString("| " + row.Name + " |")
		for _, r := range rs {
			b.WriteString(" " + row.Cell(r) + " |")
		}
		b.WriteString("\n")
	}
}

// Percentile is the nearest-rank percentile p (0-100] of ds, 0 for none.
// ds is left in its order.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}
