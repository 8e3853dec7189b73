package metrics

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
)

// Registry is a set of metric families with distinct names.
type Registry struct {
	mu       sync.Mutex
	fams     map[string]family
	lastSize atomic.Int64 // bytes of the last scrape
}

// family is what a registry writes: its description and its samples.
type family interface {
	describe() desc
	write(b []byte) []byte // the sample lines, sorted
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{fams: map[string]family{}} }

// Default is the registry choird serves on /metrics.
var Default = NewRegistry()

func (r *Registry) register(f family) {
	name := f.describe().name
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.fams[name]; dup {
		panic(fmt.Sprintf("metrics: %s registered twice", name))
	}
	r.fams[name] = f
}

// Counter registers a counter family. Its name should end in _total.
func (r *Registry) Counter(name, help string, labels ...string) *CounterVec {
	c := &CounterVec{v: newVec(newDesc(name, help, "counter", labels), func() *Counter { return &Counter{} })}
	r.register(c)
	if len(labels) == 0 {
		c.With() // a family without labels always shows its one series
	}
	return c
}

// Gauge registers a gauge family.
func (r *Registry) Gauge(name, help string, labels ...string) *GaugeVec {
	g := &GaugeVec{v: newVec(newDesc(name, help, "gauge", labels), func() *Gauge { return &Gauge{} })}
	r.register(g)
	if len(labels) == 0 {
		g.With()
	}
	return g
}

// Histogram registers a histogram family with the given upper bounds
// (sorted and deduplicated here; +Inf is implicit). nil means
// DefaultBuckets.
func (r *Registry) Histogram(name, help string, buckets []float64, labels ...string) *HistogramVec {
	if buckets == nil {
		buckets = DefaultBuckets
	}
	upper := slices.Clone(buckets)
	sort.Float64s(upper)
	upper = slices.Compact(upper)
	if n := len(upper); n > 0 && upper[n-1] > maxFloat {
		upper = upper[:n-1] // +Inf is always the last bucket
	}
	h := &HistogramVec{upper: upper}
	for _, u := range upper {
		h.le = append(h.le, string(appendFloat(nil, u)))
	}
	h.le = append(h.le, "+Inf")
	h.v = newVec(newDesc(name, help, "histogram", labels), func() *Histogram {
		return &Histogram{upper: upper, counts: make([]uint64, len(upper)+1)}
	})
	r.register(h)
	if len(labels) == 0 {
		h.With()
	}
	return h
}

// CounterFunc registers a counter family whose samples f reports at each
// scrape (a count kept elsewhere). f must not block for long: a scrape
// waits for it.
func (r *Registry) CounterFunc(name, help string, labels []string, f func() []Sample) {
	r.register(&funcFamily{desc: newDesc(name, help, "counter", labels), f: f})
}

// GaugeFunc registers a gauge family whose samples f reports at each
// scrape. Samples with the same label values are added together.
func (r *Registry) GaugeFunc(name, help string, labels []string, f func() []Sample) {
	r.register(&funcFamily{desc: newDesc(name, help, "gauge", labels), f: f})
}

// families returns the registered families sorted by name.
func (r *Registry) families() []family {
	r.mu.Lock()
	out := make([]family, 0, len(r.fams))
	for _, f := range r.fams {
		out = append(out, f)
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].describe().name < out[j].describe().name })
	return out
}
