package verify

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"slices"
	"strconv"
	"strings"
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

var normalisers = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?`), "<time>"},
	{regexp.MustCompile(`\(\d+(\.\d+)?(ns|µs|us|ms|s|m)\)`), "(<d>)"},
	{regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|us|ms|s)\b`), "<d>"},
	{regexp.MustCompile(`0x[0-9a-fA-F]+`), "0x<addr>"},
	{regexp.MustCompile(`goroutine \d+`), "goroutine <n>"},
	{regexp.MustCompile(`/tmp/[^\s:'"]*`), "/tmp/<path>"},
	{regexp.MustCompile(`\s+`), " "},
}

// normalise takes out of a line what changes from one run to the next
// without the failure changing: times, durations, addresses, goroutine
// numbers, temporary paths, spacing.
func normalise(line string) string {
	for _, n := range normalisers {
		line = n.re.ReplaceAllString(line, n.with)
	}
	return strings.TrimSpace(line)
}

// signature hashes the normalised failing lines of a failed verifier's
// output (or, when none is recognisable, its last lines and exit status):
// 16 hex digits, the same for the same failure.
func signature(verifier string, out []byte, exit int, timedOut bool) string {
	var failing, all []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := normalise(sc.Text())
		if l == "" || strings.HasPrefix(l, "[choir: ") {
			continue
		}
		all = append(all, l)
		if failingRe.MatchString(l) {
			failing = append(failing, l)
		}
	}
	var parts []string
	switch {
	case timedOut:
		parts = []string{"timeout"}
	case len(failing) > 0:
		slices.Sort(failing)
		parts = slices.Compact(failing)
	default:
		parts = append([]string{"exit " + strconv.Itoa(exit)}, all[max(0, len(all)-5):]...)
	}
	h := sha256.Sum256([]byte(verifier + "\n" + strings.Join(parts, "\n")))
	return hex.EncodeToString(h[:8])
}
