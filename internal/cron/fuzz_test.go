package cron

import (
	"errors"
	"testing"
	"time"
)

// FuzzParse: any text either parses or fails with a *SyntaxError; a
// schedule that parses fires strictly later than asked, at a whole minute
// whose wall clock it matches (UTC has no transitions), and never twice at
// the same instant.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"0 3 * * *", "*/15 9-17 * * mon-fri", "0 0 13 * fri", "@daily", "5/20 1,2,3 1-31/2 jan-dec/3 0-7", "0 0 29 2 *", "", "@reboot", "1,,2 * * * *"} {
		f.Add(s, int64(1767225600))
	}
	f.Fuzz(func(t *testing.T, expr string, unix int64) {
		s, err := Parse(expr)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) = %v; want a *SyntaxError", expr, err)
			}
			return
		}
		after := time.Unix(unix%(1<<33), 0).UTC()
		next := s.Next(after, time.UTC)
		if next.IsZero() {
			return
		}
		if !next.After(after) || next.Second() != 0 || next.Nanosecond() != 0 || !s.Matches(next) {
			t.Fatalf("Parse(%q).Next(%s) = %s; want a later whole minute the schedule matches", expr, after, next)
		}
		if again := s.Next(next, time.UTC); !again.IsZero() && !again.After(next) {
			t.Fatalf("Parse(%q).Next(%s) = %s; not after it", expr, next, again)
		}
		// In a zone with daylight saving: later, and either a matching
		// wall clock or the end of a gap (the start of a zone period).
		paris, err := time.LoadLocation("Europe/Paris")
		if err != nil {
			return
		}
		next = s.Next(after, paris)
		if next.IsZero() {
			return
		}
		start, _ := next.In(paris).ZoneBounds()
		if !next.After(after) || !(s.Matches(next.In(paris)) || next.Equal(start)) {
			t.Fatalf("Parse(%q).Next(%s) in Paris = %s; want a later matching time or a gap's end", expr, after, next.In(paris))
		}
	})
}
