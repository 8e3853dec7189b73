package mcp

import (
	"context"
	"encoding/json"
	"fmt"
)

// maxPages bounds a paginated list: a server that hands out cursors
// forever is refused rather than followed.
const maxPages = 1000

// ListTools lists every tool, following nextCursor through all pages.
func (c *Client) ListTools(ctx context.Context) ([]Tool, error) {
	var all []Tool
	err := paginate(ctx, c, "tools/list", func(raw json.RawMessage) (string, error) {
		var page struct {
			Tools      []Tool `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return "", err
		}
		all = append(all, page.Tools...)
		return page.NextCursor, nil
	})
	return all, err
}

// CallTool calls the tool name with arguments args (a JSON object; nil
// sends none). onProgress, when not nil, receives the server's progress
// notifications for this call, in order, on the reading goroutine (keep it
// quick; do not call the Client from it). Cancelling ctx (or its deadline) sends
// notifications/cancelled for the call and returns the context's cause. A
// tool that ran and failed is a result with IsError, not an error.
func (c *Client) CallTool(ctx context.Context, name string, args json.RawMessage, onProgress func(Progress)) (*CallResult, error) {
	params := map[string]any{"name": name}
	if len(args) > 0 {
		if !json.Valid(args) {
			return nil, fmt.Errorf("mcp %s: tools/call %q: the arguments are not valid JSON", c.t, name)
		}
		params["arguments"] = args
	}
	var res CallResult
	if err := c.call(ctx, "tools/call", params, &res, onProgress); err != nil {
		return nil, err
	}
	return &res, nil
}

// ListResources lists every resource, through all pages.
func (c *Client) ListResources(ctx context.Context) ([]Resource, error) {
	var all []Resource
	err := paginate(ctx, c, "resources/list", func(raw json.RawMessage) (string, error) {
		var page struct {
			Resources  []Resource `json:"resources"`
			NextCursor string     `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return "", err
		}
		all = append(all, page.Resources...)
		return page.NextCursor, nil
	})
	return all, err
}

// ReadResource reads the resource at uri.
func (c *Client) ReadResource(ctx context.Context, uri string) ([]ResourceContents, error) {
	var res struct {
		Contents []ResourceContents `json:"contents"`
	}
	if err := c.call(ctx, "resources/read", map[string]any{"uri": uri}, &res, nil); err != nil {
		return nil, err
	}
	return res.Contents, nil
}

// ListPrompts lists every prompt, through all pages.
func (c *Client) ListPrompts(ctx context.Context) ([]Prompt, error) {
	var all []Prompt
	err := paginate(ctx, c, "prompts/list", func(raw json.RawMessage) (string, error) {
		var page struct {
			Prompts    []Prompt `json:"prompts"`
			NextCursor string   `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return "", err
		}
		all = append(all, page.Prompts...)
		return page.NextCursor, nil
	})
	return all, err
}

// GetPrompt renders the prompt name with its arguments.
func (c *Client) GetPrompt(ctx context.Context, name string, args map[string]string) (*PromptResult, error) {
	params := map[string]any{"name": name}
	if len(args) > 0 {
		params["arguments"] = args
	}
	var res PromptResult
	if err := c.call(ctx, "prompts/get", params, &res, nil); err != nil {
		return nil, err
	}
	return &res, nil
}

// Ping asks the server whether it is alive.
func (c *Client) Ping(ctx context.Context) error {
	return c.call(ctx, "ping", nil, nil, nil)
}

// SetLogLevel asks the server to send log notifications at level and above
// (debug, info, notice, warning, error, critical, alert, emergency).
func (c *Client) SetLogLevel(ctx context.Context, level string) error {
	return c.call(ctx, "logging/setLevel", map[string]any{"level": level}, nil, nil)
}

// paginate calls method page after page until the server gives no cursor.
func paginate(ctx context.Context, c *Client, method string, page func(json.RawMessage) (string, error)) error {
	cursor := ""
	seen := map[string]bool{}
	for n := 0; ; n++ {
		if n == maxPages {
			return fmt.Errorf("mcp %s: %s: more than %d pages; the server's cursors do not end", c.t, method, maxPages)
		}
		var params any
		if cursor != "" {
			params = map[string]any{"cursor": cursor}
		}
		var raw json.RawMessage
		if err := c.call(ctx, method, params, &raw, nil); err != nil {
			return err
		}
		next, err := page(raw)
		if err != nil {
			return fmt.Errorf("mcp %s: %s: the result does not decode: %v", c.t, method, err)
		}
		if next == "" {
			return nil
		}
		if seen[next] {
			return fmt.Errorf("mcp %s: %s: the server returned cursor %q twice; its pagination loops", c.t, method, next)
		}
		seen[next] = true
		cursor = next
	}
}
