package notion

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
)

// richText is a rich text array's plain text: each item's plain_text,
// falling back to text.content, equation.expression or a mention's text.
func richText(raw json.RawMessage) string {
	var items []struct {
		PlainText string `json:"plain_text"`
		Text      *struct {
			Content string `json:"content"`
		} `json:"text"`
		Equation *struct {
			Expression string `json:"expression"`
		} `json:"equation"`
	}
	if json.Unmarshal(raw, &items) != nil {
		return ""
	}
	var b strings.Builder
	for _, it := range items {
		switch {
		case it.PlainText != "":
			b.WriteString(it.PlainText)
		case it.Text != nil:
			b.WriteString(it.Text.Content)
		case it.Equation != nil:
			b.WriteString(it.Equation.Expression)
		}
	}
	return b.String()
}

// Property is one property of a page (a database row's column) as text.
type Property struct {
	Name string
	// Type is Notion's property type (title, select, date, ...).
	Type string
	Text string
}

// properties renders a page's "properties" object, the title first, then
// the others by name.
func properties(raw map[string]json.RawMessage) (title string, props []Property) {
	for name, v := range raw {
		var head struct {
			Type string `json:"type"`
		}
		json.Unmarshal(v, &head)
		p := Property{Name: name, Type: head.Type, Text: propertyText(v)}
		if head.Type == "title" {
			title = p.Text
		}
		props = append(props, p)
	}
	sort.Slice(props, func(i, j int) bool {
		ti, tj := props[i].Type == "title", props[j].Type == "title"
		if ti != tj {
			return ti
		}
		return props[i].Name < props[j].Name
	})
	return title, props
}

// propertyText renders one property value ({"type":T, T: ...}) as text.
func propertyText(raw json.RawMessage) string {
	var v map[string]json.RawMessage
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	var typ string
	json.Unmarshal(v["type"], &typ)
	val := v[typ]
	str := func(r json.RawMessage) string {
		var s string
		if json.Unmarshal(r, &s) == nil {
			return s
		}
		return ""
	}
	named := func(r json.RawMessage) string {
		var o struct {
			Name string `json:"name"`
			ID   string `json:"id"`
		}
		json.Unmarshal(r, &o)
		if o.Name != "" {
			return o.Name
		}
		return o.ID
	}
	namedList := func(r json.RawMessage) string {
		var items []json.RawMessage
		json.Unmarshal(r, &items)
		var out []string
		for _, it := range items {
			if s := named(it); s != "" {
				out = append(out, s)
			}
		}
		return strings.Join(out, ", ")
	}
	switch typ {
	case "title", "rich_text":
		return richText(val)
	case "number":
		var n *float64
		if json.Unmarshal(val, &n) == nil && n != nil {
			return strconv.FormatFloat(*n, 'f', -1, 64)
		}
		return ""
	case "select", "status", "created_by", "last_edited_by":
		if string(val) == "null" {
			return ""
		}
		return named(val)
	case "multi_select", "people", "relation", "files":
		return namedList(val)
	case "date":
		var d *struct {
			Start string  `json:"start"`
			End   *string `json:"end"`
		}
		if json.Unmarshal(val, &d) != nil || d == nil {
			return ""
		}
		if d.End != nil && *d.End != "" {
			return d.Start + " → " + *d.End
		}
		return d.Start
	case "checkbox":
		var b bool
		json.Unmarshal(val, &b)
		if b {
			return "yes"
		}
		return "no"
	case "url", "email", "phone_number", "created_time", "last_edited_time":
		return str(val)
	case "formula":
		return propertyText(val) // {"type":"string","string":"..."} has the same shape
	case "string":
		return str(val)
	case "boolean":
		var b bool
		json.Unmarshal(val, &b)
		return strconv.FormatBool(b)
	case "rollup":
		var r struct {
			Type  string            `json:"type"`
			Array []json.RawMessage `json:"array"`
		}
		json.Unmarshal(val, &r)
		if r.Type != "array" {
			return propertyText(val)
		}
		var out []string
		for _, it := range r.Array {
			if s := propertyText(it); s != "" {
				out = append(out, s)
			}
		}
		return strings.Join(out, ", ")
	case "unique_id":
		var u struct {
			Prefix *string `json:"prefix"`
			Number *int64  `json:"number"`
		}
		json.Unmarshal(val, &u)
		if u.Number == nil {
			return ""
		}
		n := strconv.FormatInt(*u.Number, 10)
		if u.Prefix != nil && *u.Prefix != "" {
			return *u.Prefix + "-" + n
		}
		return n
	}
	return ""
}
