package main

import (
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func TestWriteTable(t *testing.T) {
	rs := []result{
		{N: 1, ContainerPSS: 2.5 * (1 << 20), ShimPSS: 2.4 * (1 << 20), MemAvailDrop: 7.2 * (1 << 20), ChoirdRSS: 30 << 20, ChoirdGrowth: 130 << 10,
			Window: 30 * time.Second, ChoirdCPU: 0.001, AgentsCPU: 0.0004, DBCPU: math.NaN(), StartNth: 220 * time.Millisecond,
			Chat1P50: 13500 * time.Microsecond, Chat1P95: 900 * time.Millisecond, ModelP50: 3 * time.Millisecond},
		{N: 100, ContainerPSS: 2.5 * (1 << 20), ShimPSS: 2.4 * (1 << 20), MemAvailDrop: 7.2 * (1 << 20), ChoirdRSS: 43 << 20,
			Window: 30 * time.Second, ChoirdCPU: 0.028, AgentsCPU: 0.004, DBCPU: 0.037, HeartbeatCPU: 1400 * time.Microsecond,
			StartNth: 220 * time.Millisecond, Chat1P50: 800 * time.Millisecond, Chat1P95: 910 * time.Millisecond,
			Chat10P50: 100 * time.Millisecond, Chat10P95: 680 * time.Millisecond, ModelP50: 3 * time.Millisecond},
	}
	var b strings.Builder
	if err := writeTable(&b, rs, "1 agent × 20 in a row", "10 agents × 5 at once"); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "table.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("writeTable =\n%s\nwant (testdata/table.golden; -update rewrites it)\n%s", b.String(), want)
	}
	// Every row has one cell per N, so the markdown renders as a table.
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if n := strings.Count(line, "|"); n != len(rs)+2 {
			t.Errorf("row %q has %d bars; want %d", line, n, len(rs)+2)
		}
	}
}

func TestParseNs(t *testing.T) {
	tests := []struct {
		list string
		big  int
		want []int
		err  string
	}{
		{"1,10,100", 0, []int{1, 10, 100}, ""},
		{"100, 1,10", 1000, []int{1, 10, 100, 1000}, ""},
		{"1,10", 10, []int{1, 10}, ""},
		{"", 5, []int{5}, ""},
		{"1,x", 0, nil, `"x" is not a positive number`},
		{"0", 0, nil, `"0" is not a positive number`},
		{"-3", 0, nil, `"-3" is not a positive number`},
		{"", 0, nil, "name no number of agents"},
		{"1", -2, nil, "-n -2"},
	}
	for _, tt := range tests {
		got, err := parseNs(tt.list, tt.big)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("parseNs(%q, %d) = %v, %v; want an error saying %q", tt.list, tt.big, got, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseNs(%q, %d) = %v, %v; want %v", tt.list, tt.big, got, err, tt.want)
		}
	}
}
