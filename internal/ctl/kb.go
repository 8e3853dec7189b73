package ctl

import "context"

// KBSearch is the body of POST /v1/kb/search: a search of the local
// knowledge base of headless runs (seed 002 §2.4). Agent and Kind filter
// ("" for any); Limit 0 means choird's default (10), at most 100.
type KBSearch struct {
	Query string `json:"query"`
	Agent string `json:"agent,omitempty"`
	Kind  string `json:"kind,omitempty"`
	Limit int    `json:"limit,omitempty"`
}

// KBPointer is one object found: its SHA-256, kind, a snippet of at most a
// few hundred characters (untrusted data) and its score; never the
// object's content. It mirrors headless.Pointer, and is cited as
// "sha256:<object>".
type KBPointer struct {
	Object  string  `json:"object"`
	Kind    string  `json:"kind"`
	Snippet string  `json:"snippet,omitempty"`
	Score   float64 `json:"score,omitempty"`
}

// KBAnswer is the answer to a KBSearch: the pointers, best first, how
// they were found (hybrid, or text when the query could not be embedded)
// and a note saying why it fell back.
type KBAnswer struct {
	Pointers []KBPointer `json:"pointers"`
	Mode     string      `json:"mode"`
	Note     string      `json:"note,omitempty"`
}

// KBSearch searches the knowledge base.
func (c *Client) KBSearch(ctx context.Context, q KBSearch) (*KBAnswer, error) {
	var out KBAnswer
	if err := c.postJSON(ctx, "/v1/kb/search", q, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
