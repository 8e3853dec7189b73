package metrics

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxSeries is how many label sets a vector holds before further
// ones are folded into its overflow series.
const DefaultMaxSeries = 1000

// Overflow is the value of every label of the series that counts what came
// after a vector reached its limit of label sets.
const Overflow = "overflow"

// DefaultBuckets are the upper bounds, in seconds, of a histogram of
// durations from a millisecond to two minutes.
var DefaultBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

var (
	nameRE  = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// desc is what a family's HELP and TYPE lines say, and its label names.
type desc struct {
	name   string
	help   string
	typ    string // counter, gauge or histogram
	labels []string
}

func newDesc(name, help, typ string, labels []string) desc {
	if !nameRE.MatchString(name) {
		panic(fmt.Sprintf("metrics: invalid metric name %q", name))
	}
	seen := map[string]bool{}
	for _, l := range labels {
		if !labelRE.MatchString(l) || strings.HasPrefix(l, "__") || (typ == "histogram" && l == "le") || seen[l] {
			panic(fmt.Sprintf("metrics: %s: invalid or repeated label name %q", name, l))
		}
		seen[l] = true
	}
	return desc{name: name, help: help, typ: typ, labels: append([]string(nil), labels...)}
}

// vec holds one family's series, keyed by their label values.
type vec[T any] struct {
	desc
	max    int
	newT   func() *T
	mu     sync.RWMutex
	series map[string]*series[T]
}

type series[T any] struct {
	values []string
	m      *T
}

func newVec[T any](d desc, newT func() *T) *vec[T] {
	return &vec[T]{desc: d, max: DefaultMaxSeries, newT: newT, series: map[string]*series[T]{}}
}

// with returns the series of values, creating it (or, past the limit, the
// overflow series).
func (v *vec[T]) with(values []string) *T {
	if len(values) != len(v.labels) {
		panic(fmt.Sprintf("metrics: %s has %d labels %v, given %d values", v.name, len(v.labels), v.labels, len(values)))
	}
	key := seriesKey(values)
	v.mu.RLock()
	s := v.series[key]
	v.mu.RUnlock()
	if s != nil {
		return s.m
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if s := v.series[key]; s != nil {
		return s.m
	}
	if len(v.series) >= v.max && len(values) > 0 {
		over := make([]string, len(values))
		for i := range over {
			over[i] = Overflow
		}
		key, values = seriesKey(over), over
		if s := v.series[key]; s != nil {
			return s.m
		}
	}
	clean := make([]string, len(values))
	for i, val := range values {
		clean[i] = strings.ToValidUTF8(val, "\uFFFD")
	}
	s = &series[T]{values: clean, m: v.newT()}
	v.series[key] = s
	return s.m
}

// seriesKey joins label values with a byte valid UTF-8 never holds.
func seriesKey(values []string) string {
	return strings.Join(values, "\xff")
}

// snapshot returns the series sorted by label values.
func (v *vec[T]) snapshot() []*series[T] {
	v.mu.RLock()
	out := make([]*series[T], 0, len(v.series))
	for _, s := range v.series {
		out = append(out, s)
	}
	v.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return lessValues(out[i].values, out[j].values) })
	return out
}

func lessValues(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// Counter is a value that only goes up.
type Counter struct{ bits atomic.Uint64 }

// Add adds v; a negative or NaN v is ignored (a counter never goes down).
func (c *Counter) Add(v float64) {
	if !(v > 0) {
		return
	}
	addFloat(&c.bits, v)
}

// Inc adds 1.
func (c *Counter) Inc() { c.Add(1) }

// Value is the current count.
func (c *Counter) Value() float64 { return math.Float64frombits(c.bits.Load()) }

// Gauge is a value that goes up and down.
type Gauge struct{ bits atomic.Uint64 }

// Set sets the gauge to v.
func (g *Gauge) Set(v float64) { g.bits.Store(math.Float64bits(v)) }

// Add adds v (negative to subtract).
func (g *Gauge) Add(v float64) { addFloat(&g.bits, v) }

// Value is the current value.
func (g *Gauge) Value() float64 { return math.Float64frombits(g.bits.Load()) }

func addFloat(bits *atomic.Uint64, v float64) {
	for {
		old := bits.Load()
		if bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// Histogram counts observations into buckets by upper bound.
type Histogram struct {
	upper  []float64 // sorted; the +Inf bucket is implicit
	mu     sync.Mutex
	counts []uint64 // per bucket, not cumulative; len(upper)+1
	sum    float64
	count  uint64
}

// Observe records v.
func (h *Histogram) Observe(v float64) {
	if math.IsNaN(v) {
		return
	}
	i := sort.SearchFloat64s(h.upper, v) // the first bound >= v
	h.mu.Lock()
	h.counts[i]++
	h.sum += v
	h.count++
	h.mu.Unlock()
}

// Since records the seconds elapsed since start.
func (h *Histogram) Since(start time.Time) { h.Observe(time.Since(start).Seconds()) }

// read returns cumulative bucket counts, the sum and the count, taken
// together so that the +Inf bucket always equals the count.
func (h *Histogram) read() ([]uint64, float64, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cum := make([]uint64, len(h.counts))
	var n uint64
	for i, c := range h.counts {
		n += c
		cum[i] = n
	}
	return cum, h.sum, h.count
}

// CounterVec is a family of counters with labels.
type CounterVec struct{ v *vec[Counter] }

// With returns the counter of the label values, in the family's label order.
func (c *CounterVec) With(values ...string) *Counter { return c.v.with(values) }

// GaugeVec is a family of gauges with labels.
type GaugeVec struct{ v *vec[Gauge] }

// With returns the gauge of the label values, in the family's label order.
func (g *GaugeVec) With(values ...string) *Gauge { return g.v.with(values) }

// HistogramVec is a family of histograms with labels.
type HistogramVec struct {
	v     *vec[Histogram]
	upper []float64
	le    []string // the bounds as le label values, "+Inf" last
}

// With returns the histogram of the label values, in the family's label order.
func (h *HistogramVec) With(values ...string) *Histogram { return h.v.with(values) }

// Time records, in the histogram of labels plus outcome "ok" or "error"
// (by *err), the seconds since start. It is meant for a defer in a
// function with a named error result:
//
//	defer metrics.ImageBuildSeconds.Time(time.Now(), &err)
//
// The family's last label must be "outcome".
func (h *HistogramVec) Time(start time.Time, err *error, labels ...string) {
	outcome := "ok"
	if err != nil && *err != nil {
		outcome = "error"
	}
	h.With(append(labels, outcome)...).Since(start)
}

// Sample is one value a function family reports at scrape time, with its
// label values in the family's label order.
type Sample struct {
	Value  float64
	Labels []string
}

// funcFamily is a family whose samples f computes at each scrape.
type funcFamily struct {
	desc
	f func() []Sample
}
