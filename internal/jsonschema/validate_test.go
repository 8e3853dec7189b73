package jsonschema

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// writeSchema is the LLM view of choir.fs.write (design §8.3) with a few
// extra constraints, the shape most tool inputs have.
const writeSchema = `{
	"type": "object",
	"description": "Write content to a file in the workspace.",
	"properties": {
		"path":    {"type": "string", "minLength": 1, "maxLength": 8},
		"content": {"type": "string"},
		"mode":    {"type": "string", "enum": ["overwrite", "append"], "default": "overwrite"},
		"lines":   {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 1000}}
	},
	"required": ["path", "content"],
	"additionalProperties": false
}`

func TestValidate(t *testing.T) {
	tests := []struct {
		name     string
		schema   string
		instance string
		want     string // "" for valid
	}{
		// type
		{"string ok", `{"type":"string"}`, `"a"`, ""},
		{"string got number", `{"type":"string"}`, `1`, "/: want string, got number"},
		{"number ok", `{"type":"number"}`, `1.5`, ""},
		{"number got string", `{"type":"number"}`, `"1"`, "/: want number, got string"},
		{"integer ok", `{"type":"integer"}`, `42`, ""},
		{"integer 1.0 counts", `{"type":"integer"}`, `1.0`, ""},
		{"integer 1.5e1 counts", `{"type":"integer"}`, `1.5e1`, ""},
		{"integer got fraction", `{"type":"integer"}`, `1.5`, "/: want integer, got number"},
		{"integer huge exact", `{"type":"integer"}`, `123456789012345678901234567890`, ""},
		{"boolean ok", `{"type":"boolean"}`, `false`, ""},
		{"boolean got null", `{"type":"boolean"}`, `null`, "/: want boolean, got null"},
		{"null ok", `{"type":"null"}`, `null`, ""},
		{"object got array", `{"type":"object"}`, `[]`, "/: want object, got array"},
		{"array got object", `{"type":"array"}`, `{}`, "/: want array, got object"},
		{"type list ok", `{"type":["string","null"]}`, `null`, ""},
		{"type list fails", `{"type":["string","integer","null"]}`, `true`, "/: want string, integer or null, got boolean"},
		{"no type accepts all", `{}`, `[1,{"a":null}]`, ""},
		{"true schema", `true`, `{"x":1}`, ""},
		{"false schema", `false`, `1`, "/: no value is allowed here (the schema is false)"},

		// enum
		{"enum ok", `{"enum":["overwrite","append"]}`, `"append"`, ""},
		{"enum fails", `{"enum":["overwrite","append"]}`, `"x"`, `/: "x" is not one of ["overwrite","append"]`},
		{"enum number equal by value", `{"enum":[1,2]}`, `1.0`, ""},
		{"enum object order-free", `{"enum":[{"a":1,"b":[true]}]}`, `{"b":[true],"a":1}`, ""},
		{"enum null", `{"enum":[null]}`, `0`, "/: 0 is not one of [null]"},
		{"enum quotes long values cut", `{"enum":["a"]}`, `"` + strings.Repeat("é", 40) + `"`,
			`/: "` + strings.Repeat("é", 31) + `… is not one of ["a"]`},
		{"enum html kept", `{"enum":["<a>"]}`, `"&"`, `/: "&" is not one of ["<a>"]`},

		// strings, in code points
		{"minLength ok", `{"minLength":2}`, `"ab"`, ""},
		{"minLength fails", `{"minLength":2}`, `"a"`, "/: length 1 is less than minLength 2"},
		{"maxLength counts runes", `{"maxLength":2}`, `"日本"`, ""},
		{"maxLength fails", `{"maxLength":2}`, `"日本語"`, "/: length 3 exceeds maxLength 2"},
		{"length ignores non-strings", `{"maxLength":0}`, `12345`, ""},

		// numbers
		{"minimum ok", `{"minimum":0}`, `0`, ""},
		{"minimum fails", `{"minimum":0}`, `-0.5`, "/: -0.5 is less than minimum 0"},
		{"maximum fails", `{"maximum":1e2}`, `100.01`, "/: 100.01 exceeds maximum 1e2"},
		{"maximum exact beyond float64", `{"maximum":9007199254740992}`, `9007199254740993`, "/: 9007199254740993 exceeds maximum 9007199254740992"},
		{"minimum huge exponent", `{"minimum":1e999999999}`, `1e999999998`, "/: 1e999999998 is less than minimum 1e999999999"},

		// objects
		{"required missing", `{"required":["path"]}`, `{}`, "/path: required property missing"},
		{"required ok", `{"required":["path"]}`, `{"path":""}`, ""},
		{"required ignores non-objects", `{"required":["path"]}`, `"x"`, ""},
		{"additional false", `{"properties":{"a":{}},"additionalProperties":false}`, `{"a":1,"b":2}`, "/b: unknown property"},
		{"additional schema", `{"additionalProperties":{"type":"integer"}}`, `{"x":1,"y":"2"}`, "/y: want integer, got string"},
		{"pointer escaping", `{"properties":{"a/b~c":{"type":"string"}}}`, `{"a/b~c":1}`, "/a~1b~0c: want string, got number"},

		// arrays
		{"items ok", `{"items":{"type":"integer"}}`, `[1,2,3]`, ""},
		{"items fails", `{"items":{"type":"integer"}}`, `[1,2,"3"]`, "/2: want integer, got string"},
		{"items nested", `{"items":{"items":{"enum":[0]}}}`, `[[0],[0,1]]`, "/1/1: 1 is not one of [0]"},

		// the tool input, several failures in order
		{"tool input ok", writeSchema, `{"path":"a.go","content":"x","mode":"append","lines":[1,2]}`, ""},
		{"tool input every failure", writeSchema,
			`{"content":7,"mode":"x","lines":[1,"2",0,2.5],"extra":true}`,
			`/path: required property missing; /content: want string, got number; /extra: unknown property; ` +
				`/lines/1: want integer, got string; /lines/2: 0 is less than minimum 1; /lines/3: want integer, got number; ` +
				`/mode: "x" is not one of ["overwrite","append"]`},
		{"tool input path too long", writeSchema, `{"path":"abcdefghi","content":""}`, "/path: length 9 exceeds maxLength 8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Compile(json.RawMessage(tt.schema))
			if err != nil {
				t.Fatalf("Compile(%s) = %v", tt.schema, err)
			}
			got := errString(s.Validate(json.RawMessage(tt.instance)))
			if got != tt.want {
				t.Errorf("Validate(%s) = %q; want %q", tt.instance, got, tt.want)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestValidateInvalidJSON(t *testing.T) {
	s := MustCompile(`{"type":"object"}`)
	for _, in := range []string{``, `{`, `{"a":1} {}`, `nul`} {
		err := s.Validate(json.RawMessage(in))
		var ve *ValidationError
		if err == nil || errors.As(err, &ve) || !strings.HasPrefix(err.Error(), "invalid JSON: ") {
			t.Errorf("Validate(%q) = %v; want an invalid JSON error", in, err)
		}
	}
}

func TestValidateFailureLimit(t *testing.T) {
	s := MustCompile(`{"items":{"type":"string"}}`)
	in := "[" + strings.Repeat("1,", MaxFailures+9) + "1]"
	err := s.Validate(json.RawMessage(in))
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Validate(%d numbers) = %v; want *ValidationError", MaxFailures+10, err)
	}
	if len(ve.Failures) != MaxFailures || ve.Omitted != 10 {
		t.Errorf("Validate(%d numbers) kept %d, omitted %d; want %d, 10", MaxFailures+10, len(ve.Failures), ve.Omitted, MaxFailures)
	}
	if !strings.HasSuffix(err.Error(), "; ... and 10 more") {
		t.Errorf("Validate(...).Error() ends %q; want \"; ... and 10 more\"", err.Error()[len(err.Error())-30:])
	}
}

func TestValidateValue(t *testing.T) {
	s := MustCompile(writeSchema)
	type input struct {
		Path    string `json:"path"`
		Content string `json:"content"`
		Lines   []int  `json:"lines,omitempty"`
	}
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"struct ok", input{Path: "a", Content: "b", Lines: []int{3}}, ""},
		{"struct fails", input{Content: "b", Lines: []int{0}}, "/lines/0: 0 is less than minimum 1; /path: length 0 is less than minLength 1"},
		{"decoded map with float64", map[string]any{"path": "a", "content": "", "lines": []any{2.0, 2.5}}, "/lines/1: want integer, got number"},
		{"typed map", map[string]string{"path": "a"}, "/content: required property missing"},
		{"nil", nil, "/: want object, got null"},
		{"bad json.Number", map[string]any{"path": "a", "content": "", "lines": []any{json.Number("x")}}, `/lines/0: want integer, got number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errString(s.ValidateValue(tt.v)); got != tt.want {
				t.Errorf("ValidateValue(%#v) = %q; want %q", tt.v, got, tt.want)
			}
		})
	}
}

func TestNilSchemaAcceptsAll(t *testing.T) {
	var s *Schema
	if err := s.Validate(json.RawMessage(`{"a":[1]}`)); err != nil {
		t.Errorf("(*Schema)(nil).Validate = %v; want nil", err)
	}
}

func TestValidateDeterministic(t *testing.T) {
	s := MustCompile(`{"additionalProperties":{"type":"string"},"required":["z","a"]}`)
	in := json.RawMessage(`{"d":1,"b":2,"c":3,"e":4}`)
	first := errString(s.Validate(in))
	want := "/z: required property missing; /a: required property missing; /b: want string, got number; /c: want string, got number; /d: want string, got number; /e: want string, got number"
	if first != want {
		t.Fatalf("Validate(%s) = %q; want %q", in, first, want)
	}
	for range 20 {
		if got := errString(s.Validate(in)); got != first {
			t.Fatalf("Validate(%s) = %q, earlier %q; want the same every time", in, got, first)
		}
	}
}
