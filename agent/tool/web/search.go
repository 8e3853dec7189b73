package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"choir/agent/tool"
	"choir/agent/tool/webapi"
	"choir/internal/brave"
	"choir/internal/config"
)

// SearchProvider is the search provider of config.json's search section
// choir.web.search uses; v1 knows Brave only.
const SearchProvider = "brave"

// Search is choir.web.search (design §8.7 #6, §18.3): a Brave Search web
// search with structured results (title, url, description, age). The
// endpoint comes from config.json's search.brave per call (absent: Brave's
// public API); the only secret it gets is search:brave.
type Search struct {
	llm     tool.LLMTool
	dynamic func() config.Dynamic
	http    *http.Client
	timeout time.Duration
}

var _ tool.Tool = (*Search)(nil)

const searchParams = `{
  "type": "object",
  "properties": {
    "query": {"type": "string", "minLength": 1, "maxLength": 400, "description": "What to search the web for."},
    "count": {"type": "integer", "minimum": 1, "maximum": 20, "description": "How many results (default 10)."},
    "offset": {"type": "integer", "minimum": 0, "maximum": 9, "description": "Pages of count results to skip, for more results."},
    "country": {"type": "string", "minLength": 2, "maxLength": 2, "description": "Two-letter country code to search from, e.g. us, de."},
    "search_lang": {"type": "string", "minLength": 2, "maxLength": 7, "description": "Language of the results, e.g. en, fr, pt-br."},
    "safesearch": {"type": "string", "enum": ["off", "moderate", "strict"], "description": "Adult content filter (default moderate)."},
    "freshness": {"type": "string", "maxLength": 22, "description": "Only pages from the last day (pd), week (pw), month (pm), year (py), or a range YYYY-MM-DDtoYYYY-MM-DD."}
  },
  "required": ["query"],
  "additionalProperties": false
}`

// NewSearch returns choir.web.search reading its provider from dynamic
// per call. client nil means http.DefaultClient.
func NewSearch(dynamic func() config.Dynamic, client *http.Client) *Search {
	if client == nil {
		client = http.DefaultClient
	}
	return &Search{
		llm: tool.LLMTool{
			Name: "choir.web.search",
			Description: "Search the web (Brave Search). Returns results with title, url, description and age; " +
				"use choir.web.browse to read a page.",
			Parameters: json.RawMessage(searchParams),
		},
		dynamic: dynamic, http: client, timeout: 20 * time.Second,
	}
}

func (t *Search) Name() string      { return t.llm.Name }
func (t *Search) LLM() tool.LLMTool { return t.llm }
func (t *Search) Runtime() tool.Runtime {
	return tool.Runtime{
		Timeout: 30 * time.Second, Network: true, SecretResources: []string{tool.SecretSearchPrefix + SearchProvider},
		SideEffect: tool.SideEffectRead, Idempotent: true, Version: "1", Exposure: tool.ExposeBoth,
	}
}

// Locks is none (§8.7).
func (t *Search) Locks(json.RawMessage) ([]tool.LockReq, error) { return nil, nil }

var freshnessRE = regexp.MustCompile(`^(pd|pw|pm|py|[0-9]{4}-[0-9]{2}-[0-9]{2}to[0-9]{4}-[0-9]{2}-[0-9]{2})$`)

// Execute runs the search.
func (t *Search) Execute(ctx context.Context, input json.RawMessage, env tool.Env) (tool.Result, error) {
	var in struct {
		Query      string `json:"query"`
		Count      int    `json:"count"`
		Offset     int    `json:"offset"`
		Country    string `json:"country"`
		SearchLang string `json:"search_lang"`
		SafeSearch string `json:"safesearch"`
		Freshness  string `json:"freshness"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return tool.Result{}, tool.Errorf(tool.CodeInvalidInput, "%v", err)
	}
	if strings.TrimSpace(in.Query) == "" {
		return tool.Result{}, tool.Errorf(tool.CodeInvalidInput, "query is blank: say what to search for")
	}
	if in.Freshness != "" && !freshnessRE.MatchString(in.Freshness) {
		return tool.Result{}, tool.Errorf(tool.CodeInvalidInput, "freshness %q: want pd, pw, pm, py or YYYY-MM-DDtoYYYY-MM-DD", in.Freshness)
	}
	if in.Count == 0 {
		in.Count = 10
	}
	token := env.Secrets[tool.SecretSearchPrefix+SearchProvider]
	c, err := brave.New(brave.Config{
		Endpoint: t.dynamic().Search[SearchProvider].Endpoint, Token: token, HTTPClient: t.http, Timeout: t.timeout,
	})
	if err != nil {
		return tool.Result{}, tool.Errorf(tool.CodeSecretUnavailable, "%v (config.json search.%s)", err, SearchProvider)
	}
	res, err := c.WebSearch(ctx, brave.WebSearchRequest{
		Query: in.Query, Count: in.Count, Offset: in.Offset, Country: strings.ToLower(in.Country),
		SearchLang: in.SearchLang, SafeSearch: in.SafeSearch, Freshness: in.Freshness,
	})
	if err != nil {
		var ae *brave.APIError
		if !errors.As(err, &ae) {
			return tool.Result{}, err
		}
		return webapi.Result("Brave Search", fmt.Sprintf("check the secret of config.json's search.%s", SearchProvider), webapi.Failure{
			Status: ae.Status, Code: ae.Code, Message: ae.Error(), RetryAfter: ae.RetryAfter, Err: ae.Err,
			TooLarge: errors.Is(ae.Err, brave.ErrTooLarge), Auth: ae.Auth(),
		}), nil
	}
	results := make([]map[string]any, 0, len(res.Results))
	for _, r := range res.Results {
		m := map[string]any{"title": r.Title, "url": r.URL, "description": r.Description}
		if r.Age != "" {
			m["age"] = r.Age
		}
		results = append(results, m)
	}
	summary := fmt.Sprintf("%d results for %q", len(results), res.Query)
	if len(results) == 0 {
		summary = fmt.Sprintf("no results for %q: try other words", res.Query)
	}
	fields := map[string]any{"query": res.Query, "results": results, "more_results": res.MoreResults}
	if res.MoreResults && in.Offset < brave.MaxOffset {
		fields["next_offset"] = in.Offset + 1
	}
	return tool.Success(summary, fields), nil
}
