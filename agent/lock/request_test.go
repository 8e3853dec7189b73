package lock

import (
	"errors"
	"fmt"
	"testing"
)

func TestCanonical(t *testing.T) {
	tests := []struct {
		in   []Request
		want string
		err  error
	}{
		{nil, "[]", nil},
		{[]Request{{"workspace", X}}, "[workspace:X]", nil},
		{[]Request{{"workspace", X}, {"choirtmp", S}}, "[choirtmp:S workspace:X]", nil},
		{[]Request{{"file:a", S}, {"file:./a", S}}, "[file:a:S]", nil},
		{[]Request{{"file:a", X}, {"file:a/", S}}, "[file:a:X]", nil},
		{[]Request{{"file:a", S}, {"file:a", X}, {"file:a", S}}, "[file:a:X]", nil},
		{[]Request{{"file:a", S}, {"file:/a", S}}, "", ErrInvalidKey},
		{[]Request{{"file:a", 0}}, "", ErrInvalidMode},
		{[]Request{{"file:a", 3}}, "", ErrInvalidMode},
	}
	for _, tt := range tests {
		got, err := canonical(nil, tt.in)
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("canonical(%v) error = %v; want %v", tt.in, err, tt.err)
			}
			continue
		}
		if s := fmt.Sprint(got); s != tt.want || err != nil {
			t.Errorf("canonical(%v) = %s, %v; want %s", tt.in, s, err, tt.want)
		}
	}
}

func TestParseMode(t *testing.T) {
	tests := []struct {
		in   string
		want Mode
	}{{"S", S}, {"X", X}, {"s", 0}, {"", 0}, {"RW", 0}}
	for _, tt := range tests {
		got, err := ParseMode(tt.in)
		if got != tt.want || (err != nil) != (tt.want == 0) {
			t.Errorf("ParseMode(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}
