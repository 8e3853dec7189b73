package ctl

import (
	"context"
	"net/url"
	"time"
)

// UsageQuery asks for the usage ledger (choirctl usage): one agent or all,
// since a time (zero: all), grouped by agent (default), model, session or
// day.
type UsageQuery struct {
	Agent string    `json:"agent,omitempty"`
	Since time.Time `json:"since,omitzero"`
	By    string    `json:"by,omitempty"`
}

// UsageRow is one group of the report; Key is the agent, model, session or
// day (YYYY-MM-DD, UTC), and Agent the session's agent when grouped by
// session. Unpriced counts calls whose cost is unknown (a model without a
// price, no cost from the provider): they count in tokens only.
type UsageRow struct {
	Key              string  `json:"key"`
	Agent            string  `json:"agent,omitempty"`
	Calls            int64   `json:"calls"`
	Failed           int64   `json:"failed"`
	PromptTokens     int64   `json:"prompt_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	CachedTokens     int64   `json:"cached_tokens"`
	Cost             float64 `json:"cost"`
	Unpriced         int64   `json:"unpriced,omitempty"`
}

// UsageReport is the answer: the rows, their currency, and today's spend
// against the caps per agent asked ("" when no daily cap applies).
type UsageReport struct {
	By       string            `json:"by"`
	Currency string            `json:"currency"`
	Rows     []UsageRow        `json:"rows"`
	Today    map[string]string `json:"today,omitempty"`
}

// UsageAllow is a one-off raise of an agent's caps (choirctl usage allow):
// Amount more in the installation's currency, or in tokens, until Until.
type UsageAllow struct {
	Agent  string    `json:"agent"`
	Amount float64   `json:"amount"`
	Tokens bool      `json:"tokens,omitempty"`
	Until  time.Time `json:"until"`
}

// Usage reads the usage ledger.
func (c *Client) Usage(ctx context.Context, q UsageQuery) (*UsageReport, error) {
	v := url.Values{}
	if q.Agent != "" {
		v.Set("agent", q.Agent)
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.UTC().Format(time.RFC3339))
	}
	if q.By != "" {
		v.Set("by", q.By)
	}
	var out UsageReport
	if err := c.getJSON(ctx, "/v1/usage?"+v.Encode(), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AllowUsage grants a raise; choird logs it.
func (c *Client) AllowUsage(ctx context.Context, a UsageAllow) error {
	return c.postJSON(ctx, "/v1/usage/allow", a, nil)
}
