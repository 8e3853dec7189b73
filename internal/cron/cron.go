// Package cron parses five-field cron expressions with Vixie cron's
// meaning and computes when they next fire in a time zone. It imports only
// the standard library, so config validation (internal/config) and
// choird's scheduler (choird/headless/sched) share one parser.
//
// Syntax: "minute hour day-of-month month day-of-week", fields separated by
// blanks. Each field is a comma-separated list of items; an item is "*",
// a number, a range "a-b", any of these followed by a step "/n", or "a/n"
// (meaning "a-max/n", as cronie and most modern crons read it). Months
// accept jan-dec and days of the week sun-sat (case-insensitive, also in
// ranges); day of week 7 is Sunday, like 0. The macros @yearly
// (@annually), @monthly, @weekly, @daily (@midnight) and @hourly stand
// for their usual expressions; @reboot is refused (a headless schedule
// has no boot).
//
// Day-of-month and day-of-week follow Vixie's rule: when both fields are
// restricted (neither starts with "*"), a day matches if EITHER matches
// ("0 0 1 * mon" fires on the 1st and on every Monday); when one starts
// with "*", only the other restricts.
//
// Time zones and daylight saving: a schedule is a set of wall-clock times
// in its location. Next returns the first instant after the given one
// whose wall clock matches, with two rules for the transitions:
//   - spring forward: a matching wall time that does not exist that day
//     (02:30 when clocks jump from 02:00 to 03:00) fires once, at the
//     instant the gap ends (03:00 the new time); several such times in
//     one gap fire once together;
//   - fall back: a wall time that occurs twice fires once, at its first
//     occurrence; in the repeated hour nothing fires a second time (an
//     "every 5 minutes" schedule pauses for that hour).
package cron

import (
	"fmt"
	"strconv"
	"strings"
)

// Schedule is a parsed cron expression. The zero Schedule never fires;
// use Parse.
type Schedule struct {
	expr     string
	minute   uint64 // bits 0-59
	hour     uint64 // bits 0-23
	dom      uint64 // bits 1-31
	month    uint64 // bits 1-12
	dow      uint64 // bits 0-6 (7 folded into 0)
	domStar  bool
	dowStar  bool
	parsedOK bool
}

// SyntaxError says what is wrong with an expression: the field (minute,
// hour, day-of-month, month, day-of-week, or "expression"), the 1-based
// column of the offending text in the expression, and why.
type SyntaxError struct {
	Expr  string
	Field string
	Pos   int
	Msg   string
}

func (e *SyntaxError) Error() string {
	if e.Pos > 0 {
		return fmt.Sprintf("cron expression %q: %s at column %d: %s", e.Expr, e.Field, e.Pos, e.Msg)
	}
	return fmt.Sprintf("cron expression %q: %s: %s", e.Expr, e.Field, e.Msg)
}

type field struct {
	name     string
	min, max int
	names    []string // index = value - min... see lookupName
}

var months = []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
var days = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

var fields = [5]field{
	{name: "minute", min: 0, max: 59},
	{name: "hour", min: 0, max: 23},
	{name: "day-of-month", min: 1, max: 31},
	{name: "month", min: 1, max: 12, names: months},
	{name: "day-of-week", min: 0, max: 7, names: days},
}

var macros = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// maxExprLen bounds what Parse reads: a schedule is one line of config.
const maxExprLen = 1024

// Parse parses a cron expression. The error is a *SyntaxError naming the
// field and the column.
func Parse(expr string) (*Schedule, error) {
	fail := func(fieldName string, pos int, format string, args ...any) (*Schedule, error) {
		return nil, &SyntaxError{Expr: expr, Field: fieldName, Pos: pos, Msg: fmt.Sprintf(format, args...)}
	}
	if len(expr) > maxExprLen {
		return fail("expression", 0, "longer than %d bytes", maxExprLen)
	}
	trimmed := strings.TrimSpace(expr)
	body, offset := expr, 0
	if strings.HasPrefix(trimmed, "@") {
		m, ok := macros[strings.ToLower(trimmed)]
		if !ok {
			if strings.EqualFold(trimmed, "@reboot") {
				return fail("expression", strings.Index(expr, "@")+1, "@reboot is not a schedule here (choird runs headless work on times and events, not at boot)")
			}
			return fail("expression", strings.Index(expr, "@")+1, "unknown macro %q; want @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly", trimmed)
		}
		body, offset = m, -1 // positions refer to the macro's expansion: report none
	}
	type tok struct {
		text string
		pos  int // 1-based column in expr
	}
	var toks []tok
	for i := 0; i < len(body); {
		if body[i] == ' ' || body[i] == '\t' {
			i++
			continue
		}
		j := i
		for j < len(body) && body[j] != ' ' && body[j] != '\t' {
			j++
		}
		toks = append(toks, tok{body[i:j], i + 1})
		i = j
	}
	if len(toks) != 5 {
		return fail("expression", 0, "has %d fields; want 5 (minute hour day-of-month month day-of-week) or a macro like @daily", len(toks))
	}
	s := &Schedule{expr: expr, parsedOK: true}
	sets := [5]*uint64{&s.minute, &s.hour, &s.dom, &s.month, &s.dow}
	for i, t := range toks {
		pos := t.pos
		if offset < 0 {
			pos = 0
		}
		bits, err := parseField(t.text, fields[i])
		if err != nil {
			col := pos
			if col > 0 {
				col += err.at
			}
			return fail(fields[i].name, col, "%s", err.msg)
		}
		*sets[i] = bits
	}
	if s.dow&(1<<7) != 0 {
		s.dow = s.dow&^(1<<7) | 1
	}
	s.domStar = strings.HasPrefix(toks[2].text, "*")
	s.dowStar = strings.HasPrefix(toks[4].text, "*")
	if s.dowStar && !s.anyDay() {
		return fail("day-of-month", 0, "no month of the schedule has such a day, so it would never fire")
	}
	return s, nil
}

