package verify

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"choir/choird/headless/mood"
)

// Summary is what a verifier's output says about its tests, when it is in
// a format choir reads: go test's, or a closing "N passed, N failed" line
// (pytest and others).
type Summary struct {
	Format         string `json:"format"` // "go test" or "counts"
	Passed         int    `json:"passed"`
	Failed         int    `json:"failed"`
	Skipped        int    `json:"skipped"`
	PackagesOK     int    `json:"packages_ok,omitempty"` // go test: "ok" lines
	PackagesFailed int    `json:"packages_failed,omitempty"`
}

var (
	goOK      = regexp.MustCompile(`^ok\s+\S+`)
	goFAIL    = regexp.MustCompile(`^FAIL\s+\S+`)
	goTest    = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): `)
	counts    = regexp.MustCompile(`\b(\d+) (passed|failed|skipped)\b`)
	failingRe = regexp.MustCompile(`(?i)(--- FAIL|^FAIL\b|\bfail(ed|ure|s)?\b|\berror\b|panic:|\bassert)`)
)

// Brief is a one-line account of the report for a receipt or a DM: the
// outcome, the exit status, the time and the counts; never the output.
func (r Report) Brief() string {
	var b strings.Builder
	switch {
	case r.Passed:
		b.WriteString("passed")
	case r.TimedOut:
		fmt.Fprintf(&b, "timed out after %.1fs", float64(r.DurationMS)/1000)
	default:
		fmt.Fprintf(&b, "failed (exit %d)", r.ExitCode)
	}
	if !r.TimedOut {
		fmt.Fprintf(&b, " in %.1fs", float64(r.DurationMS)/1000)
	}
	if s := r.Summary; s != nil {
		fmt.Fprintf(&b, "; %s: %d passed, %d failed, %d skipped", s.Format, s.Passed, s.Failed, s.Skipped)
		if s.PackagesOK+s.PackagesFailed > 0 {
			fmt.Fprintf(&b, " (packages: %d ok, %d failed)", s.PackagesOK, s.PackagesFailed)
		}
	}
	return b.String()
}

// summarize reads counts from output, or returns nil.
func summarize(out []byte) *Summary {
	var s Summary
	goSeen, countSeen := false, false
	var last Summary
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case goOK.MatchString(line):
			s.PackagesOK++
			goSeen = true
		case goFAIL.MatchString(line):
			s.PackagesFailed++
			goSeen = true
		}
		if m := goTest.FindStringSubmatch(line); m != nil {
			goSeen = true
			switch m[1] {
			case "PASS":
				s.Passed++
			case "FAIL":
				s.Failed++
			case "SKIP":
				s.Skipped++
			}
		}
		if ms := counts.FindAllStringSubmatch(line, -1); len(ms) > 0 {
			var c Summary
			for _, m := range ms {
				n, _ := strconv.Atoi(m[1])
				switch m[2] {
				case "passed":
					c.Passed = n
				case "failed":
					c.Failed = n
				case "skipped":
					c.Skipped = n
				}
			}
			last, countSeen = c, true
		}
	}
	switch {
	case goSeen:
		s.Format = "go test"
		return &s
	case countSeen:
		last.Format = "counts"
		return &last
	}
	return nil
}

// failingLines picks from a failed verifier's output the lines that say
// what failed; when none is recognisable, its exit status and last lines
// stand for it, and a timeout is just that.
func failingLines(out []byte, exit int, timedOut bool) []string {
	if timedOut {
		return []string{"timeout"}
	}
	var failing, all []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "[choir: ") {
			continue
		}
		all = append(all, l)
		if failingRe.MatchString(l) {
			failing = append(failing, l)
		}
	}
	if len(failing) > 0 {
		return failing
	}
	return append([]string{"exit " + strconv.Itoa(exit)}, all[max(0, len(all)-5):]...)
}

// signature is the failure signature the anomaly detectors compare
// (mood.Signature, over the normalised failing lines).
func signature(verifier string, out []byte, exit int, timedOut bool) string {
	return mood.Signature(verifier, failingLines(out, exit, timedOut))
}
