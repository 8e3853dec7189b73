package jsonschema

import "testing"

func TestParseDecimal(t *testing.T) {
	tests := []struct {
		in      string
		want    decimal
		integer bool
	}{
		{"0", decimal{}, true},
		{"-0.0e5", decimal{}, true},
		{"1", decimal{digits: "1"}, true},
		{"1.0", decimal{digits: "1"}, true},
		{"100", decimal{digits: "1", exp: 2}, true},
		{"-12.50", decimal{neg: true, digits: "125", exp: -1}, false},
		{"1.5e1", decimal{digits: "15"}, true},
		{"25E-2", decimal{digits: "25", exp: -2}, false},
		{"0.001", decimal{digits: "1", exp: -3}, false},
		{"1e99999999999999999999", decimal{digits: "1", exp: expLimit}, true},
	}
	for _, tt := range tests {
		got, ok := parseDecimal(tt.in)
		if !ok || got != tt.want {
			t.Errorf("parseDecimal(%q) = %+v, %v; want %+v, true", tt.in, got, ok, tt.want)
		}
		if got.isInteger() != tt.integer {
			t.Errorf("parseDecimal(%q).isInteger() = %v; want %v", tt.in, got.isInteger(), tt.integer)
		}
	}
	for _, bad := range []string{"", "-", "01", "1.", ".5", "1e", "1e+", "+1", "0x10", "1 ", "NaN"} {
		if got, ok := parseDecimal(bad); ok {
			t.Errorf("parseDecimal(%q) = %+v, true; want false", bad, got)
		}
	}
}

func TestCompareDecimal(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"0", "-0", 0},
		{"1", "1.0", 0},
		{"1", "2", -1},
		{"-1", "-2", 1},
		{"-1", "0", -1},
		{"0.1", "0.09", 1},
		{"1.2", "1.23", -1},
		{"1e3", "999.999", 1},
		{"9007199254740993", "9007199254740992", 1},
		{"-1e-5", "-1e-6", -1},
		{"123", "12.3e1", 0},
	}
	for _, tt := range tests {
		a, _ := parseDecimal(tt.a)
		b, _ := parseDecimal(tt.b)
		if got := compareDecimal(a, b); got != tt.want {
			t.Errorf("compareDecimal(%s, %s) = %d; want %d", tt.a, tt.b, got, tt.want)
		}
		if got := compareDecimal(b, a); got != -tt.want {
			t.Errorf("compareDecimal(%s, %s) = %d; want %d", tt.b, tt.a, got, -tt.want)
		}
	}
}
