package hostbench

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var ds []time.Duration
		for _, n := range ns {
			ds = append(ds, time.Duration(n)*time.Millisecond)
		}
		return ds
	}
	twenty := ms(20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)
	tests := []struct {
		name string
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{"none", nil, 50, 0},
		{"one", ms(7), 95, 7 * time.Millisecond},
		{"p50 of 20 is the 10th", twenty, 50, 10 * time.Millisecond},
		{"p95 of 20 is the 19th", twenty, 95, 19 * time.Millisecond},
		{"p100 is the largest", twenty, 100, 20 * time.Millisecond},
		{"p50 of 50 is the 25th", ms(seq(50)...), 50, 25 * time.Millisecond},
		{"p95 of 50 is the 48th", ms(seq(50)...), 95, 48 * time.Millisecond},
		{"a tiny p is the smallest", ms(3, 1, 2), 0.1, 1 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]time.Duration(nil), tt.ds...)
			if got := Percentile(tt.ds, tt.p); got != tt.want {
				t.Errorf("Percentile(%v, %v) = %v; want %v", tt.ds, tt.p, got, tt.want)
			}
			if !reflect.DeepEqual(in, tt.ds) {
				t.Errorf("Percentile reordered its input")
			}
		})
	}
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = n - i
	}
	return s
}

func TestPercentileOfLatencies(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var ds []time.Duration
		for _, n := range ns {
			ds = append(ds, time.Duration(n)*time.Millisecond)
		}
		return ds
	}
	tests := []struct {
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{nil, 50, 0},
		{ms(7), 99, 7 * time.Millisecond},
		{ms(5, 1, 4, 2, 3), 50, 3 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 50, 5 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0, time.Millisecond},
	}
	for _, tt := range tests {
		if got := Percentile(tt.ds, tt.p); got != tt.want {
			t.Errorf("Percentile(%v, %v) = %v; want %v", tt.ds, tt.p, got, tt.want)
		}
	}
}

func TestWriteTable(t *testing.T) {
	type res struct{ n, v int }
	rows := []Row[res]{{"v", func(r res) string { return strings.Repeat("x", r.v) }}}
	var b strings.Builder
	WriteTable(&b, []res{{1, 1}, {10, 2}}, func(r res) int { return r.n }, rows)
	want := "| | N=1 | N=10 |\n|---|---:|---:|\n| v | x | xx |\n"
	if b.String() != want {
		t.Errorf("WriteTable =\n%s\nwant\n%s", b.String(), want)
	}
}

func TestParseCounts(t *testing.T) {
	tests := []struct {
		list string
		want []int
	}{
		{"10000, 1000,1_000,", []int{1000, 10000}},
		{"100, 1,10", []int{1, 10, 100}},
		{"", nil},
	}
	for _, tt := range tests {
		if got, err := ParseCounts("-n", tt.list); err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseCounts(-n, %q) = %v, %v; want %v", tt.list, got, err, tt.want)
		}
	}
	for _, bad := range []string{"0", "-5", "ten", "1,x"} {
		if _, err := ParseCounts("-n", bad); err == nil || !strings.Contains(err.Error(), "is not a positive number") {
			t.Errorf("ParseCounts(-n, %q) = %v; want an error saying it is not a positive number", bad, err)
		}
	}
}

func TestParsePostgres(t *testing.T) {
	tests := []struct {
		url  string
		want Postgres
	}{
		{"postgres://u:pw@db.local:6543/choir?sslmode=disable", Postgres{"db.local", 6543, "choir", "disable", "u", "pw"}},
		{"postgres://127.0.0.1", Postgres{"127.0.0.1", 5432, "postgres", "prefer", "postgres", ""}},
	}
	for _, tt := range tests {
		if got, err := ParsePostgres(tt.url); err != nil || got != tt.want {
			t.Errorf("ParsePostgres(%q) = %+v, %v; want %+v", tt.url, got, err, tt.want)
		}
	}
	if _, err := ParsePostgres("not a url"); err == nil {
		t.Error("ParsePostgres(not a url) = nil error; want one")
	}
}

func TestTelegram(t *testing.T) {
	f := &Telegram{done: make(chan struct{})}
	srv := httptest.NewServer(f)
	defer srv.Close()
	call := func(method, body string) map[string]any {
		t.Helper()
		resp, err := http.Post(srv.URL+"/bot7001:tok/"+method, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		return out
	}
	if me := call("getMe", `{}`)["result"].(map[string]any); me["id"] != float64(7001) {
		t.Errorf("getMe = %v; want id 7001", me)
	}
	msg := call("sendMessage", `{"chat_id":700001,"text":"hi"}`)["result"].(map[string]any)
	if msg["text"] != "hi" || msg["chat"].(map[string]any)["id"] != float64(700001) {
		t.Errorf("sendMessage = %v; want the text and chat back", msg)
	}
	f.Close()
	if got := call("getUpdates", `{"timeout":30}`)["result"]; !reflect.DeepEqual(got, []any{}) {
		t.Errorf("getUpdates after Close = %v; want [] at once", got)
	}
	if f.Sent() != 1 {
		t.Errorf("Sent() = %d; want 1", f.Sent())
	}
}
