package metrics

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/internal/metrics/metricstest"
)

func scrape(r *Registry) string { return string(r.Append(nil)) }

func TestExposition(t *testing.T) {
	r := NewRegistry()
	req := r.Counter("choir_test_requests_total", "Requests by verb.\nSecond line with a \\ backslash.", "verb", "code")
	req.With("HEARTBEAT", "ok").Add(3)
	req.With("GET_SECRETS", "unauthorized").Inc()
	r.Gauge("choir_test_temperature_celsius", "A gauge without labels.").With().Set(-1.5)
	h := r.Histogram("choir_test_duration_seconds", "A histogram.", []float64{1, 0.5, 1, math.Inf(1)}, "verb")
	h.With("x").Observe(0.5)
	h.With("x").Observe(0.7)
	h.With("x").Observe(9)
	r.GaugeFunc("choir_test_agents", "Agents by state.", []string{"state"}, func() []Sample {
		return []Sample{{1, []string{"running"}}, {2, []string{"stopped"}}, {1, []string{"running"}}}
	})
	want := `# HELP choir_test_agents Agents by state.
# TYPE choir_test_agents gauge
choir_test_agents{state="running"} 2
choir_test_agents{state="stopped"} 2
# HELP choir_test_duration_seconds A histogram.
# TYPE choir_test_duration_seconds histogram
choir_test_duration_seconds_bucket{verb="x",le="0.5"} 1
choir_test_duration_seconds_bucket{verb="x",le="1"} 2
choir_test_duration_seconds_bucket{verb="x",le="+Inf"} 3
choir_test_duration_seconds_sum{verb="x"} 10.2
choir_test_duration_seconds_count{verb="x"} 3
# HELP choir_test_requests_total Requests by verb.\nSecond line with a \\ backslash.
# TYPE choir_test_requests_total counter
choir_test_requests_total{verb="GET_SECRETS",code="unauthorized"} 1
choir_test_requests_total{verb="HEARTBEAT",code="ok"} 3
# HELP choir_test_temperature_celsius A gauge without labels.
# TYPE choir_test_temperature_celsius gauge
choir_test_temperature_celsius -1.5
`
	if got := scrape(r); got != want {
		t.Errorf("exposition =\n%s\nwant\n%s", got, want)
	}
}

func TestLabelValuesEscaped(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{`plain`, `plain`},
		{`back\slash`, `back\\slash`},
		{`say "hi"`, `say \"hi\"`},
		{"two\nlines", `two\nlines`},
		{"\\\"\n", `\\\"\n`},
		{`\n literally`, `\\n literally`},
		{"tab\tstays", "tab\tstays"},
		{"bad \xff utf-8", "bad \uFFFD utf-8"},
		{"", ""},
		{"}{,=", "}{,="},
	} {
		t.Run(tc.value, func(t *testing.T) {
			r := NewRegistry()
			r.Counter("x_total", "x", "v").With(tc.value).Inc()
			line := strings.Split(scrape(r), "\n")[2]
			if want := `x_total{v="` + tc.want + `"} 1`; line != want {
				t.Errorf("sample line for %q = %s; want %s", tc.value, line, want)
			}
		})
	}
}

