package skill

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	spec := readSpec(t, "skills/build_feature.json")
	if spec.Name != "build_feature" || spec.InitialState != "understand" || spec.MaxSteps != 20 || !spec.Interruptible {
		t.Errorf("Parse(build_feature.json) = %+v; want name, initial state, max_steps, interruptible from the file", spec)
	}
	want := State{
		Objective:    "Produce an implementation plan.",
		AllowedTools: []string{"choir.memory.query"},
		Transitions:  []Transition{{On: "complete", To: "modify"}, {On: "revise", To: "understand"}},
	}
	if got := spec.States["plan"]; !reflect.DeepEqual(got, want) {
		t.Errorf("Parse(build_feature.json).States[plan] = %+v; want %+v", got, want)
	}
	if !spec.States["done"].Terminal {
		t.Errorf("Parse(build_feature.json).States[done].Terminal = false; want true")
	}
}

func TestParseRefuses(t *testing.T) {
	tests := []struct {
		name string
		data string
		want string
	}{
		{"syntax", "{\n  \"name\" \"x\"\n}", `s.json: invalid JSON at line 2, column 10: invalid character '"' after object key`},
		{"truncated", `{"name": "x",`, `s.json: invalid JSON: the file is empty or truncated`},
		{"empty", ``, `s.json: invalid JSON: the file is empty or truncated`},
		{"trailing", `{} {}`, `s.json: unexpected data after the SkillSpec object`},
		{"not an object", `"skill"`, `s.json: /: want object, got string`},
		{"unknown top-level field", `{"name":"x","description":"d","initial_state":"a","states":{},"max_steps":1,"guards":[]}`,
			`s.json: /guards: unknown property`},
		{"unknown state field", `{"name":"x","description":"d","initial_state":"a","states":{"a":{"terminal":true,"on_error":"b"}},"max_steps":1}`,
			`s.json: /states/a/on_error: unknown property`},
		{"unknown transition field", `{"name":"x","description":"d","initial_state":"a","states":{"a":{"transitions":[{"on":"e","to":"a","if":1}]}},"max_steps":1}`,
			`s.json: /states/a/transitions/0/if: unknown property`},
		{"missing fields", `{"states":{}}`,
			"s.json: /name: required property missing\n" +
				"s.json: /description: required property missing\n" +
				"s.json: /initial_state: required property missing\n" +
				"s.json: /max_steps: required property missing"},
		{"wrong types", `{"name":"x","description":"d","initial_state":"a","states":{"a":{"allowed_tools":"choir.fs.read","terminal":1}},"max_steps":"5","interruptible":"yes"}`,
			"s.json: /interruptible: want boolean, got string\n" +
				"s.json: /max_steps: want integer, got string\n" +
				"s.json: /states/a/allowed_tools: want array, got string\n" +
				"s.json: /states/a/terminal: want boolean, got number"},
		{"fractional max_steps", `{"name":"x","description":"d","initial_state":"a","states":{},"max_steps":1.5}`,
			`s.json: /max_steps: want integer, got number`},
		{"schema placeholder string", `{"name":"x","description":"d","initial_state":"a","input_schema":"<JSONSchema>","states":{},"max_steps":1}`,
			`s.json: /input_schema: want boolean or object, got string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := Parse("s.json", []byte(tt.data))
			if got := errString(err); got != tt.want {
				t.Errorf("Parse(%s) = %q; want %q", tt.data, got, tt.want)
			}
			var se *SpecError
			if !errors.As(err, &se) {
				t.Errorf("Parse(%s) error is %T; want *SpecError", tt.data, err)
			}
			if spec != nil {
				t.Errorf("Parse(%s) returned a spec with its error", tt.data)
			}
		})
	}
}

// TestSpecSchemaMatchesStruct keeps the SkillSpec schema and the Go structs
// in step: a field added to one and not the other would be refused by the
// strict decoder, or silently accepted by the schema.
func TestSpecSchemaMatchesStruct(t *testing.T) {
	var schema struct {
		Properties map[string]struct {
			AdditionalProperties struct {
				Properties map[string]struct {
					Items struct {
						Properties map[string]any `json:"properties"`
					} `json:"items"`
				} `json:"properties"`
			} `json:"additionalProperties"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(SpecSchema(), &schema); err != nil {
		t.Fatal(err)
	}
	states := schema.Properties["states"].AdditionalProperties.Properties
	for _, c := range []struct {
		name   string
		typ    reflect.Type
		schema []string
	}{
		{"Spec", reflect.TypeFor[Spec](), keys(schema.Properties)},
		{"State", reflect.TypeFor[State](), keys(states)},
		{"Transition", reflect.TypeFor[Transition](), keys(states["transitions"].Items.Properties)},
	} {
		var fields []string
		for f := range c.typ.Fields() {
			fields = append(fields, strings.Split(f.Tag.Get("json"), ",")[0])
		}
		sort.Strings(fields)
		if !slices.Equal(fields, c.schema) {
			t.Errorf("%s JSON fields = %v; SkillSpec schema properties = %v; want the same", c.name, fields, c.schema)
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
