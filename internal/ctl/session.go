package ctl

import (
	"context"
	"encoding/json"
	"net/url"
)

// SessionDetail is one session as `choirctl session show` shows it: its
// row, why it ended, and the session summary (§11.8) the final heartbeat
// of its last graceful stop carried, when one did. The summary is a JSON
// object written by the agent's model: {title, summary, decisions,
// open_items, facts} today.
type SessionDetail struct {
	SessionInfo
	EndReason string          `json:"end_reason,omitempty"`
	Summary   json.RawMessage `json:"summary,omitempty"`
}

// Session returns one session with its summary.
func (c *Client) Session(ctx context.Context, sessionID string) (*SessionDetail, error) {
	var out SessionDetail
	if err := c.getJSON(ctx, "/v1/sessions/"+url.PathEscape(sessionID), &out); err != nil {
		return nil, err
	}
	return &out, nil
}
