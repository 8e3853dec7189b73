package chain

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"strings"
	"testing"
)

// reference is Canonical's definition, built another way: decode with
// UseNumber, write each number as Postgres' numeric prints it (through
// math/big), map U+0000 to U+FFFD, re-encode.
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
	v, err := normalise(v)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func normalise(v any) (any, error) {
	switch v := v.(type) {
	case json.Number:
		return numeric(string(v))
	case string:
		return strings.ReplaceAll(v, "\x00", "\uFFFD"), nil
	case []any:
		for i := range v {
			var err error
			if v[i], err = normalise(v[i]); err != nil {
				return nil, err
			}
		}
		return v, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			x, err := normalise(x)
			if err != nil {
				return nil, err
			}
			k = strings.ReplaceAll(k, "\x00", "\uFFFD")
			if _, dup := out[k]; dup {
				return nil, errors.New("two members map to one name")
			}
			out[k] = x
		}
		return out, nil
	}
	return v, nil
}

// numeric writes a JSON number as Postgres prints the numeric it parses
// to: its exact value with max(0, fraction digits − exponent) digits after
// the point.
func numeric(s string) (json.Number, error) {
	mant, exp := strings.ToLower(s), "0"
	if i := strings.IndexByte(mant, 'e'); i >= 0 {
		mant, exp = mant[:i], mant[i+1:]
	}
	frac := 0
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		frac = len(mant) - i - 1
	}
	e, ok := new(big.Int).SetString(strings.TrimPrefix(exp, "+"), 10)
	if !ok || !e.IsInt64() || e.Int64() < -1<<31 || e.Int64() >= 1<<31 {
		return "", errors.New("exponent out of range")
	}
	scale := max(0, int64(frac)-e.Int64())
	if scale > MaxNumberDigits {
		return "", errors.New("too many digits")
	}
	zero := strings.Trim(mant, "-+0.") == ""
	if zero {
		if 1+scale > MaxNumberDigits { // "0." and scale zeros
			return "", errors.New("too many digits")
		}
		return json.Number(new(big.Rat).FloatString(int(scale))), nil
	}
	if e.Int64() > 2*MaxNumberDigits {
		return "", errors.New("too many digits") // and too big to build
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return "", errors.New("not a number")
	}
	out := r.FloatString(int(scale))
	if n := len(strings.TrimPrefix(strings.Replace(out, ".", "", 1), "-")); n > MaxNumberDigits {
		return "", errors.New("too many digits")
	}
	return json.Number(out), nil
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
	`["nul\u0000", "\ud800 alone"]`,
	`{"\u0000":1,"a":2}`,
	`[1E5, 1.5E1, 1.50E1, 1e-2, -0, -0.0, 0e10, 0.00e1, 1E+2, 12345678901234567890, 1.0, -1.5e-3, 1e20, 2.5e-1]`,
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

// TestCanonicalNumbersAsJSONB: numbers come out as Postgres 17 (PGlite)
// printed them from jsonb, so an event read back from the store hashes
// the same (choird/store's tests check it against a real server).
func TestCanonicalNumbersAsJSONB(t *testing.T) {
	in := `[1E5, 1.5E1, 1.50E1, 1e-2, -0, -0.0, 0e10, 0.00e1, 1E+2, 12345678901234567890, 1.0, -1.5e-3, 1e20, 2.5e-1]`
	// psql: select '<in>'::jsonb
	jsonb := `[100000,15,15.0,0.01,0,0.0,0,0.0,100,12345678901234567890,1.0,-0.0015,100000000000000000000,0.25]`
	got, err := Canonical([]byte(in))
	if err != nil || string(got) != jsonb {
		t.Errorf("Canonical(%s) = %s, %v; want %s", in, got, err, jsonb)
	}
}

func TestCanonicalRefuses(t *testing.T) {
	for _, c := range []string{``, `{`, `{"a":1}x`, `{"a":1,"a":2}`, `{"b":1,"a":2,"b":3}`, `nul`, `[1,]`,
		`{"a\u0000":1,"a\ufffd":2}`, // one name once NUL is mapped
		`1e1000`, `1e-1000`, `0e-5000`, `1e99999999999`, `[` + strings.Repeat("9", MaxNumberDigits+1) + `]`,
	} {
		if got, err := Canonical([]byte(c)); err == nil {
			t.Errorf("Canonical(%.60q) = %.60s; want an error", c, got)
		}
	}
	if _, err := Canonical([]byte(`[1e998, ` + strings.Repeat("9", MaxNumberDigits) + `]`)); err != nil {
		t.Errorf("Canonical(numbers of %d digits) = %v; want them kept", MaxNumberDigits, err)
	}
}

func FuzzCanonical(f *testing.F) {
	for _, c := range canonicalCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}
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
		if again, err := Canonical(got); err != nil || !bytes.Equal(again, got) {
			t.Errorf("Canonical(Canonical(%q)) = %s, %v; want it unchanged", data, again, err)
		}
	})
}
