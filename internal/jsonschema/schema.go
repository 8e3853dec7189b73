// Package jsonschema validates JSON documents against the small subset of
// JSON Schema that choir's tools and skills use.
//
// The subset is: type (one name or a list of them: string, number, integer,
// boolean, object, array, null), properties, required, enum, items,
// additionalProperties (a boolean or a schema), minimum, maximum, minLength
// and maxLength (counted in Unicode code points). The annotations description,
// title and default are accepted and ignored, and a schema may be the boolean
// true (anything) or false (nothing).
//
// Compile refuses every other keyword, and every malformed keyword value,
// naming the keyword and its JSON pointer inside the schema: a tool or skill
// author learns about "pattern" or "oneOf" when choir-agent starts, not when
// the model first calls the tool and the keyword would silently be ignored.
//
// Validate and ValidateValue report every failure at once, each with the JSON
// pointer of the offending value, in a deterministic order:
//
//	/path: required property missing
//	/mode: "x" is not one of ["overwrite","append"]
//	/lines/2: want integer, got string
//
// Numbers are decoded with json.Number and compared as exact decimals, so
// large integers stay exact and 1.0 counts as an integer, as JSON Schema says.
package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Schema is a compiled schema. The zero value and a nil *Schema accept every
// instance. A Schema is immutable and safe for concurrent use.
type Schema struct {
	never      bool // the schema false: nothing validates
	types      typeSet
	properties map[string]*Schema
	required   []string
	enum       []any
	enumText   string // the enum as compact JSON, for messages
	items      *Schema
	additional *Schema // nil: any additional property is allowed

	minimum, maximum *decimal
	minText, maxText string
	minLength        int // -1: unset
	maxLength        int // -1: unset
}

// Failure is one reason a schema or an instance was refused.
type Failure struct {
	// Path is the JSON pointer (RFC 6901) of the offending value: inside the
	// instance for validation, inside the schema for compilation. The
	// document root is "/".
	Path    string
	Message string
}

func (f Failure) String() string { return f.Path + ": " + f.Message }

// SchemaError lists every fault Compile found in a schema.
type SchemaError struct {
	Failures []Failure
}

func (e *SchemaError) Error() string {
	return "invalid JSON schema: " + joinFailures(e.Failures, 0)
}

// ValidationError lists every way an instance fails a schema. When there are
// more than MaxFailures, the first MaxFailures are kept and Omitted counts the
// rest.
type ValidationError struct {
	Failures []Failure
	Omitted  int
}

func (e *ValidationError) Error() string { return joinFailures(e.Failures, e.Omitted) }

// MaxFailures bounds the failures one Validate call collects, so a huge
// malformed instance cannot produce a huge error.
const MaxFailures = 100

func joinFailures(fs []Failure, omitted int) string {
	var b bytes.Buffer
	for i, f := range fs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f.String())
	}
	if omitted > 0 {
		fmt.Fprintf(&b, "; ... and %d more", omitted)
	}
	return b.String()
}

// decode parses one JSON value with json.Number for numbers and refuses
// trailing data.
func decode(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if err == io.EOF {
			return nil, errors.New("empty document")
		}
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

// Compile parses raw as a schema in choir's subset. Every unsupported keyword
// and malformed keyword value is reported in one *SchemaError.
func Compile(raw json.RawMessage) (*Schema, error) {
	v, err := decode(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid JSON schema: %w", err)
	}
	return CompileValue(v)
}

// MustCompile is Compile for schemas written into the program; it panics on
// error.
func MustCompile(raw string) *Schema {
	s, err := Compile(json.RawMessage(raw))
	if err != nil {
		panic(err)
	}
	return s
}

// CompileValue is Compile for a schema already decoded into Go values
// (map[string]any, []any, string, float64 or json.Number, bool, nil).
func CompileValue(v any) (*Schema, error) {
	var c compiler
	s := c.schema(v, nil)
	if len(c.failures) > 0 {
		return nil, &SchemaError{Failures: c.failures}
	}
	return s, nil
}
