package cron

import (
	"errors"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the DST tests need Europe/Paris and America/New_York on any machine
)

func utc(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04", s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestNext(t *testing.T) {
	for _, c := range []struct {
		expr, after string
		want        []string // successive firings
	}{
		{"0 3 * * *", "2026-01-01 00:00", []string{"2026-01-01 03:00", "2026-01-02 03:00"}},
		{"0 3 * * *", "2026-01-01 03:00", []string{"2026-01-02 03:00"}},
		{"*/15 * * * *", "2026-01-01 10:07", []string{"2026-01-01 10:15", "2026-01-01 10:30", "2026-01-01 10:45", "2026-01-01 11:00"}},
		{"5/20 * * * *", "2026-01-01 10:00", []string{"2026-01-01 10:05", "2026-01-01 10:25", "2026-01-01 10:45", "2026-01-01 11:05"}},
		{"0 9-17/4 * * *", "2026-01-01 00:00", []string{"2026-01-01 09:00", "2026-01-01 13:00", "2026-01-01 17:00", "2026-01-02 09:00"}},
		{"30 8 * * mon-fri", "2026-01-02 09:00", []string{"2026-01-05 08:30", "2026-01-06 08:30"}}, // Fri -> Mon
		{"0 0 1,15 * *", "2026-01-01 00:00", []string{"2026-01-15 00:00", "2026-02-01 00:00"}},
		{"0 12 * jan,jul *", "2026-02-01 00:00", []string{"2026-07-01 12:00", "2026-07-02 12:00"}},
		// Vixie OR rule: both restricted -> the 13th OR a Friday.
		{"0 0 13 * fri", "2026-02-01 00:00", []string{"2026-02-06 00:00", "2026-02-13 00:00", "2026-02-20 00:00"}},
		// One starts with "*": AND (only the other restricts).
		{"0 0 */1 * fri", "2026-02-01 00:00", []string{"2026-02-06 00:00", "2026-02-13 00:00"}},
		{"0 0 13 * *", "2026-02-01 00:00", []string{"2026-02-13 00:00", "2026-03-13 00:00"}},
		{"0 0 * * 7", "2026-01-01 00:00", []string{"2026-01-04 00:00"}}, // 7 is Sunday
		{"0 0 29 2 *", "2026-01-01 00:00", []string{"2028-02-29 00:00", "2032-02-29 00:00"}},
		{"@hourly", "2026-01-01 10:59", []string{"2026-01-01 11:00", "2026-01-01 12:00"}},
		{"@daily", "2026-01-01 10:59", []string{"2026-01-02 00:00"}},
		{"@weekly", "2026-01-01 10:59", []string{"2026-01-04 00:00", "2026-01-11 00:00"}},
		{"@monthly", "2026-01-31 10:59", []string{"2026-02-01 00:00"}},
		{"@yearly", "2026-03-01 00:00", []string{"2027-01-01 00:00"}},
		{"0 0 31 * *", "2026-04-01 00:00", []string{"2026-05-31 00:00", "2026-07-31 00:00"}},
	} {
		s, err := Parse(c.expr)
		if err != nil {
			t.Fatalf("Parse(%q) = %v", c.expr, err)
		}
		at := utc(c.after)
		for _, w := range c.want {
			got := s.Next(at, time.UTC)
			if !got.Equal(utc(w)) {
				t.Errorf("Parse(%q).Next(%s) = %s; want %s", c.expr, at.Format(time.DateTime), got.Format(time.DateTime), w)
				break
			}
			if !s.Matches(got) {
				t.Errorf("Parse(%q).Matches(%s) = false for its own firing", c.expr, got)
			}
			at = got
		}
	}
}

func TestNextSecondsAreTruncated(t *testing.T) {
	s := MustParse("* * * * *")
	after := time.Date(2026, 1, 1, 10, 0, 30, 5, time.UTC)
	if got, want := s.Next(after, nil), time.Date(2026, 1, 1, 10, 1, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("Next(%s) = %s; want %s", after, got, want)
	}
}

