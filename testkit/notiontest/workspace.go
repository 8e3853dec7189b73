package notiontest

import "strings"

// Block is a block to put on a page; make it with Paragraph, Heading, ....
type Block struct {
	Type     string
	Content  map[string]any
	Children []Block
}

// Page is a page to add. Properties are Notion property values made with
// Select, Number, Checkbox, Date, RichText, Status (the title is added from
// Title).
type Page struct {
	Title      string
	Properties map[string]map[string]any
	Blocks     []Block
}

// RichText is a rich text array of one plain run, as Notion sends it.
func RichText(s string) []any {
	return []any{map[string]any{
		"type": "text", "text": map[string]any{"content": s, "link": nil}, "plain_text": s, "href": nil,
		"annotations": map[string]any{"bold": false, "italic": false, "strikethrough": false, "underline": false, "code": false, "color": "default"},
	}}
}

func textBlock(typ, text string, children []Block, extra map[string]any) Block {
	c := map[string]any{"rich_text": RichText(text), "color": "default"}
	for k, v := range extra {
		c[k] = v
	}
	return Block{Type: typ, Content: c, Children: children}
}

// Paragraph, Heading, Bullet, Numbered, ToDo, Quote, Code, Divider and
// ChildPage make blocks.
func Paragraph(text string, children ...Block) Block {
	return textBlock("paragraph", text, children, nil)
}
func Heading(level int, text string) Block {
	return textBlock("heading_"+string(rune('0'+level)), text, nil, map[string]any{"is_toggleable": false})
}
func Bullet(text string, children ...Block) Block {
	return textBlock("bulleted_list_item", text, children, nil)
}
func Numbered(text string) Block { return textBlock("numbered_list_item", text, nil, nil) }
func ToDo(text string, checked bool) Block {
	return textBlock("to_do", text, nil, map[string]any{"checked": checked})
}
func Quote(text string) Block { return textBlock("quote", text, nil, nil) }
func Code(language, text string) Block {
	return textBlock("code", text, nil, map[string]any{"language": language, "caption": []any{}})
}
func Divider() Block { return Block{Type: "divider", Content: map[string]any{}} }
func ChildPage(title string) Block {
	return Block{Type: "child_page", Content: map[string]any{"title": title}}
}

// Property values.
func Select(name string) map[string]any {
	return map[string]any{"type": "select", "select": map[string]any{"id": "opt-" + name, "name": name, "color": "blue"}}
}
func Status(name string) map[string]any {
	return map[string]any{"type": "status", "status": map[string]any{"id": "st-" + name, "name": name, "color": "green"}}
}
func Number(n float64) map[string]any { return map[string]any{"type": "number", "number": n} }
func Checkbox(b bool) map[string]any  { return map[string]any{"type": "checkbox", "checkbox": b} }
func Date(start string) map[string]any {
	return map[string]any{"type": "date", "date": map[string]any{"start": start, "end": nil, "time_zone": nil}}
}
func Text(s string) map[string]any {
	return map[string]any{"type": "rich_text", "rich_text": RichText(s)}
}

// AddPage adds a standalone page shared with the integration and returns
// its id.
func (s *Server) AddPage(p Page) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addPage(p, "title", map[string]any{"type": "workspace", "workspace": true})
}

func (s *Server) addPage(p Page, titleProp string, parent map[string]any) string {
	id := s.newID()
	props := map[string]any{titleProp: map[string]any{"id": "title", "type": "title", "title": RichText(p.Title)}}
	for name, v := range p.Properties {
		pv := map[string]any{"id": strings.ToLower(name)[:min(4, len(name))]}
		for k, x := range v {
			pv[k] = x
		}
		props[name] = pv
	}
	s.objects[id] = map[string]any{
		"object": "page", "id": id, "created_time": "2026-01-02T03:04:00.000Z", "last_edited_time": "2026-01-02T03:04:00.000Z",
		"archived": false, "in_trash": false, "parent": parent, "properties": props,
		"url": "https://www.notion.so/" + strings.ReplaceAll(p.Title, " ", "-") + "-" + strings.ReplaceAll(id, "-", ""),
	}
	s.order = append(s.order, id)
	s.children[id] = s.addBlocks(id, p.Blocks)
	return id
}

func (s *Server) addBlocks(parent string, bs []Block) []string {
	var ids []string
	for _, b := range bs {
		id := s.newID()
		s.blocks[id] = map[string]any{
			"object": "block", "id": id, "type": b.Type, "has_children": len(b.Children) > 0, "archived": false, "in_trash": false,
			"parent": map[string]any{"type": "block_id", "block_id": parent}, b.Type: b.Content,
		}
		s.children[id] = s.addBlocks(id, b.Children)
		ids = append(ids, id)
	}
	return ids
}

// AddDatabase adds a database whose rows are pages (their title property
// is "Name") and returns its id.
func (s *Server) AddDatabase(title string, rows ...Page) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.newID()
	s.objects[id] = map[string]any{
		"object": "database", "id": id, "title": RichText(title), "description": []any{}, "archived": false, "in_trash": false,
		"created_time": "2026-01-02T03:04:00.000Z", "last_edited_time": "2026-01-02T03:04:00.000Z", "is_inline": false,
		"properties": map[string]any{"Name": map[string]any{"id": "title", "name": "Name", "type": "title", "title": map[string]any{}}},
		"url":        "https://www.notion.so/" + strings.ReplaceAll(id, "-", ""),
	}
	s.order = append(s.order, id)
	for _, r := range rows {
		s.rows[id] = append(s.rows[id], s.addPage(r, "Name", map[string]any{"type": "database_id", "database_id": id}))
	}
	return id
}
