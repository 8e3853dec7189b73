package verify

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestCaptureKeepsHeadAndTail(t *testing.T) {
	for _, tc := range []struct {
		name   string
		max    int64
		chunks []string
		want   string
	}{
		{"fits", 10, []string{"abc", "def"}, "abcdef"},
		{"exactly", 10, []string{"0123456789"}, "0123456789"},
		{"one chunk over", 10, []string{"0123456789AB"}, "01234\n[choir: 2 bytes of output omitted]\n789AB"},
		{"many small", 6, []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}, "abc\n[choir: 3 bytes of output omitted]\nghi"},
		{"wrapping tail", 4, []string{"xy", "123", "45", "6789"}, "xy\n[choir: 7 bytes of output omitted]\n89"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCapture(tc.max)
			var total int
			for _, s := range tc.chunks {
				c.Write([]byte(s))
				total += len(s)
			}
			if got := string(c.Bytes()); got != tc.want {
				t.Errorf("Bytes() = %q; want %q", got, tc.want)
			}
			if c.written() != int64(total) {
				t.Errorf("written() = %d; want %d", c.written(), total)
			}
		})
	}
}

func TestSummaries(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      *Summary
	}{
		{"go test ok", "ok  \tchoir/calc\t0.012s\nok  \tchoir/other\t(cached)\n", &Summary{Format: "go test", PackagesOK: 2}},
		{"go test fail", "--- FAIL: TestAdd (0.00s)\n    calc_test.go:9: Add(1, 2) = -1; want 3\n--- PASS: TestSub (0.00s)\n--- SKIP: TestMul (0.00s)\nFAIL\nFAIL\tchoir/calc\t0.010s\nok  \tchoir/x\t0.1s\n",
			&Summary{Format: "go test", Passed: 1, Failed: 1, Skipped: 1, PackagesOK: 1, PackagesFailed: 1}},
		{"pytest", "...F\n=== 3 passed, 1 failed, 2 skipped in 0.12s ===\n", &Summary{Format: "counts", Passed: 3, Failed: 1, Skipped: 2}},
		{"plain", "12 passed, 0 failed\n", &Summary{Format: "counts", Passed: 12}},
		{"unknown", "all good\n", nil},
		{"empty", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := summarize([]byte(tc.out))
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("summarize = %+v; want %+v", got, tc.want)
			}
		})
	}
}

func TestSignatureIgnoresWhatChangesBetweenRuns(t *testing.T) {
	run := func(d time.Duration, addr, tmp string) []byte {
		return []byte(fmt.Sprintf("=== RUN TestAdd\n--- FAIL: TestAdd (%.2fs)\n    calc_test.go:9: Add(1, 2) = -1; want 3\npanic: boom [recovered] at %s goroutine %d\n\topen %s/x: no such file\nFAIL\nFAIL\tchoir/calc\t%.3fs\n",
			d.Seconds(), addr, d.Microseconds(), tmp, d.Seconds()))
	}
	a := signature("go-test", run(10*time.Millisecond, "0xc000012345", "/tmp/go-build123"), 1, false)
	b := signature("go-test", run(2*time.Second, "0xc0000abcde", "/tmp/go-build987"), 1, false)
	if a != b || !strings.HasPrefix(a, "sig-") {
		t.Errorf("the same failure gave signatures %s and %s", a, b)
	}
	other := signature("go-test", []byte("--- FAIL: TestSub (0.00s)\n    calc_test.go:19: Sub(3, 1) = 4; want 2\nFAIL\n"), 1, false)
	if other == a {
		t.Error("a different failure gave the same signature")
	}
	if signature("lint", run(time.Second, "0x1", "/tmp/a"), 1, false) == a {
		t.Error("the same lines from another verifier gave the same signature")
	}
	// No recognisable failing line: the last lines and the exit status.
	x := signature("build", []byte("compiling\nstep 3\n"), 2, false)
	if x == signature("build", []byte("compiling\nstep 3\n"), 3, false) {
		t.Error("different exit statuses with no failing line gave the same signature")
	}
	if signature("slow", []byte("a"), -1, true) != signature("slow", []byte("b"), -1, true) {
		t.Error("two timeouts of the same verifier gave different signatures")
	}
}

func TestVerifierCheck(t *testing.T) {
	ok := Verifier{Name: "go-test", Command: []string{"go", "test", "./..."}, Timeout: time.Minute}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []Verifier{
		{Name: "", Command: ok.Command, Timeout: time.Minute},
		{Name: "../x", Command: ok.Command, Timeout: time.Minute},
		{Name: "Go Test", Command: ok.Command, Timeout: time.Minute},
		{Name: strings.Repeat("a", 65), Command: ok.Command, Timeout: time.Minute},
		{Name: "x", Command: nil, Timeout: time.Minute},
		{Name: "x", Command: []string{""}, Timeout: time.Minute},
		{Name: "x", Command: []string{"sh", "-c", "a\x00b"}, Timeout: time.Minute},
		{Name: "x", Command: ok.Command, Timeout: 0},
		{Name: "x", Command: ok.Command, Timeout: -time.Second},
		{Name: "x", Command: ok.Command, Timeout: 3 * time.Hour},
	} {
		if err := v.Check(); err == nil {
			t.Errorf("Check(%+v) = nil; want an error", v)
		}
	}
}

func TestBrief(t *testing.T) {
	for _, tc := range []struct {
		r    Report
		want string
	}{
		{Report{Passed: true, DurationMS: 1200, Summary: &Summary{Format: "go test", Passed: 3, PackagesOK: 1}}, "passed in 1.2s; go test: 3 passed, 0 failed, 0 skipped (packages: 1 ok, 0 failed)"},
		{Report{ExitCode: 2, DurationMS: 50}, "failed (exit 2) in 0.1s"},
		{Report{TimedOut: true, ExitCode: -1, DurationMS: 60000}, "timed out after 60.0s"},
	} {
		if got := tc.r.Brief(); got != tc.want {
			t.Errorf("Brief() = %q; want %q", got, tc.want)
		}
	}
}

func TestVerifierJSON(t *testing.T) {
	var v Verifier
	if err := json.Unmarshal([]byte(`{"name":"go-test","command":["go","test","./..."],"timeout_s":600}`), &v); err != nil {
		t.Fatal(err)
	}
	if v.Name != "go-test" || len(v.Command) != 3 || v.Timeout != 10*time.Minute || v.Check() != nil {
		t.Errorf("decoded %+v", v)
	}
	b, _ := json.Marshal(v)
	if string(b) != `{"name":"go-test","command":["go","test","./..."],"timeout_s":600}` {
		t.Errorf("encoded %s", b)
	}
	for _, bad := range []string{
		`{"name":"x","command":["true"],"timeout":600}`,
		`{"name":"x","command":["true"],"timeout_s":-1}`,
		`{"name":"x","command":["true"],"timeout_s":99999999999}`,
		`{"name":"x","command":"true","timeout_s":1}`,
	} {
		if err := json.Unmarshal([]byte(bad), &v); err == nil {
			t.Errorf("Unmarshal(%s) succeeded", bad)
		}
	}
}
