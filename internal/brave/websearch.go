package brave

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"choir/internal/httpapi"
)

// Limits of a web search request (Brave's API reference).
const (
	MaxQueryLen = 400 // characters of q
	MaxCount    = 20  // results per page
	MaxOffset   = 9   // pages to skip
)

// WebSearchRequest is one search. Zero fields are left to Brave's defaults.
type WebSearchRequest struct {
	Query string
	// Count is the number of results, 1 to MaxCount (Brave's default 20).
	Count int
	// Offset is the number of pages of Count results to skip, 0 to
	// MaxOffset.
	Offset int
	// Country is a 2-letter country code (us, de, ...).
	Country string
	// SearchLang is a language code (en, fr, ...).
	SearchLang string
	// SafeSearch is off, moderate or strict.
	SafeSearch string
	// Freshness is pd, pw, pm, py or a range YYYY-MM-DDtoYYYY-MM-DD.
	Freshness string
}

// WebResult is one result of the web section.
type WebResult struct {
	Title       string
	URL         string
	Description string
	// Age is Brave's human age of the page ("2 days ago", a date), or "".
	Age string
	// PageAge is the page's date as Brave knows it (ISO 8601), or "".
	PageAge       string
	ExtraSnippets []string
}

// WebSearchResponse is the web section of an answer.
type WebSearchResponse struct {
	// Query is the query Brave ran (it may correct the spelling).
	Query string
	// MoreResults says a later offset would find more.
	MoreResults bool
	Results     []WebResult
	// Remaining is X-RateLimit-Remaining as sent ("0, 1999"), or "".
	Remaining string
}

// Check reports what is wrong with r, or nil.
func (r WebSearchRequest) Check() error {
	q := strings.TrimSpace(r.Query)
	switch {
	case q == "":
		return fmt.Errorf("the query is empty")
	case utf8.RuneCountInString(q) > MaxQueryLen:
		return fmt.Errorf("the query has %d characters; Brave takes at most %d", utf8.RuneCountInString(q), MaxQueryLen)
	case r.Count < 0 || r.Count > MaxCount:
		return fmt.Errorf("count %d: want 1 to %d", r.Count, MaxCount)
	case r.Offset < 0 || r.Offset > MaxOffset:
		return fmt.Errorf("offset %d: want 0 to %d", r.Offset, MaxOffset)
	}
	switch r.SafeSearch {
	case "", "off", "moderate", "strict":
	default:
		return fmt.Errorf("safesearch %q: want off, moderate or strict", r.SafeSearch)
	}
	return nil
}

// WebSearch runs GET /web/search. Descriptions come without Brave's
// <strong> decorations (text_decorations=false).
func (c *Client) WebSearch(ctx context.Context, r WebSearchRequest) (*WebSearchResponse, error) {
	if err := r.Check(); err != nil {
		return nil, &APIError{Endpoint: "GET " + c.api.Base.Host + c.api.Base.Path + "/web/search", Message: err.Error()}
	}
	q := url.Values{"q": {strings.TrimSpace(r.Query)}, "text_decorations": {"false"}}
	if r.Count > 0 {
		q.Set("count", strconv.Itoa(r.Count))
	}
	if r.Offset > 0 {
		q.Set("offset", strconv.Itoa(r.Offset))
	}
	for k, v := range map[string]string{"country": r.Country, "search_lang": r.SearchLang, "safesearch": r.SafeSearch, "freshness": r.Freshness} {
		if v != "" {
			q.Set(k, v)
		}
	}
	body, h, err := c.get(ctx, "/web/search", q)
	if err != nil {
		return nil, err
	}
	var w struct {
		Type  string `json:"type"`
		Query struct {
			Original    string `json:"original"`
			Altered     string `json:"altered"`
			MoreResults bool   `json:"more_results_available"`
		} `json:"query"`
		Web *struct {
			Results []struct {
				Title         string   `json:"title"`
				URL           string   `json:"url"`
				Description   string   `json:"description"`
				Age           string   `json:"age"`
				PageAge       string   `json:"page_age"`
				ExtraSnippets []string `json:"extra_snippets"`
			} `json:"results"`
		} `json:"web"`
	}
	if err := json.Unmarshal(body, &w); err != nil || w.Type != "search" {
		msg := "the answer is not a Brave search result (want {\"type\":\"search\",...}): " + httpapi.Snippet(body)
		return nil, &APIError{Endpoint: "GET " + c.api.Base.Host + c.api.Base.Path + "/web/search", Status: 200, Message: msg, Err: err}
	}
	out := &WebSearchResponse{Query: w.Query.Original, MoreResults: w.Query.MoreResults, Remaining: h.Get("X-RateLimit-Remaining")}
	if w.Query.Altered != "" {
		out.Query = w.Query.Altered
	}
	if w.Web != nil {
		for _, r := range w.Web.Results {
			if r.URL == "" {
				continue
			}
			out.Results = append(out.Results, WebResult{
				Title: r.Title, URL: r.URL, Description: r.Description,
				Age: r.Age, PageAge: r.PageAge, ExtraSnippets: r.ExtraSnippets,
			})
		}
	}
	return out, nil
}
