package ctl

import (
	"context"
	"net/url"
)

// GET /v1/run/<id>/context → RunContext: the context pack a headless run
// was given (seed 002 §2.1), rebuilt by choird from the run's latest
// ContextFootprint receipt and the object store: what went in, by content
// hash, and the prompt those parts join to (checked against the
// footprint's hash of the whole). 404 for an unknown run or one without a
// footprint yet (queued); 500 "rebuild_failed" when an object it names is
// missing or changed.

// RunContext is a run's rebuilt context pack.
type RunContext struct {
	Run       string           `json:"run"`
	Receipt   string           `json:"receipt"`   // the ContextFootprint it was rebuilt from, <run id>#<seq>
	Objective string           `json:"objective"` // object hash of the whole prompt
	Parts     []RunContextPart `json:"parts"`     // in prompt order; none for a footprint older than parts
	Budget    int              `json:"budget_tokens"`
	Tokens    int              `json:"tokens"` // the prompt's estimate (bytes/4)
	LeftOut   []RunContextOmit `json:"left_out"`
	Evidence  []string         `json:"evidence"` // knowledge-base pointers in the pack, sha256:<hex>
	Cites     []string         `json:"cites"`    // receipts the prompt cites
	Tools     []string         `json:"tools"`
	Mood      string           `json:"mood"`
	Network   bool             `json:"network"`
	Repo      string           `json:"repo"`
	Target    string           `json:"target"`
	Base      string           `json:"base"`
	Prompt    string           `json:"prompt"` // the run session's objective, as the agent got it
}

// RunContextPart is one part of the prompt, stored as an object.
type RunContextPart struct {
	Name   string `json:"name"` // work_item, plan_next, state, earlier, evidence, left_out, instructions
	Object string `json:"object"`
	Tokens int    `json:"tokens"`
}

// RunContextOmit says how many entries of a kind the budget left out.
type RunContextOmit struct {
	What  string `json:"what"`
	Count int    `json:"count"`
}

// RunContext fetches a run's rebuilt context pack.
func (c *Client) RunContext(ctx context.Context, runID string) (*RunContext, error) {
	var out RunContext
	if err := c.getJSON(ctx, "/v1/run/"+url.PathEscape(runID)+"/context", &out); err != nil {
		return nil, err
	}
	return &out, nil
}
