package jsonschema

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// typeSet is a set of JSON Schema type names; 0 means no "type" keyword.
type typeSet uint8

const (
	tString typeSet = 1 << iota
	tNumber
	tInteger
	tBoolean
	tObject
	tArray
	tNull
)

var typeNames = map[string]typeSet{
	"string":  tString,
	"number":  tNumber,
	"integer": tInteger,
	"boolean": tBoolean,
	"object":  tObject,
	"array":   tArray,
	"null":    tNull,
}

// typeOrder fixes the order in which a set is named in messages.
var typeOrder = []struct {
	t    typeSet
	name string
}{
	{tString, "string"}, {tNumber, "number"}, {tInteger, "integer"}, {tBoolean, "boolean"},
	{tObject, "object"}, {tArray, "array"}, {tNull, "null"},
}

// String names the set as "string", "string or null", "object, array or null".
func (t typeSet) String() string {
	var names []string
	for _, o := range typeOrder {
		if t&o.t != 0 {
			names = append(names, o.name)
		}
	}
	switch len(names) {
	case 0:
		return "any"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// accepts reports whether v, a decoded JSON value, has one of the types.
func (t typeSet) accepts(v any) bool {
	switch v.(type) {
	case nil:
		return t&tNull != 0
	case bool:
		return t&tBoolean != 0
	case string:
		return t&tString != 0
	case map[string]any:
		return t&tObject != 0
	case []any:
		return t&tArray != 0
	}
	if t&tNumber != 0 {
		_, ok := asNumber(v)
		return ok
	}
	if t&tInteger != 0 {
		n, ok := asNumber(v)
		return ok && n.isInteger()
	}
	return false
}

// kindName names the JSON type of a decoded value for messages.
func kindName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number, float64:
		return "number"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return "unsupported Go value"
}

// asNumber converts a decoded JSON number (json.Number, or float64 from a
// decoder without UseNumber) to an exact decimal.
func asNumber(v any) (decimal, bool) {
	switch v := v.(type) {
	case json.Number:
		return parseDecimal(string(v))
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return decimal{}, false
		}
		return parseDecimal(strconv.FormatFloat(v, 'g', -1, 64))
	}
	return decimal{}, false
}

// plain reports whether v is made only of the types a JSON decoder produces,
// the only ones the validator walks directly.
func plain(v any) bool {
	switch v := v.(type) {
	case nil, bool, string, json.Number, float64:
		return true
	case map[string]any:
		for _, e := range v {
			if !plain(e) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range v {
			if !plain(e) {
				return false
			}
		}
		return true
	}
	return false
}

// equal is JSON equality: numbers compare by value (1 equals 1.0), objects
// by their members regardless of order.
func equal(a, b any) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case bool:
		bb, ok := b.(bool)
		return ok && a == bb
	case string:
		bs, ok := b.(string)
		return ok && a == bs
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, av := range a {
			bv, ok := bm[k]
			if !ok || !equal(av, bv) {
				return false
			}
		}
		return true
	case []any:
		bl, ok := b.([]any)
		if !ok || len(a) != len(bl) {
			return false
		}
		for i := range a {
			if !equal(a[i], bl[i]) {
				return false
			}
		}
		return true
	}
	an, ok := asNumber(a)
	if !ok {
		return false
	}
	bn, ok := asNumber(b)
	return ok && compareDecimal(an, bn) == 0
}

// compact renders v as compact JSON without HTML escaping.
func compact(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "<" + kindName(v) + ">"
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// shortLimit bounds how much of an offending value a message quotes.
const shortLimit = 64

// compactShort is compact, cut to about shortLimit bytes on a rune boundary.
func compactShort(v any) string {
	s := compact(v)
	if len(s) <= shortLimit {
		return s
	}
	cut := shortLimit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
