package jsonschema

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestCompileRefuses(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   string
	}{
		{"unsupported keyword", `{"type":"string","pattern":"^a"}`,
			`invalid JSON schema: /pattern: unsupported keyword "pattern" (choir supports ` + supported + `)`},
		{"unsupported nested keyword", `{"properties":{"a":{"oneOf":[]}}}`,
			`invalid JSON schema: /properties/a/oneOf: unsupported keyword "oneOf" (choir supports ` + supported + `)`},
		{"unknown type", `{"type":"str"}`,
			`invalid JSON schema: /type: unknown type "str" (want one of string, number, integer, boolean, object, array, null)`},
		{"type not string", `{"type":3}`, `invalid JSON schema: /type: "type" must be a string or an array of strings, got number`},
		{"type list empty", `{"type":[]}`, `invalid JSON schema: /type: "type" must name at least one type`},
		{"type list duplicate", `{"type":["null","null"]}`, `invalid JSON schema: /type/1: type "null" is listed twice`},
		{"type list entry", `{"type":["string",1]}`, `invalid JSON schema: /type/1: "type" entries must be strings, got number`},
		{"properties not object", `{"properties":[]}`, `invalid JSON schema: /properties: "properties" must be an object, got array`},
		{"property not schema", `{"properties":{"a/b":"string"}}`, `invalid JSON schema: /properties/a~1b: a schema must be an object or a boolean, got string`},
		{"required not array", `{"required":"a"}`, `invalid JSON schema: /required: "required" must be an array of strings, got string`},
		{"required duplicate", `{"required":["a","a"]}`, `invalid JSON schema: /required/1: property "a" is required twice`},
		{"enum not array", `{"enum":"a"}`, `invalid JSON schema: /enum: "enum" must be an array, got string`},
		{"enum empty", `{"enum":[]}`, `invalid JSON schema: /enum: "enum" must list at least one value`},
		{"items tuple", `{"items":[{}]}`, `invalid JSON schema: /items: "items" as an array (tuple validation) is not supported; give one schema for every item`},
		{"additionalProperties not schema", `{"additionalProperties":1}`, `invalid JSON schema: /additionalProperties: a schema must be an object or a boolean, got number`},
		{"minimum not number", `{"minimum":"1"}`, `invalid JSON schema: /minimum: "minimum" must be a number, got string`},
		{"minimum above maximum", `{"minimum":2,"maximum":1.5}`, `invalid JSON schema: /maximum: maximum 1.5 is less than minimum 2`},
		{"minLength negative", `{"minLength":-1}`, `invalid JSON schema: /minLength: "minLength" must be a non-negative integer, got -1`},
		{"maxLength fraction", `{"maxLength":1.5}`, `invalid JSON schema: /maxLength: "maxLength" must be a non-negative integer, got 1.5`},
		{"maxLength huge", `{"maxLength":1e30}`, `invalid JSON schema: /maxLength: "maxLength" is too large: 1e30`},
		{"minLength above maxLength", `{"minLength":3,"maxLength":2}`, `invalid JSON schema: /maxLength: maxLength 2 is less than minLength 3`},
		{"description not string", `{"description":1}`, `invalid JSON schema: /description: "description" must be a string, got number`},
		{"root not schema", `"string"`, `invalid JSON schema: /: a schema must be an object or a boolean, got string`},
		{"invalid JSON", `{"type":`, `invalid JSON schema: unexpected EOF`},
		{"trailing data", `{} {}`, `invalid JSON schema: unexpected data after the JSON value`},
		{"all faults at once, sorted", `{"minimum":"x","$ref":"#","items":{"format":"uri"}}`,
			`invalid JSON schema: /$ref: unsupported keyword "$ref" (choir supports ` + supported + `); ` +
				`/items/format: unsupported keyword "format" (choir supports ` + supported + `); ` +
				`/minimum: "minimum" must be a number, got string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Compile(json.RawMessage(tt.schema))
			if got := errString(err); got != tt.want {
				t.Errorf("Compile(%s) = %q; want %q", tt.schema, got, tt.want)
			}
			if s != nil {
				t.Errorf("Compile(%s) returned a schema with its error", tt.schema)
			}
		})
	}
}

func TestCompileErrorFailures(t *testing.T) {
	_, err := Compile(json.RawMessage(`{"properties":{"a":{"type":"x"}},"not":{}}`))
	var se *SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("Compile(...) = %v; want *SchemaError", err)
	}
	want := []Failure{
		{Path: "/not", Message: `unsupported keyword "not" (choir supports ` + supported + `)`},
		{Path: "/properties/a/type", Message: `unknown type "x" (want one of string, number, integer, boolean, object, array, null)`},
	}
	if len(se.Failures) != len(want) {
		t.Fatalf("Compile(...).Failures = %v; want %v", se.Failures, want)
	}
	for i := range want {
		if se.Failures[i] != want[i] {
			t.Errorf("Compile(...).Failures[%d] = %v; want %v", i, se.Failures[i], want[i])
		}
	}
}

func TestCompileAccepts(t *testing.T) {
	for _, schema := range []string{
		`true`, `false`, `{}`,
		`{"title":"t","description":"d","default":{"any":["thing"]}}`,
		`{"type":"object","properties":{},"additionalProperties":true}`,
		`{"type":["integer","null"],"minimum":-1.5e3,"maximum":0}`,
		`{"items":false,"minLength":0,"maxLength":0}`,
		writeSchema,
	} {
		if _, err := Compile(json.RawMessage(schema)); err != nil {
			t.Errorf("Compile(%s) = %v; want nil", schema, err)
		}
	}
}
