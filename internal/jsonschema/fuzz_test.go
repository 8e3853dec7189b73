package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"regexp"
	"strings"
	"testing"
)

// maxFuzzInput caps one fuzz input: tool and skill schemas are small, and
// the cap keeps every execution fast.
const maxFuzzInput = 64 << 10

// checkFailures asserts every failure has a JSON pointer and a message.
func checkFailures(t *testing.T, what string, fs []Failure) {
	t.Helper()
	if len(fs) == 0 {
		t.Fatalf("%s error without failures", what)
	}
	for _, f := range fs {
		if !strings.HasPrefix(f.Path, "/") || strings.TrimSpace(f.Message) == "" {
			t.Fatalf("%s failure %+v: want a JSON pointer and a message", what, f)
		}
	}
}

// FuzzValidate feeds arbitrary schema and instance bytes through Compile and
// Validate and asserts what the package documents:
//
//   - Compile refuses a document that is not one JSON value as invalid JSON,
//     and any other schema it refuses with a *SchemaError whose failures
//     each have a pointer and a message;
//   - a compiled schema compiles the same from its own re-encoding;
//   - Validate refuses an instance that is not one JSON value as invalid
//     JSON, and answers any other with nil or a *ValidationError of at most
//     MaxFailures failures, each with a pointer and a message;
//   - Validate and ValidateValue (on the instance decoded with UseNumber)
//     agree, Validate is deterministic, the schema false refuses everything
//     and a schema without constraints accepts everything.
func FuzzValidate(f *testing.F) {
	f.Add([]byte(writeSchema), []byte(`{"path":"a","content":"b","lines":[1,"x"]}`))
	f.Add([]byte(`{"type":["integer","null"],"minimum":1e999999999}`), []byte(`1e-999999999`))
	f.Add([]byte(`{"enum":[1,{"a":[null]}],"maxLength":2}`), []byte(`{"a":[null]}`))
	f.Add([]byte(`{"items":{"additionalProperties":false,"required":["a~/b"]}}`), []byte(`[{"x":1},{}]`))
	f.Add([]byte(`false`), []byte(`"日本語"`))
	f.Fuzz(func(t *testing.T, schema, instance []byte) {
		if len(schema) > maxFuzzInput || len(instance) > maxFuzzInput {
			return
		}
		s, err := Compile(json.RawMessage(schema))
		if err != nil {
			if s != nil {
				t.Fatalf("Compile(%q) returned a schema with error %v", schema, err)
			}
			var se *SchemaError
			switch {
			case errors.As(err, &se):
				if !json.Valid(schema) {
					t.Fatalf("Compile(%q) = %v; want an invalid-JSON error", schema, err)
				}
				checkFailures(t, "Compile", se.Failures)
			case json.Valid(schema):
				t.Fatalf("Compile(%q) = %v (%T); want a *SchemaError", schema, err, err)
			case !strings.HasPrefix(err.Error(), "invalid JSON schema: "):
				t.Fatalf("Compile(%q) = %v; want it to say the schema is not JSON", schema, err)
			}
			return
		}
		verr := s.Validate(json.RawMessage(instance))
		first := errString(verr)
		if again := errString(s.Validate(json.RawMessage(instance))); again != first {
			t.Fatalf("Validate(%q) = %q then %q; want the same", instance, first, again)
		}
		if !json.Valid(instance) {
			if verr == nil || !strings.HasPrefix(first, "invalid JSON: ") {
				t.Fatalf("Validate(%q) = %v; want an invalid-JSON error", instance, verr)
			}
			return
		}
		if verr != nil {
			var ve *ValidationError
			if !errors.As(verr, &ve) {
				t.Fatalf("Validate(%q) = %v (%T); want a *ValidationError", instance, verr, verr)
			}
			checkFailures(t, "Validate", ve.Failures)
			if len(ve.Failures) > MaxFailures || ve.Omitted < 0 || ve.Omitted > 0 && len(ve.Failures) != MaxFailures {
				t.Fatalf("Validate kept %d failures and omitted %d; want at most %d kept", len(ve.Failures), ve.Omitted, MaxFailures)
			}
		}
		v, err := decode(instance)
		if err != nil {
			t.Fatalf("decode(%q) = %v; json.Valid accepts it", instance, err)
		}
		if byValue := errString(s.ValidateValue(v)); byValue != first {
			t.Fatalf("ValidateValue = %q; Validate = %q", byValue, first)
		}
		switch {
		case s.never && verr == nil:
			t.Fatalf("the schema false accepted %q", instance)
		case !s.never && s.isTrivial() && verr != nil:
			t.Fatalf("the unconstraining schema %q refused %q: %v", schema, instance, verr)
		}
		tree, _ := decode(schema)
		re, err := json.Marshal(tree)
		if err != nil {
			t.Fatalf("Marshal(decoded schema) = %v", err)
		}
		s2, err := Compile(re)
		if err != nil {
			t.Fatalf("Compile(%s), the re-encoding of a schema Compile accepts, = %v", re, err)
		}
		if got := errString(s2.Validate(json.RawMessage(instance))); got != first {
			t.Fatalf("the re-encoded schema validates %q as %q; the original as %q", instance, got, first)
		}
	})
}

