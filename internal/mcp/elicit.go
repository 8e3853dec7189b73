package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Field is one field of a form elicitation's requested schema.
type Field struct {
	Name        string
	Type        string // string, number, integer, boolean, array
	Title       string
	Description string
	Required    bool
	Enum        []string        // allowed values (enum, or oneOf/anyOf consts)
	Default     json.RawMessage // nil when the schema gives none
}

// Fields reads the flat object schema of a form elicitation, in the
// order the properties appear in the schema.
func (r ElicitRequest) Fields() ([]Field, error) {
	if len(r.RequestedSchema) == 0 {
		return nil, nil
	}
	var s struct {
		Type       string          `json:"type"`
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if err := json.Unmarshal(r.RequestedSchema, &s); err != nil {
		return nil, fmt.Errorf("elicitation requestedSchema: %w", err)
	}
	if s.Type != "" && s.Type != "object" {
		return nil, fmt.Errorf("elicitation requestedSchema: type is %q; a form is an object", s.Type)
	}
	names, props, err := orderedObject(s.Properties)
	if err != nil {
		return nil, fmt.Errorf("elicitation requestedSchema.properties: %w", err)
	}
	req := map[string]bool{}
	for _, n := range s.Required {
		req[n] = true
	}
	var out []Field
	for _, n := range names {
		var p struct {
			Type        string                   `json:"type"`
			Title       string                   `json:"title"`
			Description string                   `json:"description"`
			Enum        []string                 `json:"enum"`
			OneOf       []struct{ Const string } `json:"oneOf"`
			AnyOf       []struct{ Const string } `json:"anyOf"`
			Items       *struct {
				Enum  []string                 `json:"enum"`
				AnyOf []struct{ Const string } `json:"anyOf"`
			} `json:"items"`
			Default json.RawMessage `json:"default"`
		}
		if err := json.Unmarshal(props[n], &p); err != nil {
			return nil, fmt.Errorf("elicitation requestedSchema.properties.%s: %w", n, err)
		}
		f := Field{Name: n, Type: p.Type, Title: p.Title, Description: p.Description, Required: req[n], Enum: p.Enum, Default: p.Default}
		for _, o := range append(p.OneOf, p.AnyOf...) {
			f.Enum = append(f.Enum, o.Const)
		}
		if p.Items != nil {
			f.Enum = append(f.Enum, p.Items.Enum...)
			for _, o := range p.Items.AnyOf {
				f.Enum = append(f.Enum, o.Const)
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// Defaults is the content of a form accepted without changes: every field
// that has a default, with it (SEP-1034).
func (r ElicitRequest) Defaults() (map[string]any, error) {
	fields, err := r.Fields()
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	for _, f := range fields {
		if f.Default == nil {
			continue
		}
		var v any
		if err := json.Unmarshal(f.Default, &v); err != nil {
			return nil, fmt.Errorf("elicitation requestedSchema.properties.%s.default: %w", f.Name, err)
		}
		out[f.Name] = v
	}
	return out, nil
}

// orderedObject decodes a JSON object keeping its key order.
func orderedObject(raw json.RawMessage) ([]string, map[string]json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if len(raw) == 0 {
		return nil, m, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, fmt.Errorf("not an object")
	}
	var names []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		if _, dup := m[name]; !dup {
			names = append(names, name)
		}
		m[name] = v
	}
	return names, m, nil
}
