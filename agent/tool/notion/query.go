// Package notion holds choir.notion.query, the agent's read access to its
// leased Notion integration (design §8.7 #8, §18.3).
package notion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"choir/agent/tool"
	"choir/agent/tool/webapi"
	"choir/internal/config"
	"choir/internal/notion"
)

// Query is choir.notion.query: search the pages and databases shared with
// the session's Notion integration, read a page as text, or query a
// database's rows. The endpoint is the integration's (config.json
// notion_integrations.<name>.endpoint, read per call); the only secret it
// gets is notion.
type Query struct {
	llm     tool.LLMTool
	dynamic func() config.Dynamic
	http    *http.Client
	timeout time.Duration
}

var _ tool.Tool = (*Query)(nil)

// Bounds of a page's text.
const (
	DefaultMaxChars = 20_000
	MaxMaxChars     = 100_000
)

const queryParams = `{
  "type": "object",
  "properties": {
    "mode": {"type": "string", "enum": ["search", "page", "database"], "description": "search: find pages and databases by title; page: read a page as text; database: list a database's rows."},
    "query": {"type": "string", "maxLength": 200, "description": "search: words of the title (empty lists everything shared)."},
    "object": {"type": "string", "enum": ["page", "database"], "description": "search: only pages or only databases."},
    "id": {"type": "string", "minLength": 1, "maxLength": 300, "description": "page, database: the id, or a link to it (https://www.notion.so/...)."},
    "filter": {"type": "object", "description": "database: a Notion filter object, e.g. {\"property\":\"Status\",\"status\":{\"equals\":\"Done\"}}."},
    "sorts": {"type": "array", "description": "database: Notion sorts, e.g. [{\"property\":\"Due\",\"direction\":\"ascending\"}]."},
    "page_size": {"type": "integer", "minimum": 1, "maximum": 100, "description": "search, database: results per call (default 20)."},
    "cursor": {"type": "string", "maxLength": 200, "description": "search, database: next_cursor of the previous call, for more."},
    "max_chars": {"type": "integer", "minimum": 1000, "maximum": 100000, "description": "page: most characters of text to return (default 20000)."}
  },
  "required": ["mode"],
  "additionalProperties": false
}`

// NewQuery returns choir.notion.query reading the integration from dynamic
// per call. client nil means http.DefaultClient.
func NewQuery(dynamic func() config.Dynamic, client *http.Client) *Query {
	if client == nil {
		client = http.DefaultClient
	}
	return &Query{
		llm: tool.LLMTool{
			Name: "choir.notion.query",
			Description: "Read the user's Notion (the pages and databases shared with the agent's integration): " +
				"search by title, read a page as text, or list a database's rows with their properties.",
			Parameters: json.RawMessage(queryParams),
		},
		dynamic: dynamic, http: client, timeout: 20 * time.Second,
	}
}

func (t *Query) Name() string      { return t.llm.Name }
func (t *Query) LLM() tool.LLMTool { return t.llm }
func (t *Query) Runtime() tool.Runtime {
	return tool.Runtime{
		Timeout: 60 * time.Second, Network: true, SecretResources: []string{tool.SecretNotion},
		SideEffect: tool.SideEffectRead, Idempotent: true, Version: "1", Exposure: tool.ExposeBoth,
	}
}

// Locks is none (§8.7).
func (t *Query) Locks(json.RawMessage) ([]tool.LockReq, error) { return nil, nil }

type queryInput struct {
	Mode     string          `json:"mode"`
	Query    string          `json:"query"`
	Object   string          `json:"object"`
	ID       string          `json:"id"`
	Filter   json.RawMessage `json:"filter"`
	Sorts    json.RawMessage `json:"sorts"`
	PageSize int             `json:"page_size"`
	Cursor   string          `json:"cursor"`
	MaxChars int             `json:"max_chars"`
}

// check refuses parameters that do not belong to the mode.
func (in queryInput) check() error {
	var misplaced []string
	add := func(name string, set bool) {
		if set {
			misplaced = append(misplaced, name)
		}
	}
	switch in.Mode {
	case "search":
		add("id", in.ID != "")
		add("filter", in.Filter != nil)
		add("sorts", in.Sorts != nil)
		add("max_chars", in.MaxChars != 0)
	case "page":
		add("query", in.Query != "")
		add("object", in.Object != "")
		add("filter", in.Filter != nil)
		add("sorts", in.Sorts != nil)
		add("page_size", in.PageSize != 0)
		add("cursor", in.Cursor != "")
	case "database":
		add("query", in.Query != "")
		add("object", in.Object != "")
		add("max_chars", in.MaxChars != 0)
	}
	if len(misplaced) > 0 {
		return tool.Errorf(tool.CodeInvalidInput, "mode %s does not take %s", in.Mode, strings.Join(misplaced, ", "))
	}
	if in.Mode != "search" {
		if strings.TrimSpace(in.ID) == "" {
			return tool.Errorf(tool.CodeInvalidInput, "mode %s needs id: the page or database id, or its link (find it with mode search)", in.Mode)
		}
		if _, err := notion.ParseID(in.ID); err != nil {
			return tool.Errorf(tool.CodeInvalidInput, "%v; find the id with mode search", err)
		}
	}
	return nil
}

