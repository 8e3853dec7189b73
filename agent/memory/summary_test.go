package memory

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

var known = map[string]string{
	"aaaaaaaa": "aaaaaaaa" + strings.Repeat("1", 56),
	"bbbbbbbb": "bbbbbbbb" + strings.Repeat("2", 56),
}

func resolve(ref string) (string, bool) {
	for p, h := range known {
		if strings.HasPrefix(h, ref) && len(ref) >= 8 || strings.HasPrefix(ref, p) && ref == h {
			return h, true
		}
	}
	return "", false
}

func TestApply(t *testing.T) {
	base := Summary{Summary: "Ada works on choir.", Facts: []Fact{{Key: "editor", Value: "vim"}},
		ReferencedEvents: []string{known["aaaaaaaa"]}}
	lim := Limits{Resolve: resolve, MaxBytes: 1000}
	tests := []struct {
		name  string
		delta string
		want  func(Summary) bool
		fails []string // JSON pointers of the failures
	}{
		{"append", `{"memory_delta":{"mode":"append","summary_update":"She prefers Go."}}`,
			func(s Summary) bool { return s.Summary == "Ada works on choir.\nShe prefers Go." }, nil},
		{"overwrite", `{"mode":"overwrite","summary_update":"New text."}`,
			func(s Summary) bool { return s.Summary == "New text." && len(s.Facts) == 1 }, nil},
		{"fact object and reference prefix", `{"mode":"append","add_fact":{"key":"lang","value":"Go","source_event":"bbbbbbbb"},"add_references":["bbbbbbbb2222"]}`,
			func(s Summary) bool {
				return len(s.Facts) == 2 && s.Facts[1].SourceEvent == known["bbbbbbbb"] && slices.Contains(s.ReferencedEvents, known["bbbbbbbb"])
			}, nil},
		{"fact list replaces a key", `{"mode":"append","add_fact":[{"key":"editor","value":"emacs"}]}`,
			func(s Summary) bool { return len(s.Facts) == 1 && s.Facts[0].Value == "emacs" }, nil},
		{"remove fact and reference, add session", `{"mode":"append","remove_fact":{"key":"editor"},"remove_references":["aaaaaaaa"],"add_references":["session:s-1"]}`,
			func(s Summary) bool {
				return len(s.Facts) == 0 && len(s.ReferencedEvents) == 0 && slices.Equal(s.ReferencedSessions, []string{"s-1"})
			}, nil},
		{"bad mode", `{"mode":"replace","summary_update":"x"}`, nil, []string{"/memory_delta/mode"}},
		{"no mode", `{"summary_update":"x"}`, nil, []string{"/memory_delta/mode"}},
		{"empty overwrite", `{"mode":"overwrite","summary_update":"  "}`, nil, []string{"/memory_delta/summary_update"}},
		{"changes nothing", `{"mode":"append"}`, nil, []string{"/memory_delta"}},
		{"unknown event", `{"mode":"append","add_references":["cccccccc"],"add_fact":{"key":"k","value":"v","source_event":"dddddddd"}}`,
			nil, []string{"/memory_delta/add_references/0", "/memory_delta/add_fact/0/source_event"}},
		{"fact without value, missing removals", `{"mode":"append","add_fact":{"key":"k"},"remove_fact":{"key":"nope"},"remove_references":["bbbbbbbb"]}`,
			nil, []string{"/memory_delta/remove_references/0", "/memory_delta/remove_fact/0/key", "/memory_delta/add_fact/0/value"}},
		{"too large", `{"mode":"append","summary_update":"` + strings.Repeat("x", 1000) + `"}`, nil, []string{"/memory_delta"}},
		{"unknown member", `{"memory_delta":{"mode":"append","summary_update":"x","extra":1}}`, nil, []string{"/memory_delta"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := ParseDelta([]byte(tt.delta))
			got := base
			if err == nil {
				got, err = Apply(base, d, lim)
			}
			if tt.fails == nil {
				if err != nil || !tt.want(got) {
					t.Errorf("Apply(%s) = %+v, %v", tt.delta, got, err)
				}
				return
			}
			var de *DeltaError
			if !errors.As(err, &de) {
				t.Fatalf("Apply(%s) = %v; want a *DeltaError", tt.delta, err)
			}
			var paths []string
			for _, f := range de.Failures {
				paths = append(paths, f.Path)
			}
			if !slices.Equal(paths, tt.fails) {
				t.Errorf("Apply(%s) failures = %q; want %q", tt.delta, de.Failures, tt.fails)
			}
			if got.Summary != base.Summary || len(got.Facts) != 1 || len(base.Facts) != 1 {
				t.Errorf("a refused delta changed the summary: %+v", got)
			}
		})
	}
}

func TestSummaryJSON(t *testing.T) {
	if got := string(Summary{}.JSON()); got != `{"summary":"","facts":[],"referenced_sessions":[],"referenced_events":[]}` {
		t.Errorf("Summary{}.JSON() = %s", got)
	}
}
