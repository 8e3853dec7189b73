package metrics

import (
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// ContentType is the media type of the text exposition format 0.0.4.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

const maxFloat = math.MaxFloat64

// Append appends the text exposition of every family to b.
func (r *Registry) Append(b []byte) []byte {
	for _, f := range r.families() {
		d := f.describe()
		b = append(b, "# HELP "...)
		b = append(b, d.name...)
		b = append(b, ' ')
		b = appendEscaped(b, d.help, false)
		b = append(b, "\n# TYPE "...)
		b = append(b, d.name...)
		b = append(b, ' ')
		b = append(b, d.typ...)
		b = append(b, '\n')
		b = f.write(b)
	}
	return b
}

// WriteTo writes the text exposition of every family to w.
func (r *Registry) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(r.Append(nil))
	return int64(n), err
}

// Handler serves the registry: GET or HEAD, in the text format 0.0.4.
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "use GET /metrics", http.StatusMethodNotAllowed)
			return
		}
		body := r.Append(make([]byte, 0, max(r.lastSize.Load()+r.lastSize.Load()/8, 4<<10)))
		r.lastSize.Store(int64(len(body))) // the next scrape's buffer, with room to grow
		w.Header().Set("Content-Type", ContentType)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		if req.Method == http.MethodGet {
			w.Write(body)
		}
	})
}

func (c *CounterVec) describe() desc { return c.v.desc }
func (g *GaugeVec) describe() desc   { return g.v.desc }
func (h *HistogramVec) describe() desc {
	return h.v.desc
}
func (f *funcFamily) describe() desc { return f.desc }

func (c *CounterVec) write(b []byte) []byte {
	for _, s := range c.v.snapshot() {
		b = appendSample(b, c.v.name, "", c.v.labels, s.values, "", "", s.m.Value())
	}
	return b
}

func (g *GaugeVec) write(b []byte) []byte {
	for _, s := range g.v.snapshot() {
		b = appendSample(b, g.v.name, "", g.v.labels, s.values, "", "", s.m.Value())
	}
	return b
}

func (h *HistogramVec) write(b []byte) []byte {
	for _, s := range h.v.snapshot() {
		cum, sum, count := s.m.read()
		for i, n := range cum {
			b = appendSample(b, h.v.name, "_bucket", h.v.labels, s.values, "le", h.le[i], float64(n))
		}
		b = appendSample(b, h.v.name, "_sum", h.v.labels, s.values, "", "", sum)
		b = appendSample(b, h.v.name, "_count", h.v.labels, s.values, "", "", float64(count))
	}
	return b
}

func (f *funcFamily) write(b []byte) []byte {
	var samples []Sample
	if f.f != nil {
		samples = f.f()
	}
	merged := map[string]*Sample{}
	keys := make([]string, 0, len(samples))
	for _, s := range samples {
		if len(s.Labels) != len(f.labels) {
			continue // a sample that does not fit the family is not written
		}
		clean := make([]string, len(s.Labels))
		for i, v := range s.Labels {
			clean[i] = strings.ToValidUTF8(v, "\uFFFD")
		}
		k := seriesKey(clean)
		if m := merged[k]; m != nil {
			m.Value += s.Value
			continue
		}
		merged[k] = &Sample{Value: s.Value, Labels: clean}
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return lessValues(merged[keys[i]].Labels, merged[keys[j]].Labels) })
	for _, k := range keys {
		s := merged[k]
		b = appendSample(b, f.name, "", f.labels, s.Labels, "", "", s.Value)
	}
	return b
}

// appendSample appends one line: name+suffix, the labels (and extra, for
// a bucket's le), the value.
func appendSample(b []byte, name, suffix string, labels, values []string, extra, extraValue string, v float64) []byte {
	b = append(b, name...)
	b = append(b, suffix...)
	if len(labels) > 0 || extra != "" {
		b = append(b, '{')
		for i, l := range labels {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendLabel(b, l, values[i])
		}
		if extra != "" {
			if len(labels) > 0 {
				b = append(b, ',')
			}
			b = appendLabel(b, extra, extraValue)
		}
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = appendFloat(b, v)
	return append(b, '\n')
}

func appendLabel(b []byte, name, value string) []byte {
	b = append(b, name...)
	b = append(b, '=', '"')
	b = appendEscaped(b, value, true)
	return append(b, '"')
}

// appendEscaped escapes a label value (backslash, double quote, newline)
// or a HELP text (backslash and newline only).
func appendEscaped(b []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, '\\', '\\')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '"' && quote:
			b = append(b, '\\', '"')
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendFloat writes v as the format wants it: +Inf, -Inf, NaN, integers
// without an exponent, anything else in Go's shortest form.
func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.AppendFloat(b, v, 'f', -1, 64)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}
