package arbiter

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// reference is Canonical's definition: decode with UseNumber, re-encode.
func reference(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the value")
	}
	return json.Marshal(v)
}

var canonicalCases = []string{
	`{}`, `[]`, `""`, `0`, `-1.50e+3`, `true`, `null`,
	` { "b" : 1 , "a" : [ 1 , { "d" : null , "c" : "x" } ] } `,
	`{"a":{"z":1,"y":2},"A":3,"é":4,"e":5,"":6}`,
	`{"s":"<tag> & \u0026 \u00e9 é \/ \n \t \u0001 \u2028 \ud83d\ude00 😀"}`,
	`{"k\u0041":1,"kB":2}`,
	`["\u007f", "\"quoted\"", "back\\slash"]`,
	`[1.0, 1e2, 100, -0, 0.000001]`,
	"{\"bad\":\"\xff\xfe\"}",
}

func TestCanonicalMatchesReference(t *testing.T) {
	for _, c := range canonicalCases {
		want, err := reference([]byte(c))
		if err != nil {
			t.Fatalf("reference(%s) = %v", c, err)
		}
		got, err := Canonical([]byte(c))
		if err != nil || string(got) != string(want) {
			t.Errorf("Canonical(%s) = %s, %v; want %s", c, got, err, want)
		}
		again, _ := Canonical(got)
		if string(again) != string(got) {
			t.Errorf("Canonical is not idempotent on %s: %s", got, again)
		}
	}
}

func TestCanonicalRefuses(t *testing.T) {
	for _, c := range []string{``, `{`, `{"a":1}x`, `{"a":1,"a":2}`, `{"b":1,"a":2,"b":3}`, `nul`, `[1,]`} {
		if got, err := Canonical([]byte(c)); err == nil {
			t.Errorf("Canonical(%q) = %s; want an error", c, got)
		}
	}
}

func FuzzCanonical(f *testing.F) {
	for _, c := range canonicalCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Canonical(data)
		want, rerr := reference(data)
		if err != nil {
			if rerr == nil && !bytes.Contains(data, []byte(`"`)) {
				t.Errorf("Canonical(%q) = %v; the reference accepts it", data, err)
			}
			return
		}
		if rerr != nil {
			t.Fatalf("Canonical(%q) = %s; the reference refuses it: %v", data, got, rerr)
		}
		if string(got) != string(want) {
			t.Errorf("Canonical(%q) = %s; want %s", data, got, want)
		}
	})
}
