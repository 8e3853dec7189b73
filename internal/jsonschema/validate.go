package jsonschema

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Validate checks one JSON document against s. It returns nil, a
// *ValidationError listing every failure, or an error if instance is not a
// single JSON value.
func (s *Schema) Validate(instance json.RawMessage) error {
	v, err := decode(instance)
	if err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	return s.validateTree(v)
}

// ValidateValue checks a Go value as if it were marshalled to JSON. Values a
// JSON decoder produces (map[string]any, []any, string, json.Number, float64,
// bool, nil) are walked directly; anything else goes through encoding/json
// first.
func (s *Schema) ValidateValue(v any) error {
	if !plain(v) {
		raw, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode value for validation: %w", err)
		}
		if v, err = decode(raw); err != nil {
			return fmt.Errorf("decode value for validation: %w", err)
		}
	}
	return s.validateTree(v)
}

func (s *Schema) validateTree(v any) error {
	if s == nil {
		return nil
	}
	var w walker
	w.validate(s, v)
	if len(w.failures) == 0 {
		return nil
	}
	return &ValidationError{Failures: w.failures, Omitted: w.omitted}
}

// token is one step of the path to the value being validated: an object key
// or an array index, kept unformatted until a failure needs the pointer.
type token struct {
	key   string
	index int // -1 for a key
}

type walker struct {
	path     []token
	failures []Failure
	omitted  int
}

func (w *walker) fail(format string, args ...any) {
	if len(w.failures) >= MaxFailures {
		w.omitted++
		return
	}
	w.failures = append(w.failures, Failure{Path: w.pointer(), Message: fmt.Sprintf(format, args...)})
}

func (w *walker) pointer() string {
	if len(w.path) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, t := range w.path {
		b.WriteByte('/')
		if t.index >= 0 {
			b.WriteString(strconv.Itoa(t.index))
		} else {
			b.WriteString(escape(t.key))
		}
	}
	return b.String()
}

func (w *walker) push(t token) { w.path = append(w.path, t) }
func (w *walker) pop()         { w.path = w.path[:len(w.path)-1] }

func (w *walker) validate(s *Schema, v any) {
	if s.never {
		w.fail("no value is allowed here (the schema is false)")
		return
	}
	if s.types != 0 && !s.types.accepts(v) {
		w.fail("want %s, got %s", s.types, kindName(v))
		return
	}
	if s.enum != nil && !inEnum(s.enum, v) {
		w.fail("%s is not one of %s", compactShort(v), s.enumText)
	}
	switch v := v.(type) {
	case string:
		w.validateString(s, v)
	case map[string]any:
		w.validateObject(s, v)
	case []any:
		if s.items != nil {
			for i, e := range v {
				w.push(token{index: i})
				w.validate(s.items, e)
				w.pop()
			}
		}
	case nil, bool:
	default:
		w.validateNumber(s, v)
	}
}

func inEnum(enum []any, v any) bool {
	for _, e := range enum {
		if equal(e, v) {
			return true
		}
	}
	return false
}

func (w *walker) validateString(s *Schema, v string) {
	if s.minLength < 0 && s.maxLength < 0 {
		return
	}
	n := utf8.RuneCountInString(v)
	if s.minLength >= 0 && n < s.minLength {
		w.fail("length %d is less than minLength %d", n, s.minLength)
	}
	if s.maxLength >= 0 && n > s.maxLength {
		w.fail("length %d exceeds maxLength %d", n, s.maxLength)
	}
}

func (w *walker) validateNumber(s *Schema, v any) {
	n, ok := asNumber(v)
	if !ok {
		w.fail("%q is not a valid JSON number", fmt.Sprint(v))
		return
	}
	if s.minimum != nil && compareDecimal(n, *s.minimum) < 0 {
		w.fail("%s is less than minimum %s", compactShort(v), s.minText)
	}
	if s.maximum != nil && compareDecimal(n, *s.maximum) > 0 {
		w.fail("%s exceeds maximum %s", compactShort(v), s.maxText)
	}
}

// validateObject reports missing required properties first, in the order the
// schema lists them, then checks the members in sorted key order.
func (w *walker) validateObject(s *Schema, m map[string]any) {
	for _, name := range s.required {
		if _, ok := m[name]; !ok {
			w.push(token{key: name, index: -1})
			w.fail("required property missing")
			w.pop()
		}
	}
	if s.properties == nil && s.additional == nil {
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		sub, ok := s.properties[k]
		if !ok {
			sub = s.additional
		}
		if sub == nil {
			continue
		}
		w.push(token{key: k, index: -1})
		if !ok && sub.never {
			w.fail("unknown property")
		} else {
			w.validate(sub, m[k])
		}
		w.pop()
	}
}
