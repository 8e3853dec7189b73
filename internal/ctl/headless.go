package ctl

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"time"
)

// Headless runs (issue 16, seed 002 §10): the director's work items, runs,
// receipts and AHDB state vector over the admin socket. The seed's paths
// are served as written (POST /run, GET /state/ahdb, ...) and under /v1
// like every other admin endpoint; the client uses /v1.
//
//	POST /v1/work_item            WorkItemRequest → WorkItemResult
//	                               (op create, split, update or cancel)
//	GET  /v1/work_items[?agent=&status=] → []WorkItem, oldest first
//	GET  /v1/work_item/<id>       → WorkItemDetail
//	POST /v1/run                  RunRequest → Run (queued)
//	GET  /v1/runs[?agent=&work_item=] → []Run, newest first
//	GET  /v1/run/<id>             → RunDetail
//	POST /v1/run/<id>/note        NoteRequest → Appended
//	POST /v1/run/<id>/verify      AttestationRequest → Appended
//	POST /v1/run/<id>/commit_request CommitRequestBody → Appended
//	GET  /v1/run/<id>/context     → RunContext (run_context.go)
//	GET  /v1/receipts/<run id>[?after=<seq>] → []Receipt
//	GET  /v1/state/ahdb[?agent=]  → AHDBState
//
// These types mirror choird/headless's JSON, which choird writes as it is;
// choird's tests decode its answers into them with unknown fields refused.

// WorkItemSpec is a work item to create, or a child of a split.
type WorkItemSpec struct {
	Agent       string   `json:"agent,omitempty"`
	Description string   `json:"description"`
	Acceptance  []string `json:"acceptance"`
	Verifiers   []string `json:"verifiers,omitempty"`
	Risk        string   `json:"risk,omitempty"`
	DependsOn   []string `json:"depends_on,omitempty"`
}

// WorkItemChange changes an open work item; an absent field stays.
type WorkItemChange struct {
	Description *string   `json:"description,omitempty"`
	Acceptance  *[]string `json:"acceptance,omitempty"`
	Verifiers   *[]string `json:"verifiers,omitempty"`
	Risk        *string   `json:"risk,omitempty"`
	DependsOn   *[]string `json:"depends_on,omitempty"`
}

// WorkItemRequest is POST /work_item: Op create (Item), split (ID,
// Children), update (ID, Update) or cancel (ID).
type WorkItemRequest struct {
	Op       string          `json:"op"`
	ID       string          `json:"id,omitempty"`
	Item     *WorkItemSpec   `json:"item,omitempty"`
	Children []WorkItemSpec  `json:"children,omitempty"`
	Update   *WorkItemChange `json:"update,omitempty"`
	// Request (split only, instead of Children): a run's SplitRequest
	// receipt, <run id>#<seq>, whose proposed children a human accepts.
	Request string `json:"request,omitempty"`
}

// WorkItem is a work item as the director holds it; Status is open,
// ready, running, done, split, cancelled or blocked.
type WorkItem struct {
	ID          string    `json:"id"`
	Agent       string    `json:"agent"`
	Description string    `json:"description"`
	Acceptance  []string  `json:"acceptance"`
	Verifiers   []string  `json:"verifiers"`
	Risk        string    `json:"risk"`
	DependsOn   []string  `json:"depends_on"`
	Parent      string    `json:"parent,omitempty"`
	Status      string    `json:"status"`
	Created     time.Time `json:"created"`
	Updated     time.Time `json:"updated"`
}

// WorkItemResult answers POST /work_item: the item, and a split's
// children.
type WorkItemResult struct {
	Item     WorkItem   `json:"item"`
	Children []WorkItem `json:"children,omitempty"`
}

// WorkItemDetail is one work item with its children and runs.
type WorkItemDetail struct {
	Item     WorkItem `json:"item"`
	Children []string `json:"children"`
	Runs     []Run    `json:"runs"`
}

// Budgets bound a run; zero is the mood's default.
type Budgets struct {
	Tokens      int64 `json:"tokens,omitempty"`
	WallSeconds int64 `json:"wall_seconds,omitempty"`
	ToolCalls   int64 `json:"tool_calls,omitempty"`
}

// RunRequest is POST /run: a queued run of a ready work item.
type RunRequest struct {
	WorkItem string  `json:"work_item"`
	Mood     string  `json:"mood,omitempty"`
	Trigger  string  `json:"trigger,omitempty"`
	Budgets  Budgets `json:"budgets,omitzero"`
}

// Run is one run; Status is queued, running, verifying,
// awaiting_approval, committed, failed, discarded or cancelled.
type Run struct {
	ID       string    `json:"id"`
	WorkItem string    `json:"work_item"`
	Agent    string    `json:"agent"`
	Mood     string    `json:"mood"`
	Trigger  string    `json:"trigger"`
	Budgets  Budgets   `json:"budgets"`
	Status   string    `json:"status"`
	Base     string    `json:"base,omitempty"`
	Worktree string    `json:"worktree,omitempty"`
	Created  time.Time `json:"created"`
	Ended    time.Time `json:"ended,omitzero"`
}

