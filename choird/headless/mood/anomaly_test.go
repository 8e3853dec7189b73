package mood

import (
	"slices"
	"testing"
)

func failed(id, sig string) RunRecord {
	return RunRecord{ID: id, Mood: Calm, Failure: sig, StateBefore: "s1", StateAfter: "s1"}
}

func kinds(as []Anomaly) []AnomalyKind {
	var out []AnomalyKind
	for _, a := range as {
		out = append(out, a.Kind)
	}
	return out
}

func TestDetect(t *testing.T) {
	progress := RunRecord{ID: "r-ok", Mood: Calm, StateBefore: "s1", StateAfter: "s2", Patch: "p", Committed: true}
	for _, c := range []struct {
		name    string
		history []RunRecord
		want    []AnomalyKind
		runs    []string // the evidence runs of the first anomaly
	}{
		{"empty", nil, nil, nil},
		{"one failure", []RunRecord{failed("r-1", "sig-a")}, []AnomalyKind{}, nil},
		{"two same failures, no state change twice", []RunRecord{failed("r-1", "sig-a"), failed("r-2", "sig-a")}, []AnomalyKind{}, nil},
		{"three same failures", []RunRecord{failed("r-1", "sig-a"), failed("r-2", "sig-a"), failed("r-3", "sig-a")},
			[]AnomalyKind{RepeatedFailure, NoStateChange}, []string{"r-1", "r-2", "r-3"}},
		{"a different signature breaks the streak", []RunRecord{failed("r-1", "sig-a"), failed("r-2", "sig-b"), failed("r-3", "sig-a"), failed("r-4", "sig-a")},
			[]AnomalyKind{NoStateChange}, []string{"r-1", "r-2", "r-3", "r-4"}},
		{"a success resets", []RunRecord{failed("r-1", "sig-a"), failed("r-2", "sig-a"), progress, failed("r-3", "sig-a"), failed("r-4", "sig-a")},
			[]AnomalyKind{}, nil},
		{"an old streak is not reported again", []RunRecord{failed("r-1", "sig-a"), failed("r-2", "sig-a"), failed("r-3", "sig-a"), progress},
			[]AnomalyKind{}, nil},
		{"no state change without failures", []RunRecord{{ID: "r-1", StateBefore: "x", StateAfter: "x"}, {ID: "r-2", StateBefore: "x", StateAfter: "x"}, {ID: "r-3", StateBefore: "x", StateAfter: "x"}},
			[]AnomalyKind{NoStateChange}, []string{"r-1", "r-2", "r-3"}},
		{"a patch is progress", []RunRecord{{ID: "r-1"}, {ID: "r-2"}, {ID: "r-3", Patch: "sha256:ab"}}, []AnomalyKind{}, nil},
		{"unexpected network", []RunRecord{{ID: "r-1", Mood: Calm, StateBefore: "a", StateAfter: "b", NetworkAttempts: []string{"1.2.3.4:443", "1.2.3.4:443"}}},
			[]AnomalyKind{UnexpectedNetwork}, []string{"r-1"}},
		{"budget without progress", []RunRecord{{ID: "r-1", Exhausted: "tokens"}}, []AnomalyKind{BudgetExhausted}, []string{"r-1"}},
		{"budget with progress is fine", []RunRecord{{ID: "r-1", Exhausted: "tokens", StateBefore: "a", StateAfter: "b"}}, []AnomalyKind{}, nil},
	} {
		got := Detect(c.history, Thresholds{})
		if !slices.Equal(kinds(got), c.want) && (len(got) != 0 || len(c.want) != 0) {
			t.Errorf("%s: Detect = %v; want %v", c.name, kinds(got), c.want)
			continue
		}
		if len(got) > 0 {
			if !slices.Equal(got[0].Runs, c.runs) || got[0].Run != c.history[len(c.history)-1].ID || got[0].Detail == "" {
				t.Errorf("%s: Detect()[0] = %+v; want runs %v", c.name, got[0], c.runs)
			}
		}
	}
}

func TestDetectFeedsDecide(t *testing.T) {
	h := []RunRecord{failed("r-1", "sig-a"), failed("r-2", "sig-a"), failed("r-3", "sig-a")}
	tr, ok := Decide(Facts{Current: Calm, Anomalies: Detect(h, Thresholds{})}, Thresholds{})
	if !ok || tr.To != Curious || tr.Guard != GuardRepeatedFailure || !slices.Contains(tr.Evidence, "signature sig-a") {
		t.Errorf("three identical failures: Decide = %+v, %t; want CURIOUS by repeated_failure_signature", tr, ok)
	}
	h = []RunRecord{{ID: "r-1", NetworkAttempts: []string{"example.org:80"}, StateBefore: "a", StateAfter: "b"}}
	tr, ok = Decide(Facts{Current: Calm, Anomalies: Detect(h, Thresholds{})}, Thresholds{})
	if !ok || tr.To != Paranoid {
		t.Errorf("network attempt: Decide = %+v, %t; want PARANOID", tr, ok)
	}
}

func TestSignature(t *testing.T) {
	a := Signature("go-test", []string{
		"--- FAIL: TestParse (0.01s)",
		"    parse_test.go:42: Parse(\"x\") = <nil>; want an error",
		"panic at 0xc000123456 in goroutine 17",
		"\x1b[31mwrote /tmp/go-build12345/out.txt at 2026-11-25T14:03:05Z\x1b[0m",
	})
	same := []struct {
		name  string
		lines []string
	}{
		{"other durations, addresses, goroutines, temp dirs, times, order, blanks", []string{
			"wrote /tmp/go-build999/out.txt at 2026-11-26T01:00:00.123+01:00",
			"",
			"panic at 0xc000abcdef in goroutine 3",
			"  --- FAIL: TestParse   (1.5s)  ",
			"    parse_test.go:42: Parse(\"x\") = <nil>; want an error",
			"    parse_test.go:42: Parse(\"x\") = <nil>; want an error",
		}},
	}
	for _, c := range same {
		if got := Signature("go-test", c.lines); got != a {
			t.Errorf("%s: Signature = %s; want %s (the same failure)", c.name, got, a)
		}
	}
	differ := []struct {
		name     string
		verifier string
		lines    []string
	}{
		{"another line number", "go-test", []string{"--- FAIL: TestParse (0.01s)", "    parse_test.go:43: Parse(\"x\") = <nil>; want an error", "panic at 0x1 in goroutine 1", "wrote /tmp/a/out.txt at 2026-11-25T14:03:05Z"}},
		{"another verifier", "go-vet", []string{"--- FAIL: TestParse (0.01s)", "    parse_test.go:42: Parse(\"x\") = <nil>; want an error", "panic at 0xc000123456 in goroutine 17", "wrote /tmp/go-build12345/out.txt at 2026-11-25T14:03:05Z"}},
		{"a line fewer", "go-test", []string{"--- FAIL: TestParse (0.01s)"}},
	}
	for _, c := range differ {
		if got := Signature(c.verifier, c.lines); got == a {
			t.Errorf("%s: Signature = %s; want another signature", c.name, got)
		}
	}
	if len(a) != len("sig-")+32 {
		t.Errorf("Signature = %q; want sig- and 32 hex digits", a)
	}
}
