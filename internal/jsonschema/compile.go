package jsonschema

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// supported lists the keywords of the subset, for the message that refuses
// any other.
const supported = "type, properties, required, enum, items, additionalProperties, " +
	"minimum, maximum, minLength, maxLength, description, title, default"

// maxLengthLimit bounds minLength and maxLength so they fit an int anywhere.
const maxLengthLimit = 1<<31 - 1

type compiler struct {
	failures []Failure
}

func (c *compiler) fail(ptr, format string, args ...any) {
	c.failures = append(c.failures, Failure{Path: display(ptr), Message: fmt.Sprintf(format, args...)})
}

// schema compiles v, found in the schema document at the path of unescaped
// tokens (none for the root). It returns nil after recording a failure.
func (c *compiler) schema(v any, ptrTokens []string) *Schema {
	ptr := pointer(ptrTokens)
	switch v := v.(type) {
	case bool:
		return &Schema{never: !v, minLength: -1, maxLength: -1}
	case map[string]any:
		return c.object(v, ptrTokens, ptr)
	default:
		c.fail(ptr, "a schema must be an object or a boolean, got %s", kindName(v))
		return nil
	}
}

func (c *compiler) object(m map[string]any, tokens []string, ptr string) *Schema {
	s := &Schema{minLength: -1, maxLength: -1}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, kw := range keys {
		v := m[kw]
		at := ptr + "/" + escape(kw)
		switch kw {
		case "type":
			s.types = c.typeSet(v, at)
		case "properties":
			s.properties = c.properties(v, append(tokens[:len(tokens):len(tokens)], kw), at)
		case "required":
			s.required = c.required(v, at)
		case "enum":
			s.enum, s.enumText = c.enum(v, at)
		case "items":
			if _, ok := v.([]any); ok {
				c.fail(at, `"items" as an array (tuple validation) is not supported; give one schema for every item`)
				continue
			}
			s.items = c.schema(v, append(tokens[:len(tokens):len(tokens)], kw))
		case "additionalProperties":
			s.additional = c.schema(v, append(tokens[:len(tokens):len(tokens)], kw))
			if s.additional != nil && !s.additional.never && s.additional.isTrivial() {
				s.additional = nil // true or {} allows anything, as if absent
			}
		case "minimum":
			s.minimum, s.minText = c.number(v, kw, at)
		case "maximum":
			s.maximum, s.maxText = c.number(v, kw, at)
		case "minLength":
			s.minLength = c.length(v, kw, at)
		case "maxLength":
			s.maxLength = c.length(v, kw, at)
		case "description", "title":
			if _, ok := v.(string); !ok {
				c.fail(at, "%q must be a string, got %s", kw, kindName(v))
			}
		case "default":
			// An annotation: accepted, never applied.
		default:
			c.fail(at, "unsupported keyword %q (choir supports %s)", kw, supported)
		}
	}
	if s.minimum != nil && s.maximum != nil && compareDecimal(*s.minimum, *s.maximum) > 0 {
		c.fail(ptr+"/maximum", "maximum %s is less than minimum %s", s.maxText, s.minText)
	}
	if s.minLength >= 0 && s.maxLength >= 0 && s.minLength > s.maxLength {
		c.fail(ptr+"/maxLength", "maxLength %d is less than minLength %d", s.maxLength, s.minLength)
	}
	return s
}

// isTrivial reports whether s places no constraint at all.
func (s *Schema) isTrivial() bool {
	return !s.never && s.types == 0 && s.properties == nil && s.required == nil &&
		s.enum == nil && s.items == nil && s.additional == nil &&
		s.minimum == nil && s.maximum == nil && s.minLength < 0 && s.maxLength < 0
}