func TestHistogramBucketsAreCumulative(t *testing.T) {
	r := NewRegistry()
	h := r.Histogram("h_seconds", "h", []float64{0.1, 1, 10}).With()
	for _, v := range []float64{0.05, 0.1, 0.5, 2, 2, 50, math.NaN()} {
		h.Observe(v)
	}
	want := []string{
		`h_seconds_bucket{le="0.1"} 2`, // an observation equal to a bound is in that bucket
		`h_seconds_bucket{le="1"} 3`,
		`h_seconds_bucket{le="10"} 5`,
		`h_seconds_bucket{le="+Inf"} 6`,
		`h_seconds_sum 54.65`,
		`h_seconds_count 6`,
	}
	got := strings.Split(strings.TrimSpace(scrape(r)), "\n")[2:]
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("histogram lines =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestHelpAndTypeOncePerFamily(t *testing.T) {
	r := NewRegistry()
	c := r.Counter("a_total", "a", "k")
	h := r.Histogram("b_seconds", "b", nil, "k")
	for i := range 50 {
		c.With(fmt.Sprint(i)).Inc()
		h.With(fmt.Sprint(i)).Observe(float64(i))
	}
	out := scrape(r)
	for _, line := range []string{"# HELP a_total a", "# TYPE a_total counter", "# HELP b_seconds b", "# TYPE b_seconds histogram"} {
		if n := strings.Count(out, line+"\n"); n != 1 {
			t.Errorf("%q appears %d times; want once", line, n)
		}
	}
	if n := strings.Count(out, "\n# "); n != 3 { // 4 comment lines, the first one at the start
		t.Errorf("%d comment lines after the first; want 3", n)
	}
}

func TestOutputIsStable(t *testing.T) {
	build := func(order []int) string {
		r := NewRegistry()
		fams := []func(){
			func() { c := r.Counter("z_total", "z", "a", "b"); addAll(c, order) },
			func() { r.Gauge("m_bytes", "m", "a").With("q").Set(1) },
			func() { r.Counter("a_total", "a") },
		}
		for _, i := range []int{order[0] % 3, (order[0] + 1) % 3, (order[0] + 2) % 3} {
			fams[i]()
		}
		return scrape(r)
	}
	first := build([]int{0, 1, 2, 3, 4, 5})
	for _, order := range [][]int{{5, 4, 3, 2, 1, 0}, {2, 0, 5, 1, 4, 3}, {1, 3, 5, 0, 2, 4}} {
		if got := build(order); got != first {
			t.Fatalf("output depends on insertion order %v:\n%s\nwant\n%s", order, got, first)
		}
	}
	if !strings.HasPrefix(first, "# HELP a_total") || strings.Index(first, "m_bytes") > strings.Index(first, "z_total") {
		t.Errorf("families not sorted by name:\n%s", first)
	}
	if i, j := strings.Index(first, `z_total{a="0",b="x"}`), strings.Index(first, `z_total{a="1",b="x"}`); i < 0 || j < i {
		t.Errorf("series not sorted by label values:\n%s", first)
	}
}

func addAll(c *CounterVec, order []int) {
	for _, i := range order {
		c.With(fmt.Sprint(i), "x").Inc()
	}
}

func TestSeriesBeyondTheLimitOverflow(t *testing.T) {
	r := NewRegistry()
	c := r.Counter("c_total", "c", "tool", "agent")
	c.v.max = 3
	for i := range 10 {
		c.With(fmt.Sprint("t", i), "a").Inc()
	}
	out := scrape(r)
	if n := strings.Count(out, "c_total{"); n != 4 {
		t.Errorf("%d series; want the 3 allowed and one overflow:\n%s", n, out)
	}
	if !strings.Contains(out, `c_total{tool="overflow",agent="overflow"} 7`) {
		t.Errorf("overflow series missing or wrong:\n%s", out)
	}
	c.With("t1", "a").Inc() // an existing series still counts on its own
	if !strings.Contains(scrape(r), `c_total{tool="t1",agent="a"} 2`) {
		t.Errorf("existing series not counted after the limit:\n%s", scrape(r))
	}
}

func TestCounterNeverGoesDown(t *testing.T) {
	var c Counter
	c.Add(2)
	c.Add(-1)
	c.Add(math.NaN())
	if c.Value() != 2 {
		t.Errorf("counter after Add(2), Add(-1), Add(NaN) = %v; want 2", c.Value())
	}
}

func TestSpecialValues(t *testing.T) {
	r := NewRegistry()
	g := r.Gauge("g", "g", "v")
	g.With("inf").Set(math.Inf(1))
	g.With("minf").Set(math.Inf(-1))
	g.With("nan").Set(math.NaN())
	g.With("big").Set(1e20)
	g.With("small").Set(1.5e-7)
	g.With("int").Set(123456789012)
	out := scrape(r)
	for _, want := range []string{`g{v="inf"} +Inf`, `g{v="minf"} -Inf`, `g{v="nan"} NaN`, `g{v="big"} 1e+20`, `g{v="small"} 1.5e-07`, `g{v="int"} 123456789012`} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}

func TestInvalidDefinitionsPanic(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(r *Registry)
	}{
		{"metric name with a dash", func(r *Registry) { r.Counter("choir-x_total", "h") }},
		{"metric name starting with a digit", func(r *Registry) { r.Counter("1x_total", "h") }},
		{"empty metric name", func(r *Registry) { r.Gauge("", "h") }},
		{"label with a dot", func(r *Registry) { r.Counter("x_total", "h", "a.b") }},
		{"reserved label", func(r *Registry) { r.Counter("x_total", "h", "__name") }},
		{"repeated label", func(r *Registry) { r.Counter("x_total", "h", "a", "a") }},
		{"le on a histogram", func(r *Registry) { r.Histogram("x_seconds", "h", nil, "le") }},
		{"name registered twice", func(r *Registry) { r.Counter("x_total", "h"); r.Gauge("x_total", "h") }},
		{"wrong number of values", func(r *Registry) { r.Counter("x_total", "h", "a").With("1", "2") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", tc.name)
				}
			}()
			tc.f(NewRegistry())
		})
	}
}

