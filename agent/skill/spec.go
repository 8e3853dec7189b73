package skill

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"choir/internal/jsonlimit"
	"choir/internal/jsonschema"
)

// Spec is a SkillSpec as design §10.1 and the skill page define it. A Spec
// held by a Registry must not be modified.
type Spec struct {
	// Name is the unique skill identifier.
	Name string `json:"name"`
	// Description is the human-readable purpose, shown in the model's system
	// prompt summary.
	Description  string `json:"description"`
	InitialState string `json:"initial_state"`
	// InputSchema and OutputSchema are JSON Schemas in the subset that
	// choir/internal/jsonschema supports; either may be absent.
	InputSchema  json.RawMessage  `json:"input_schema,omitempty"`
	OutputSchema json.RawMessage  `json:"output_schema,omitempty"`
	States       map[string]State `json:"states"`
	// MaxSteps is the number of LLM steps before forced termination.
	MaxSteps int `json:"max_steps"`
	// Interruptible says whether the skill can be cancelled mid-execution.
	Interruptible bool `json:"interruptible,omitempty"`
}

// State is one phase of a skill.
type State struct {
	// Objective is what the model should accomplish in this state; it is all
	// the model sees of the skill.
	Objective string `json:"objective,omitempty"`
	// AllowedTools are the only tools the model may call in this state.
	AllowedTools []string `json:"allowed_tools,omitempty"`
	// Transitions are the valid exits from this state.
	Transitions []Transition `json:"transitions,omitempty"`
	// Terminal marks an end state, which has no transitions.
	Terminal bool `json:"terminal,omitempty"`
}

// Transition leaves a state when the model proposes the event On.
type Transition struct {
	On string `json:"on"`
	To string `json:"to"`
}

// specSchemaJSON is the SkillSpec schema every skill file is parsed against.
//
//go:embed spec.schema.json
var specSchemaJSON []byte

// SpecSchema returns the JSON Schema of a SkillSpec file, for tools (and the
// skill-builder skill) that want to check a draft.
func SpecSchema() json.RawMessage { return bytes.Clone(specSchemaJSON) }

var specSchema = jsonschema.MustCompile(string(specSchemaJSON))

// MaxSpecBytes is the largest SkillSpec file accepted; its objects and
// arrays may nest jsonlimit.DefaultMaxDepth levels and its text must be
// valid UTF-8, checked before it is decoded.
const MaxSpecBytes = 1 << 20

var specLimits = jsonlimit.Limits{MaxBytes: MaxSpecBytes, MaxDepth: jsonlimit.DefaultMaxDepth}

// Parse decodes one SkillSpec file strictly: it must be a single JSON object
// matching the SkillSpec schema, with no unknown fields anywhere. file names
// the source in faults. Parse checks the shape only; Validate checks the
// machine. The error is a *SpecError listing every fault with its JSON
// pointer.
func Parse(file string, data []byte) (*Spec, error) {
	if err := jsonlimit.Check(data, specLimits); err != nil {
		return nil, &SpecError{Faults: []Fault{{File: file, Message: err.Error()}}}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, &SpecError{Faults: []Fault{{File: file, Message: jsonschema.DecodeProblem(data, err)}}}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &SpecError{Faults: []Fault{{File: file, Message: "unexpected data after the SkillSpec object"}}}
	}
	if err := specSchema.ValidateValue(tree); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, &SpecError{Faults: []Fault{{File: file, Message: err.Error()}}}
		}
		faults := make([]Fault, 0, len(ve.Failures)+1)
		for _, f := range ve.Failures {
			faults = append(faults, Fault{File: file, Path: f.Path, Message: f.Message})
		}
		if ve.Omitted > 0 {
			faults = append(faults, Fault{File: file, Message: fmt.Sprintf("and %d more schema faults", ve.Omitted)})
		}
		return nil, &SpecError{Faults: faults}
	}
	// The schema above already refused unknown fields with their paths; the
	// strict decoder keeps the Go struct and the schema honest with each other.
	strict := json.NewDecoder(bytes.NewReader(data))
	strict.DisallowUnknownFields()
	var spec Spec
	if err := strict.Decode(&spec); err != nil {
		return nil, &SpecError{Faults: []Fault{{File: file, Message: fmt.Sprintf("decode SkillSpec: %v", err)}}}
	}
	return &spec, nil
}