// The package's daylight-saving rules, in Paris (CET/CEST) and New York.
func TestNextDST(t *testing.T) {
	paris, _ := time.LoadLocation("Europe/Paris")
	ny, _ := time.LoadLocation("America/New_York")
	at := func(loc *time.Location, y int, mo time.Month, d, h, mi int) time.Time {
		return time.Date(y, mo, d, h, mi, 0, 0, loc)
	}
	for _, c := range []struct {
		name  string
		expr  string
		loc   *time.Location
		after time.Time
		want  []time.Time // UTC instants
	}{
		{
			// 2026-03-29: 02:00 CET jumps to 03:00 CEST (01:00Z).
			name: "spring gap fires at its end", expr: "30 2 * * *", loc: paris,
			after: at(paris, 2026, 3, 28, 12, 0),
			want: []time.Time{
				time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC), // 03:00 CEST, once
				time.Date(2026, 3, 30, 0, 30, 0, 0, time.UTC),
			},
		},
		{
			name: "every minute in the gap fires once at its end", expr: "* 2 * * *", loc: paris,
			after: at(paris, 2026, 3, 29, 1, 58),
			want: []time.Time{
				time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC), // the whole 02:xx hour, once, at 03:00 CEST
				time.Date(2026, 3, 30, 0, 0, 0, 0, time.UTC), // 02:00 CEST next day
				time.Date(2026, 3, 30, 0, 1, 0, 0, time.UTC),
			},
		},
		{
			// 2026-10-25: 03:00 CEST falls back to 02:00 CET (01:00Z).
			name: "repeated time fires once, first occurrence", expr: "30 2 * * *", loc: paris,
			after: at(paris, 2026, 10, 24, 12, 0),
			want: []time.Time{
				time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC), // 02:30 CEST
				time.Date(2026, 10, 26, 1, 30, 0, 0, time.UTC), // next day, 02:30 CET
			},
		},
		{
			name: "every 30 minutes pauses in the repeated hour", expr: "*/30 * * * *", loc: paris,
			after: time.Date(2026, 10, 25, 0, 15, 0, 0, time.UTC), // 02:15 CEST
			want: []time.Time{
				time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC), // 02:30 CEST
				time.Date(2026, 10, 25, 2, 0, 0, 0, time.UTC),  // 03:00 CET: 02:00 and 02:30 CET were seen already
			},
		},
		{
			// 2026-03-08: 02:00 EST jumps to 03:00 EDT (07:00Z).
			name: "New York spring", expr: "0 2 * * *", loc: ny,
			after: at(ny, 2026, 3, 7, 12, 0),
			want:  []time.Time{time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC), time.Date(2026, 3, 9, 6, 0, 0, 0, time.UTC)},
		},
		{
			name: "a zone's daily time is local", expr: "0 3 * * *", loc: ny,
			after: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
			want:  []time.Time{time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC)},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := MustParse(c.expr)
			after := c.after
			for _, w := range c.want {
				got := s.Next(after, c.loc)
				if !got.Equal(w) {
					t.Fatalf("Parse(%q).Next(%s) in %s = %s; want %s", c.expr, after.UTC(), c.loc, got.UTC(), w)
				}
				after = got
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	for _, c := range []struct {
		expr, field string
		pos         int
		msg         string
	}{
		{"", "expression", 0, "has 0 fields"},
		{"0 3 * *", "expression", 0, "has 4 fields"},
		{"0 3 * * * *", "expression", 0, "has 6 fields"},
		{"60 * * * *", "minute", 1, "out of range 0-59"},
		{"0 24 * * *", "hour", 3, "out of range 0-23"},
		{"0 0 0 * *", "day-of-month", 5, "out of range 1-31"},
		{"0 0 * 13 *", "month", 7, "out of range 1-12"},
		{"0 0 * * 8", "day-of-week", 9, "out of range 0-7"},
		{"0 0 * foo *", "month", 7, `"foo" is not a number from 1 to 12 or a name (jan-dec)`},
		{"0 0 * * mon-funday", "day-of-week", 13, `"funday"`},
		{"1,,2 * * * *", "minute", 3, "empty list item"},
		{"0 0,5-2 * * *", "hour", 5, "goes backwards"},
		{"*/0 * * * *", "minute", 3, `step "0"`},
		{"*/x * * * *", "minute", 3, `step "x"`},
		{"/5 * * * *", "minute", 1, "a step needs a range"},
		{"-5 * * * *", "minute", 1, "missing value"},
		{"+5 * * * *", "minute", 1, `"+5" is not a number`},
		{"0 0 30 2 *", "day-of-month", 0, "never fire"},
		{"0 0 31 4,6,9,11 *", "day-of-month", 0, "never fire"},
		{"@reboot", "expression", 1, "@reboot"},
		{"@fortnightly", "expression", 1, "unknown macro"},
		{strings.Repeat("1,", 600) + "1 * * * *", "expression", 0, "longer than"},
	} {
		_, err := Parse(c.expr)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) = %v; want a *SyntaxError", c.expr, err)
			continue
		}
		if se.Field != c.field || se.Pos != c.pos || !strings.Contains(se.Msg, c.msg) {
			t.Errorf("Parse(%q) = %q (field %s, column %d); want field %s, column %d, %q", c.expr, err, se.Field, se.Pos, c.field, c.pos, c.msg)
		}
	}
}

func TestParseAccepts(t *testing.T) {
	for _, expr := range []string{
		"0 0 30 2 mon", // never the 30th of February, but Mondays of February (OR)
		"  0\t3  * * *  ",
		"0 0 * JAN-mar SUN,sat",
		"0-59/59 0-23/23 1-31/30 1-12/11 0-7/7",
		"0 0 29 2 *",
	} {
		if _, err := Parse(expr); err != nil {
			t.Errorf("Parse(%q) = %v; want it accepted", expr, err)
		}
	}
}

func TestZeroScheduleNeverFires(t *testing.T) {
	var s Schedule
	if got := s.Next(time.Now(), nil); !got.IsZero() {
		t.Errorf("zero Schedule.Next = %s; want the zero Time", got)
	}
}

func BenchmarkNext(b *testing.B) {
	s := MustParse("0 0 13 * fri")
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for b.Loop() {
		at = s.Next(at, time.UTC)
	}
}
