package notion

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// TextLimits bound what PageText fetches and returns.
type TextLimits struct {
	// MaxChars bounds the text; 0 means 100,000.
	MaxChars int
	// MaxBlocks bounds the blocks read; 0 means 2,000.
	MaxBlocks int
	// MaxDepth bounds how deep nested blocks are followed; 0 means 4.
	MaxDepth int
}

// PageText is a page rendered as readable text.
type PageText struct {
	Page *Page
	// Text is the title, then the blocks as Markdown-like lines, nested
	// blocks indented by two spaces.
	Text string
	// Blocks is the number of blocks read.
	Blocks int
	// Truncated says a limit stopped the reading; Text ends with a line
	// saying which.
	Truncated bool
}

// PageText reads a page and its blocks (following has_children and
// next_cursor) and renders them as text.
func (c *Client) PageText(ctx context.Context, id string, lim TextLimits) (*PageText, error) {
	if lim.MaxChars <= 0 {
		lim.MaxChars = 100_000
	}
	if lim.MaxBlocks <= 0 {
		lim.MaxBlocks = 2000
	}
	if lim.MaxDepth <= 0 {
		lim.MaxDepth = 4
	}
	page, err := c.Page(ctx, id)
	if err != nil {
		return nil, err
	}
	w := &textWriter{c: c, lim: lim}
	if page.Title != "" {
		w.line(0, "# "+page.Title)
	}
	if err := w.walk(ctx, page.ID, 0); err != nil && err != errStop {
		return nil, err
	}
	out := &PageText{Page: page, Blocks: w.blocks, Truncated: w.stopped != ""}
	out.Text = strings.TrimRight(w.b.String(), "\n")
	if w.stopped != "" {
		out.Text += "\n[truncated: " + w.stopped + "]"
	}
	return out, nil
}

var errStop = fmt.Errorf("stop")

type textWriter struct {
	c       *Client
	lim     TextLimits
	b       strings.Builder
	blocks  int
	stopped string
}

func (w *textWriter) line(depth int, s string) error {
	for _, l := range strings.Split(s, "\n") {
		if w.b.Len()+2*depth+len(l)+1 > w.lim.MaxChars {
			w.stopped = fmt.Sprintf("the text reached %d characters", w.lim.MaxChars)
			return errStop
		}
		w.b.WriteString(strings.Repeat("  ", depth))
		w.b.WriteString(l)
		w.b.WriteByte('\n')
	}
	return nil
}

func (w *textWriter) walk(ctx context.Context, id string, depth int) error {
	cursor, n := "", 0
	for {
		l, err := w.c.BlockChildren(ctx, id, cursor, MaxPageSize)
		if err != nil {
			return err
		}
		for _, b := range l.Blocks {
			if w.blocks >= w.lim.MaxBlocks {
				w.stopped = fmt.Sprintf("the page has more than %d blocks", w.lim.MaxBlocks)
				return errStop
			}
			w.blocks++
			if b.Type == "numbered_list_item" {
				n++
			} else {
				n = 0
			}
			if s := b.Line(n); s != "" {
				if err := w.line(depth, s); err != nil {
					return err
				}
			}
			if !b.HasChildren || b.Type == "child_page" || b.Type == "child_database" {
				continue
			}
			if depth+1 >= w.lim.MaxDepth {
				if err := w.line(depth+1, "[nested blocks not shown]"); err != nil {
					return err
				}
				continue
			}
			if err := w.walk(ctx, b.ID, depth+1); err != nil {
				return err
			}
		}
		if l.NextCursor == "" {
			return nil
		}
		cursor = l.NextCursor
	}
}

// Line renders a block as one Markdown-like line (several for code); n is
// its number in a run of numbered list items. Blocks that only hold others
// (columns, synced blocks, tables) render as "".
func (b Block) Line(n int) string {
	var c struct {
		RichText   json.RawMessage   `json:"rich_text"`
		Caption    json.RawMessage   `json:"caption"`
		Checked    bool              `json:"checked"`
		Language   string            `json:"language"`
		Title      string            `json:"title"`
		URL        string            `json:"url"`
		Expression string            `json:"expression"`
		Cells      []json.RawMessage `json:"cells"`
		Icon       *struct {
			Emoji string `json:"emoji"`
		} `json:"icon"`
		External *struct {
			URL string `json:"url"`
		} `json:"external"`
		File *struct {
			URL string `json:"url"`
		} `json:"file"`
	}
	json.Unmarshal(b.Content, &c)
	text := richText(c.RichText)
	switch b.Type {
	case "paragraph":
		return text
	case "heading_1":
		return "# " + text
	case "heading_2":
		return "## " + text
	case "heading_3":
		return "### " + text
	case "bulleted_list_item", "toggle":
		return "- " + text
	case "numbered_list_item":
		return fmt.Sprintf("%d. %s", max(n, 1), text)
	case "to_do":
		if c.Checked {
			return "[x] " + text
		}
		return "[ ] " + text
	case "quote":
		return "> " + text
	case "callout":
		if c.Icon != nil && c.Icon.Emoji != "" {
			return "> " + c.Icon.Emoji + " " + text
		}
		return "> " + text
	case "code":
		return "```" + c.Language + "\n" + text + "\n```"
	case "equation":
		return "$$" + c.Expression + "$$"
	case "divider":
		return "---"
	case "child_page":
		return fmt.Sprintf("[page: %s] (id %s)", c.Title, b.ID)
	case "child_database":
		return fmt.Sprintf("[database: %s] (id %s)", c.Title, b.ID)
	case "bookmark", "embed", "link_preview":
		if cap := richText(c.Caption); cap != "" {
			return c.URL + " (" + cap + ")"
		}
		return c.URL
	case "image", "file", "pdf", "video", "audio":
		u := ""
		if c.External != nil {
			u = c.External.URL
		} else if c.File != nil {
			u = c.File.URL
		}
		s := "[" + b.Type
		if cap := richText(c.Caption); cap != "" {
			s += ": " + cap
		}
		return s + "] " + u
	case "table_row":
		var cells []string
		for _, cell := range c.Cells {
			cells = append(cells, strings.ReplaceAll(richText(cell), "|", `\|`))
		}
		return "| " + strings.Join(cells, " | ") + " |"
	case "table", "column_list", "column", "synced_block", "template", "breadcrumb", "table_of_contents":
		return ""
	}
	if text != "" {
		return text
	}
	return "[" + b.Type + "]"
}