// CommitCheck is the director's policy check of a run's commit.
type CommitCheck struct {
	Ready      bool     `json:"ready"`
	Missing    []string `json:"missing,omitempty"`
	NeedsHuman bool     `json:"needs_human,omitempty"`
	Passing    []string `json:"passing,omitempty"`
	Evidence   []string `json:"evidence,omitempty"`
	Request    string   `json:"request,omitempty"`
	Patch      string   `json:"patch,omitempty"`
	Gates      []string `json:"gates,omitempty"` // the doc gates the patch passes (DOCTRINE, SPECS)
}

// RunDetail is one run with its receipt count and commit check.
type RunDetail struct {
	Run      Run         `json:"run"`
	Receipts int         `json:"receipts"`
	Check    CommitCheck `json:"check"`
}

// Receipt is one entry of a run's append-only log; Ref cites it.
type Receipt struct {
	Seq     int64           `json:"seq"`
	RunID   string          `json:"run_id"`
	Kind    string          `json:"kind"`
	Body    json.RawMessage `json:"body"`
	Objects []string        `json:"objects"`
	At      time.Time       `json:"at"`
}

// Ref is how a receipt is cited: <run id>#<seq>.
func (r Receipt) Ref() string { return r.RunID + "#" + strconv.FormatInt(r.Seq, 10) }

// Appended answers an append: the receipt, and whether this request made
// it (false: a resend under the same idempotency key, nothing appended).
type Appended struct {
	Receipt  Receipt `json:"receipt"`
	Appended bool    `json:"appended"`
}

// NoteRequest is POST /run/<id>/note: a typed note (seed 002 §9).
type NoteRequest struct {
	Type           string   `json:"type"`
	Text           string   `json:"text,omitempty"`
	Test           string   `json:"test,omitempty"`
	Budget         *Budgets `json:"budget,omitempty"`
	Bound          string   `json:"bound,omitempty"`
	Claim          string   `json:"claim,omitempty"`
	Edge           string   `json:"edge,omitempty"`
	DeltaO         string   `json:"delta_o,omitempty"`
	Scope          string   `json:"scope,omitempty"`
	AntiDrive      string   `json:"anti_drive,omitempty"`
	Trigger        string   `json:"trigger,omitempty"`
	Effect         string   `json:"effect,omitempty"`
	Verifiers      []string `json:"verifiers,omitempty"`
	Cites          []string `json:"cites,omitempty"`
	Retracts       string   `json:"retracts,omitempty"`
	IdempotencyKey string   `json:"idempotency_key,omitempty"`
}

// AttestationRequest is POST /run/<id>/verify.
type AttestationRequest struct {
	Verifier       string   `json:"verifier"`
	Passed         bool     `json:"passed"`
	Summary        string   `json:"summary,omitempty"`
	Signature      string   `json:"signature,omitempty"`
	Patch          string   `json:"patch,omitempty"` // SHA-256 of the diff it verified
	Artifacts      []string `json:"artifacts,omitempty"`
	Supports       []string `json:"supports,omitempty"`
	IdempotencyKey string   `json:"idempotency_key,omitempty"`
}

// CommitRequestBody is POST /run/<id>/commit_request. Cites are the
// receipts ("<run id>#<seq>") and objects ("sha256:<hex>") the summary
// rests on; object pointers named in the summary are cited too, and a
// cited object that is missing or changed refuses the request (400).
type CommitRequestBody struct {
	Summary        string   `json:"summary"`
	Patch          string   `json:"patch"`
	Cites          []string `json:"cites,omitempty"`
	IdempotencyKey string   `json:"idempotency_key,omitempty"`
}

// RunDecision is POST /run/<id>/decision: a human's decision on a run
// that waits for one (a high-risk work item's commit). By names who
// decided (recorded as "human:<by>").
type RunDecision struct {
	Approve bool   `json:"approve"`
	Reason  string `json:"reason,omitempty"`
	By      string `json:"by"`
}

