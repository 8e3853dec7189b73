package config

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

var nullableType = reflect.TypeFor[nullable]()

// shapeChecker is a type of several JSON forms that checks its own shape
// (HeaderValue); rawJSONType (json.RawMessage) takes any JSON value.
type shapeChecker interface {
	checkShape(file string, n *node, path string, ps *Problems)
}

var (
	shapeCheckerType = reflect.TypeFor[shapeChecker]()
	rawJSONType      = reflect.TypeFor[json.RawMessage]()
)

func jsonShapeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// checkShape compares a parsed tree with a Go type and records every unknown
// field, duplicate key and wrong JSON type, so one run reports them all.
func checkShape(file string, n *node, t reflect.Type, path string, ps *Problems) {
	switch {
	case t == rawJSONType:
		return
	case t.Implements(shapeCheckerType):
		reflect.Zero(t).Interface().(shapeChecker).checkShape(file, n, path, ps)
		return
	}
	if t.Implements(nullableType) {
		if n.kind == 'z' {
			return
		}
		inner := reflect.Zero(t).Interface().(nullable).nullableInner()
		checkShape(file, n, reflect.TypeOf(inner), path, ps)
		return
	}
	if t.Kind() == reflect.Pointer {
		if n.kind == 'z' {
			return
		}
		checkShape(file, n, t.Elem(), path, ps)
		return
	}
	want := ""
	switch t.Kind() {
	case reflect.Struct:
		if n.kind != 'o' {
			want = "an object"
			break
		}
		fields := jsonFields(t)
		for _, d := range n.dupes {
			ps.add(file, join(path, d), "", "this key appears more than once; keep one")
		}
		for i, key := range n.keys {
			ft, ok := fields[key]
			if !ok {
				ps.add(file, join(path, key), n.vals[i].text(), "unknown field%s", suggest(key, fields))
				continue
			}
			checkShape(file, n.vals[i], ft, join(path, key), ps)
		}
		return
	case reflect.Map:
		if n.kind != 'o' {
			want = "an object of named entries"
			break
		}
		for _, d := range n.dupes {
			ps.add(file, join(path, d), "", "this name appears more than once; names must be unique")
		}
		for i, key := range n.keys {
			checkShape(file, n.vals[i], t.Elem(), join(path, key), ps)
		}
		return
	case reflect.Slice:
		if n.kind != 'a' {
			want = "an array"
			break
		}
		for i, v := range n.vals {
			checkShape(file, v, t.Elem(), fmt.Sprintf("%s[%d]", path, i), ps)
		}
		return
	case reflect.String:
		if n.kind != 's' {
			want = "a string"
		}
	case reflect.Bool:
		if n.kind != 'b' {
			want = "true or false"
		}
	case reflect.Int, reflect.Int64:
		if n.kind != 'n' {
			want = "a whole number"
		} else if v, err := strconv.ParseFloat(n.raw, 64); err != nil || v != math.Trunc(v) || math.Abs(v) > 1<<53 {
			want = "a whole number"
		} else if strings.ContainsAny(n.raw, ".eE") {
			ps.add(file, path, n.text(), "want a whole number written without a fraction or exponent")
		}
	case reflect.Float64:
		if n.kind != 'n' {
			want = "a number"
		}
	default:
		panic(fmt.Sprintf("config: checkShape has no rule for %v", t))
	}
	if want != "" {
		ps.add(file, path, n.text(), "want %s, got %s", want, n.kindName())
	}
}

// jsonFields maps JSON keys to field types, flattening embedded structs.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			for k, v := range jsonFields(f.Type) {
				fields[k] = v
			}
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	return fields
}

// suggest offers the closest known field for a misspelt one.
func suggest(key string, fields map[string]reflect.Type) string {
	best, bestD := "", 3
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		d := editDistance(key, name)
		if strings.HasPrefix(name, key) || strings.HasPrefix(key, name) {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = name, d
		}
	}
	if best != "" {
		return fmt.Sprintf("; did you mean %q?", best)
	}
	return fmt.Sprintf("; known fields: %s", strings.Join(names, ", "))
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