// jsonNumber is the grammar of a JSON number (RFC 8259 §6).
var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// smallExponent reports whether s's exponent, if any, is small enough for
// big.Rat to expand it cheaply.
func smallExponent(s string) bool {
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return true
	}
	e := strings.TrimLeft(s[i+1:], "+-")
	e = strings.TrimLeft(e, "0")
	return len(e) <= 3
}

// FuzzDecimal checks the exact decimals that minimum, maximum, enum and
// "1.0 is an integer" rest on against math/big: parseDecimal accepts exactly
// the JSON number grammar, and compareDecimal, isInteger and int64 agree
// with big.Rat wherever big.Rat can afford the number. Huge exponents are
// only checked for antisymmetry and for agreeing with their sign.
func FuzzDecimal(f *testing.F) {
	f.Fuzz(func(t *testing.T, a, b string) {
		if len(a) > 256 || len(b) > 256 {
			return
		}
		da, oka := parseDecimal(a)
		db, okb := parseDecimal(b)
		if oka != jsonNumber.MatchString(a) || okb != jsonNumber.MatchString(b) {
			t.Fatalf("parseDecimal(%q) ok = %v, parseDecimal(%q) ok = %v; the JSON grammar says %v, %v",
				a, oka, b, okb, jsonNumber.MatchString(a), jsonNumber.MatchString(b))
		}
		if !oka || !okb {
			return
		}
		c := compareDecimal(da, db)
		if back := compareDecimal(db, da); back != -c {
			t.Fatalf("compare(%s, %s) = %d but compare(%s, %s) = %d", a, b, c, b, a, back)
		}
		if compareDecimal(da, da) != 0 {
			t.Fatalf("compare(%s, %s) != 0", a, a)
		}
		if !smallExponent(a) || !smallExponent(b) {
			return
		}
		ra, ok1 := new(big.Rat).SetString(a)
		rb, ok2 := new(big.Rat).SetString(b)
		if !ok1 || !ok2 {
			t.Fatalf("big.Rat refuses %q or %q", a, b)
		}
		if want := ra.Cmp(rb); c != want {
			t.Fatalf("compareDecimal(%s, %s) = %d; big.Rat says %d", a, b, c, want)
		}
		if da.isInteger() != ra.IsInt() {
			t.Fatalf("isInteger(%s) = %v; big.Rat says %v", a, da.isInteger(), ra.IsInt())
		}
		n, ok := da.int64()
		if want := ra.Num(); ra.IsInt() && want.IsInt64() && len(strings.TrimLeft(want.String(), "-")) <= 18 {
			if !ok || n != want.Int64() {
				t.Fatalf("int64(%s) = %d, %v; want %d", a, n, ok, want.Int64())
			}
		} else if ok && (!ra.IsInt() || !want.IsInt64() || n != want.Int64()) {
			t.Fatalf("int64(%s) = %d, true; big.Rat says %s", a, n, ra.RatString())
		}
		var buf bytes.Buffer
		buf.WriteString(a)
		if !json.Valid(buf.Bytes()) {
			t.Fatalf("parseDecimal accepted %q, which encoding/json refuses", a)
		}
	})
}