// DecideRun records a human's decision on a run's commit request; the
// director loop then commits it or ends it.
func (c *Client) DecideRun(ctx context.Context, runID string, d RunDecision) (*Appended, error) {
	var out Appended
	if err := c.postJSON(ctx, "/v1/run/"+url.PathEscape(runID)+"/decision", d, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AHDBState is the state vector rebuilt from receipts (seed 002 §5).
type AHDBState struct {
	Assert []struct {
		Ref   string   `json:"ref"`
		Text  string   `json:"text"`
		Cites []string `json:"cites"`
	} `json:"assert"`
	Hypothesize []struct {
		Ref    string   `json:"ref"`
		Text   string   `json:"text"`
		Test   string   `json:"test"`
		Budget Budgets  `json:"budget"`
		Cites  []string `json:"cites,omitempty"`
	} `json:"hypothesize"`
	Drive []struct {
		Ref       string `json:"ref"`
		Text      string `json:"text"`
		AntiDrive string `json:"anti_drive"`
	} `json:"drive"`
	Believe []struct {
		Ref     string `json:"ref"`
		Text    string `json:"text"`
		Trigger string `json:"trigger"`
		Effect  string `json:"effect"`
	} `json:"believe"`
	Hyperthesis []struct {
		Ref       string `json:"ref"`
		Text      string `json:"text"`
		Bound     string `json:"bound"`
		Mitigated string `json:"mitigated,omitempty"`
	} `json:"hyperthesis"`
	Conjectures []struct {
		Ref     string `json:"ref"`
		Claim   string `json:"claim"`
		Test    string `json:"test"`
		Edge    string `json:"edge"`
		DeltaO  string `json:"delta_o"`
		Scope   string `json:"scope"`
		Cited   int    `json:"cited"`
		Outcome string `json:"outcome,omitempty"`
		By      string `json:"by,omitempty"`
	} `json:"conjectures"`
	Requests []struct {
		Ref       string   `json:"ref"`
		Type      string   `json:"type"`
		Text      string   `json:"text"`
		Verifiers []string `json:"verifiers,omitempty"`
	} `json:"requests"`
	Refuted []struct {
		Ref  string `json:"ref"`
		Text string `json:"text"`
		By   string `json:"by"`
	} `json:"refuted"`
	Retracted []struct {
		Ref string `json:"ref"`
		By  string `json:"by"`
	} `json:"retracted"`
	Refused []struct {
		Ref string `json:"ref"`
		Why string `json:"why"`
	} `json:"refused"`
	PlanNext *struct {
		Conjecture string `json:"conjecture"`
		Claim      string `json:"claim"`
		Test       string `json:"test"`
		Scope      string `json:"scope"`
		Rule       string `json:"rule"`
	} `json:"plan_next"`
	Runs     map[string]string `json:"runs"`
	Deltas   map[string]int    `json:"deltas"`
	Receipts int               `json:"receipts"`
	Skipped  []struct {
		Ref string `json:"ref"`
		Why string `json:"why"`
	} `json:"skipped"`
}

// WorkItemOp sends POST /v1/work_item.
func (c *Client) WorkItemOp(ctx context.Context, req WorkItemRequest) (*WorkItemResult, error) {
	var out WorkItemResult
	if err := c.postJSON(ctx, "/v1/work_item", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// WorkItems lists work items of an agent and a status ("" for any).
func (c *Client) WorkItems(ctx context.Context, agent, status string) ([]WorkItem, error) {
	v := url.Values{}
	if agent != "" {
		v.Set("agent", agent)
	}
	if status != "" {
		v.Set("status", status)
	}
	var out []WorkItem
	return out, c.getJSON(ctx, "/v1/work_items?"+v.Encode(), &out)
}

// WorkItem shows one work item.
func (c *Client) WorkItem(ctx context.Context, id string) (*WorkItemDetail, error) {
	var out WorkItemDetail
	if err := c.getJSON(ctx, "/v1/work_item/"+url.PathEscape(id), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// StartRun queues a run of a work item.
func (c *Client) StartRun(ctx context.Context, req RunRequest) (*Run, error) {
	var out Run
	if err := c.postJSON(ctx, "/v1/run", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Runs lists runs of an agent and a work item ("" for any).
func (c *Client) Runs(ctx context.Context, agent, workItem string) ([]Run, error) {
	v := url.Values{}
	if agent != "" {
		v.Set("agent", agent)
	}
	if workItem != "" {
		v.Set("work_item", workItem)
	}
	var out []Run
	return out, c.getJSON(ctx, "/v1/runs?"+v.Encode(), &out)
}

// Run shows one run.
func (c *Client) Run(ctx context.Context, id string) (*RunDetail, error) {
	var out RunDetail
	if err := c.getJSON(ctx, "/v1/run/"+url.PathEscape(id), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Receipts lists a run's receipts after a seq.
func (c *Client) Receipts(ctx context.Context, runID string, after int64) ([]Receipt, error) {
	var out []Receipt
	return out, c.getJSON(ctx, "/v1/receipts/"+url.PathEscape(runID)+"?after="+strconv.FormatInt(after, 10), &out)
}

// AHDB fetches the state vector of an agent ("" for all).
func (c *Client) AHDB(ctx context.Context, agent string) (*AHDBState, error) {
	var out AHDBState
	if err := c.getJSON(ctx, "/v1/state/ahdb?agent="+url.QueryEscape(agent), &out); err != nil {
		return nil, err
	}
	return &out, nil
}