// Execute runs one query.
func (t *Query) Execute(ctx context.Context, input json.RawMessage, env tool.Env) (tool.Result, error) {
	var in queryInput
	if err := json.Unmarshal(input, &in); err != nil {
		return tool.Result{}, tool.Errorf(tool.CodeInvalidInput, "%v", err)
	}
	if err := in.check(); err != nil {
		return tool.Result{}, err
	}
	endpoint := ""
	if n := t.dynamic().Notion; n != nil {
		endpoint = n.Endpoint
	}
	c, err := notion.New(notion.Config{Endpoint: endpoint, Token: env.Secrets[tool.SecretNotion], HTTPClient: t.http, Timeout: t.timeout})
	if err != nil {
		return tool.Result{}, tool.Errorf(tool.CodeSecretUnavailable, "%v (config.json notion_integrations)", err)
	}
	if in.PageSize == 0 {
		in.PageSize = 20
	}
	var res tool.Result
	switch in.Mode {
	case "search":
		res, err = t.search(ctx, c, in)
	case "page":
		res, err = t.page(ctx, c, in)
	default:
		res, err = t.database(ctx, c, in)
	}
	if err != nil {
		var ae *notion.APIError
		if !errors.As(err, &ae) {
			return tool.Result{}, err
		}
		return webapi.Result("Notion", "check the secret of the session's Notion integration in config.json", webapi.Failure{
			Status: ae.Status, Code: ae.Code, Message: ae.Error(), RetryAfter: ae.RetryAfter, Err: ae.Err,
			TooLarge: errors.Is(ae.Err, notion.ErrTooLarge), Auth: ae.Auth(), NotFound: ae.NotFound(),
		}), nil
	}
	return res, nil
}

func (t *Query) search(ctx context.Context, c *notion.Client, in queryInput) (tool.Result, error) {
	r, err := c.Search(ctx, notion.SearchRequest{Query: in.Query, Filter: in.Object, PageSize: in.PageSize, StartCursor: in.Cursor})
	if err != nil {
		return tool.Result{}, err
	}
	results := make([]map[string]any, 0, len(r.Results))
	for _, o := range r.Results {
		m := map[string]any{"kind": o.Kind, "id": o.ID, "title": o.Title, "url": o.URL, "last_edited": o.LastEditedTime}
		if o.Archived {
			m["archived"] = true
		}
		results = append(results, m)
	}
	summary := fmt.Sprintf("%d pages and databases match %q", len(results), in.Query)
	if len(results) == 0 {
		summary = fmt.Sprintf("nothing shared with the integration matches %q (a page must be shared with it in Notion to be found)", in.Query)
	}
	return tool.Success(summary, withCursor(map[string]any{"results": results}, r.NextCursor)), nil
}

func (t *Query) page(ctx context.Context, c *notion.Client, in queryInput) (tool.Result, error) {
	if in.MaxChars == 0 {
		in.MaxChars = DefaultMaxChars
	}
	pt, err := c.PageText(ctx, in.ID, notion.TextLimits{MaxChars: in.MaxChars})
	if err != nil {
		return tool.Result{}, err
	}
	summary := fmt.Sprintf("page %q: %d blocks, %d characters", pt.Page.Title, pt.Blocks, len(pt.Text))
	if pt.Truncated {
		summary += " (truncated; ask with a larger max_chars, up to 100000, for more)"
	}
	return tool.Success(summary, map[string]any{
		"id": pt.Page.ID, "title": pt.Page.Title, "url": pt.Page.URL, "properties": propertyMap(pt.Page.Properties, in.MaxChars),
		"text": pt.Text, "truncated": pt.Truncated,
	}), nil
}

func (t *Query) database(ctx context.Context, c *notion.Client, in queryInput) (tool.Result, error) {
	rows, err := c.QueryDatabase(ctx, in.ID, notion.DatabaseQuery{Filter: in.Filter, Sorts: in.Sorts, PageSize: in.PageSize, StartCursor: in.Cursor})
	if err != nil {
		return tool.Result{}, err
	}
	out := make([]map[string]any, 0, len(rows.Rows))
	for _, r := range rows.Rows {
		out = append(out, map[string]any{"id": r.ID, "title": r.Title, "url": r.URL, "properties": propertyMap(r.Properties, MaxPropertyChars)})
	}
	summary := fmt.Sprintf("%d rows", len(out))
	if rows.NextCursor != "" {
		summary += " (more: call again with cursor)"
	}
	return tool.Success(summary, withCursor(map[string]any{"rows": out}, rows.NextCursor)), nil
}

// MaxPropertyChars bounds each property's text in a database result, so
// that a page of 100 rows stays readable; mode page bounds them by
// max_chars.
const MaxPropertyChars = 2000

func propertyMap(props []notion.Property, limit int) map[string]string {
	m := make(map[string]string, len(props))
	for _, p := range props {
		text := p.Text
		if utf8.RuneCountInString(text) > limit {
			text = string([]rune(text)[:limit]) + "… [truncated: read the row with mode page for all of it]"
		}
		m[p.Name] = text
	}
	return m
}

func withCursor(fields map[string]any, cursor string) map[string]any {
	if cursor != "" {
		fields["next_cursor"] = cursor
	}
	return fields
}