func TestConcurrentUpdatesAndScrapes(t *testing.T) {
	r := NewRegistry()
	c := r.Counter("c_total", "c", "k")
	h := r.Histogram("h_seconds", "h", nil, "k")
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				k := fmt.Sprint(i % 7)
				c.With(k).Inc()
				h.With(k).Observe(float64(w))
				if i%100 == 0 {
					scrape(r)
				}
			}
		}()
	}
	wg.Wait()
	var total float64
	for i := range 7 {
		total += c.With(fmt.Sprint(i)).Value()
	}
	if total != 8000 {
		t.Errorf("total after 8x1000 concurrent Inc = %v; want 8000", total)
	}
	if !strings.Contains(scrape(r), `h_seconds_count{k="0"} 1144`) { // 143 per worker of i%7==0 in 0..999
		t.Errorf("histogram count wrong:\n%s", scrape(r))
	}
}

func TestHandler(t *testing.T) {
	r := NewRegistry()
	r.Counter("x_total", "x").With().Inc()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != ContentType {
		t.Errorf("Content-Type = %q; want %q", ct, ContentType)
	}
	if string(body) != "# HELP x_total x\n# TYPE x_total counter\nx_total 1\n" {
		t.Errorf("body = %q", body)
	}
	resp, err = http.Post(srv.URL, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST = %d (Allow %q); want 405 with Allow: GET, HEAD", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

func TestTimeRecordsTheOutcome(t *testing.T) {
	r := NewRegistry()
	h := r.Histogram("op_seconds", "op", nil, "outcome")
	work := func(fail bool) (err error) {
		defer h.Time(time.Now(), &err)
		if fail {
			return fmt.Errorf("failed")
		}
		return nil
	}
	work(false)
	work(true)
	work(true)
	out := scrape(r)
	for _, want := range []string{`op_seconds_count{outcome="ok"} 1`, `op_seconds_count{outcome="error"} 2`} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}

func TestPromtoolAcceptsHostileLabelValues(t *testing.T) {
	r := NewRegistry()
	c := r.Counter("choir_test_calls_total", "Calls, by \"tool\".\nA \\ in help.", "tool", "code")
	for _, v := range []string{`back\slash`, `"quoted"`, "new\nline", "\\\"\n", "bad \xff\xfe utf-8", "", "{}=,", "emoji ☃", strings.Repeat("long ", 200)} {
		c.With(v, "ok").Inc()
	}
	h := r.Histogram("choir_test_duration_seconds", "Durations.", nil, "tool")
	h.With(`a"b`).Observe(0.3)
	h.With("c\nd").Observe(300)
	r.Gauge("choir_test_queue_depth", "A gauge.").With().Set(math.Inf(1))
	r.GaugeFunc("choir_test_agents", "Agents.", []string{"state"}, func() []Sample { return []Sample{{1, []string{"x\ny"}}} })
	r.Counter("choir_test_empty_total", "A family with no series yet.", "k")
	metricstest.Check(t, r.Append(nil))
}