// MustParse is Parse for expressions known to be valid; it panics on an
// error.
func MustParse(expr string) *Schedule {
	s, err := Parse(expr)
	if err != nil {
		panic(err)
	}
	return s
}

// String returns the expression as given to Parse.
func (s *Schedule) String() string { return s.expr }

// daysIn is the most days each month can have (February in a leap year).
var daysIn = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// anyDay reports whether some (day-of-month, month) pair of the schedule
// exists in some year.
func (s *Schedule) anyDay() bool {
	for m := 1; m <= 12; m++ {
		if s.month&(1<<m) == 0 {
			continue
		}
		for d := 1; d <= daysIn[m]; d++ {
			if s.dom&(1<<d) != 0 {
				return true
			}
		}
	}
	return false
}

type fieldError struct {
	at  int // offset inside the field's text
	msg string
}

func parseField(text string, f field) (uint64, *fieldError) {
	var bits uint64
	at := 0
	for _, item := range strings.Split(text, ",") {
		b, err := parseItem(item, f)
		if err != nil {
			err.at += at
			return 0, err
		}
		bits |= b
		at += len(item) + 1
	}
	return bits, nil
}

func parseItem(item string, f field) (uint64, *fieldError) {
	if item == "" {
		return 0, &fieldError{0, "empty list item (two commas, or a comma at an end)"}
	}
	rng, stepText, hasStep := strings.Cut(item, "/")
	lo, hi := f.min, f.max
	if f.name == "day-of-week" {
		hi = 6 // "*" means 0-6; 7 is only an alias
	}
	switch {
	case rng == "*":
	case rng == "":
		return 0, &fieldError{0, "a step needs a range before it, like */15 or 0-30/5"}
	default:
		a, b, isRange := strings.Cut(rng, "-")
		var err *fieldError
		if lo, err = value(a, f, 0); err != nil {
			return 0, err
		}
		switch {
		case isRange:
			if hi, err = value(b, f, len(a)+1); err != nil {
				return 0, err
			}
			if hi < lo {
				return 0, &fieldError{0, fmt.Sprintf("range %s goes backwards; write the smaller bound first", rng)}
			}
		case hasStep:
			hi = f.max
			if f.name == "day-of-week" {
				hi = 6
			}
		default:
			hi = lo
		}
	}
	step := 1
	if hasStep {
		n, err := strconv.Atoi(stepText)
		if err != nil || n < 1 || n > f.max {
			return 0, &fieldError{len(rng) + 1, fmt.Sprintf("step %q is not a number from 1 to %d", stepText, f.max)}
		}
		step = n
	}
	var bits uint64
	for v := lo; v <= hi; v += step {
		bits |= 1 << v
	}
	return bits, nil
}

// value reads a number or a name of field f; at is its offset in the item.
func value(text string, f field, at int) (int, *fieldError) {
	if text == "" {
		return 0, &fieldError{at, "missing value"}
	}
	for i, n := range f.names {
		if strings.EqualFold(text, n) {
			if f.name == "month" {
				return i + 1, nil
			}
			return i, nil
		}
	}
	n, err := strconv.Atoi(text)
	if err != nil || text[0] == '+' || text[0] == '-' {
		want := fmt.Sprintf("a number from %d to %d", f.min, f.max)
		if f.names != nil {
			want += fmt.Sprintf(" or a name (%s-%s)", f.names[0], f.names[len(f.names)-1])
		}
		return 0, &fieldError{at, fmt.Sprintf("%q is not %s", text, want)}
	}
	if n < f.min || n > f.max {
		return 0, &fieldError{at, fmt.Sprintf("value %d out of range %d-%d", n, f.min, f.max)}
	}
	return n, nil
}