func (c *compiler) typeSet(v any, at string) typeSet {
	switch v := v.(type) {
	case string:
		t, ok := typeNames[v]
		if !ok {
			c.fail(at, "unknown type %q (want one of string, number, integer, boolean, object, array, null)", v)
		}
		return t
	case []any:
		if len(v) == 0 {
			c.fail(at, `"type" must name at least one type`)
			return 0
		}
		var set typeSet
		for i, e := range v {
			name, ok := e.(string)
			if !ok {
				c.fail(fmt.Sprintf("%s/%d", at, i), `"type" entries must be strings, got %s`, kindName(e))
				continue
			}
			t, ok := typeNames[name]
			if !ok {
				c.fail(fmt.Sprintf("%s/%d", at, i), "unknown type %q (want one of string, number, integer, boolean, object, array, null)", name)
				continue
			}
			if set&t != 0 {
				c.fail(fmt.Sprintf("%s/%d", at, i), "type %q is listed twice", name)
			}
			set |= t
		}
		return set
	default:
		c.fail(at, `"type" must be a string or an array of strings, got %s`, kindName(v))
		return 0
	}
}

func (c *compiler) properties(v any, tokens []string, at string) map[string]*Schema {
	m, ok := v.(map[string]any)
	if !ok {
		c.fail(at, `"properties" must be an object, got %s`, kindName(v))
		return nil
	}
	props := make(map[string]*Schema, len(m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if s := c.schema(m[k], append(tokens[:len(tokens):len(tokens)], k)); s != nil {
			props[k] = s
		}
	}
	return props
}

func (c *compiler) required(v any, at string) []string {
	list, ok := v.([]any)
	if !ok {
		c.fail(at, `"required" must be an array of strings, got %s`, kindName(v))
		return nil
	}
	names := make([]string, 0, len(list))
	seen := make(map[string]bool, len(list))
	for i, e := range list {
		name, ok := e.(string)
		if !ok {
			c.fail(fmt.Sprintf("%s/%d", at, i), `"required" entries must be strings, got %s`, kindName(e))
			continue
		}
		if seen[name] {
			c.fail(fmt.Sprintf("%s/%d", at, i), "property %q is required twice", name)
			continue
		}
		seen[name] = true
		names = append(names, name)
	}
	return names
}

func (c *compiler) enum(v any, at string) ([]any, string) {
	list, ok := v.([]any)
	if !ok {
		c.fail(at, `"enum" must be an array, got %s`, kindName(v))
		return nil, ""
	}
	if len(list) == 0 {
		c.fail(at, `"enum" must list at least one value`)
		return nil, ""
	}
	for i, e := range list {
		if n, ok := e.(json.Number); ok {
			if _, ok := parseDecimal(string(n)); !ok {
				c.fail(fmt.Sprintf("%s/%d", at, i), "invalid number %q", string(n))
			}
		}
	}
	return list, compact(list)
}

func (c *compiler) number(v any, kw, at string) (*decimal, string) {
	n, ok := asNumber(v)
	if !ok {
		c.fail(at, "%q must be a number, got %s", kw, kindName(v))
		return nil, ""
	}
	return &n, numberText(v)
}

func (c *compiler) length(v any, kw, at string) int {
	n, ok := asNumber(v)
	if !ok || n.neg || !n.isInteger() {
		c.fail(at, "%q must be a non-negative integer, got %s", kw, compactShort(v))
		return -1
	}
	i, ok := n.int64()
	if !ok || i > maxLengthLimit {
		c.fail(at, "%q is too large: %s", kw, compactShort(v))
		return -1
	}
	return int(i)
}

// numberText renders a number keyword's value as it was written.
func numberText(v any) string {
	if n, ok := v.(json.Number); ok {
		return string(n)
	}
	return compact(v)
}

// escape escapes one reference token of a JSON pointer (RFC 6901).
func escape(tok string) string {
	if !strings.ContainsAny(tok, "~/") {
		return tok
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(tok)
}

// pointer joins unescaped tokens into a JSON pointer; the root is "".
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escape(t))
	}
	return b.String()
}

// display shows the root pointer "" as "/", which reads better in a message.
func display(ptr string) string {
	if ptr == "" {
		return "/"
	}
	return ptr
}
