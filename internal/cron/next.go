package cron

import "time"

// searchYears bounds Next's search: Parse refuses a schedule whose days
// exist in no month, so every other one fires within 8 years (February 29
// on a given weekday is the rarest); the bound stops a loop, not a
// schedule.
const searchYears = 12

// Next returns the first instant strictly after after at which the
// schedule fires in loc (nil means UTC), at a whole minute. It follows the
// package's daylight-saving rules: a time that a spring-forward gap skips
// fires at the end of the gap, a time that occurs twice fires at its first
// occurrence only. It returns the zero Time when the schedule does not fire
// within twelve years (the zero Schedule never does).
func (s *Schedule) Next(after time.Time, loc *time.Location) time.Time {
	if s == nil || !s.parsedOK {
		return time.Time{}
	}
	if loc == nil {
		loc = time.UTC
	}
	local := after.In(loc)
	// Wall-clock times are computed as UTC times, which have no
	// transitions, then mapped to instants of loc.
	wall := time.Date(local.Year(), local.Month(), local.Day(), local.Hour(), local.Minute(), 0, 0, time.UTC).Add(time.Minute)
	limit := wall.AddDate(searchYears, 0, 0)
	for {
		w, ok := s.nextWall(wall, limit)
		if !ok {
			return time.Time{}
		}
		if t, ok := instant(w, loc); ok && t.After(after) {
			return t
		}
		wall = w.Add(time.Minute)
	}
}

// nextWall returns the first wall-clock time at or after w (a UTC time
// standing for a wall clock) that matches, or false past limit.
func (s *Schedule) nextWall(w, limit time.Time) (time.Time, bool) {
	for !w.After(limit) {
		switch {
		case s.month&(1<<uint(w.Month())) == 0:
			w = time.Date(w.Year(), w.Month()+1, 1, 0, 0, 0, 0, time.UTC)
		case !s.dayMatches(w):
			w = time.Date(w.Year(), w.Month(), w.Day()+1, 0, 0, 0, 0, time.UTC)
		case s.hour&(1<<uint(w.Hour())) == 0:
			w = time.Date(w.Year(), w.Month(), w.Day(), w.Hour()+1, 0, 0, 0, time.UTC)
		case s.minute&(1<<uint(w.Minute())) == 0:
			w = w.Add(time.Minute)
		default:
			return w, true
		}
	}
	return time.Time{}, false
}

// dayMatches applies Vixie's day-of-month / day-of-week rule.
func (s *Schedule) dayMatches(w time.Time) bool {
	dom := s.dom&(1<<uint(w.Day())) != 0
	dow := s.dow&(1<<uint(w.Weekday())) != 0
	if s.domStar || s.dowStar {
		return dom && dow
	}
	return dom || dow
}

// instant maps wall-clock time w (fields read as UTC) to the instant it
// names in loc: its first occurrence when it occurs twice, the end of the
// gap when a transition skipped it. ok is false only when no instant can
// be found (a location with a gap longer than a day).
func instant(w time.Time, loc *time.Location) (time.Time, bool) {
	base := w.Unix()
	var first time.Time
	var latest time.Time
	for _, probe := range []int64{base - 86400, base, base + 86400} {
		_, off := time.Unix(probe, 0).In(loc).Zone()
		c := time.Unix(base-int64(off), 0).In(loc)
		if latest.IsZero() || c.After(latest) {
			latest = c
		}
		if sameWall(c, w) && (first.IsZero() || c.Before(first)) {
			first = c
		}
	}
	if !first.IsZero() {
		return first, true
	}
	// A gap: the wall time was skipped. It fires when the zone that
	// skipped it began.
	start, _ := latest.ZoneBounds()
	if start.IsZero() || start.After(latest) {
		return time.Time{}, false
	}
	return start.In(loc), true
}

func sameWall(t, w time.Time) bool {
	y, mo, d := t.Date()
	wy, wmo, wd := w.Date()
	return y == wy && mo == wmo && d == wd && t.Hour() == w.Hour() && t.Minute() == w.Minute()
}

// Matches reports whether the wall clock of t (in t's own location) is a
// time of the schedule.
func (s *Schedule) Matches(t time.Time) bool {
	if s == nil || !s.parsedOK {
		return false
	}
	w := time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), 0, 0, time.UTC)
	return s.month&(1<<uint(w.Month())) != 0 && s.dayMatches(w) &&
		s.hour&(1<<uint(w.Hour())) != 0 && s.minute&(1<<uint(w.Minute())) != 0
}
