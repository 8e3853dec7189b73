package proc

import (
	"strings"
	"testing"
)

func TestCapture(t *testing.T) {
	alphabet := "abcdefghijklmnopqrstuvwxyz"
	tests := []struct {
		name   string
		limit  int
		writes []string
		want   string
		trunc  bool
	}{
		{"fits", 10, []string{"abc", "def"}, "abcdef", false},
		{"exactly the cap", 10, []string{"abcdefghij"}, "abcdefghij", false},
		{"one write past the cap", 10, []string{alphabet}, "abcde" + Marker(16) + "vwxyz", true},
		{"many small writes", 10, strings.Split(alphabet, ""), "abcde" + Marker(16) + "vwxyz", true},
		{"odd cap", 7, []string{alphabet}, "abc" + Marker(19) + "wxyz", true},
		{"empty", 10, nil, "", false},
	}
	for _, tc := range tests {
		c := NewCapture(tc.limit)
		for _, w := range tc.writes {
			if n, err := c.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("%s: Write = %d, %v", tc.name, n, err)
			}
		}
		out := c.Output()
		if out.Text != tc.want || out.Truncated != tc.trunc || out.Total != int64(len(strings.Join(tc.writes, ""))) {
			t.Errorf("%s: Output() = %+v; want text %q truncated %v", tc.name, out, tc.want, tc.trunc)
		}
	}
}
