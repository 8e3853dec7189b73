package control

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"choir/choird/approval"
	"choir/choird/headless"
	"choir/internal/ctl"
)

// The headless runs' endpoints (issue 16, seed 002 §10; internal/ctl's
// headless.go lists them): work items, runs, notes, attestations, commit
// requests, receipts and the AHDB state vector, through the director. They
// are served at the seed's paths and under /v1.

// Bounds of a headless request's body: a split carries up to 32 children.
const (
	maxRunBody      = 64 << 10
	maxWorkItemBody = 512 << 10
)

// SetDirector connects the director of headless runs.
func (p *Plane) SetDirector(d *headless.Director) {
	p.mu.Lock()
	p.director = d
	p.mu.Unlock()
}

// RunDecider records a person's decision on a run that waits for one
// through the run's approval (choird/headless/signoff), so that `choirctl
// run approve|reject` and `choirctl approval approve|reject` decide the
// same approval: the first decision stands.
type RunDecider interface {
	DecideRun(ctx context.Context, runID string, approve bool, by, reason string) (headless.Receipt, bool, error)
}

// SetRunDecider connects the runs' approvals.
func (p *Plane) SetRunDecider(d RunDecider) {
	p.mu.Lock()
	p.runDecider = d
	p.mu.Unlock()
}

func (p *Plane) headlessDirector() (*headless.Director, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.director == nil {
		return nil, ctl.Errorf(http.StatusServiceUnavailable, "unavailable", "headless runs are not available in this choird")
	}
	return p.director, nil
}

// headlessError gives a director's refusal its HTTP status and code.
func headlessError(err error) error {
	var e *ctl.Error
	if errors.As(err, &e) {
		return e
	}
	for _, m := range []struct {
		target error
		status int
		code   string
	}{
		{headless.ErrInvalidInput, http.StatusBadRequest, "invalid_input"},
		{headless.ErrNotFound, http.StatusNotFound, "not_found"},
		{headless.ErrActiveRun, http.StatusConflict, "active_run"},
		{headless.ErrRunEnded, http.StatusConflict, "run_ended"},
		{headless.ErrKeyReused, http.StatusConflict, "key_reused"},
		{headless.ErrExists, http.StatusConflict, "exists"},
		{headless.ErrConflict, http.StatusConflict, "conflict"},
	} {
		if errors.Is(err, m.target) {
			return ctl.Errorf(m.status, m.code, "%v", err)
		}
	}
	return ctl.Errorf(http.StatusInternalServerError, "internal", "%v", err)
}

func spec(s ctl.WorkItemSpec) headless.NewWorkItem {
	return headless.NewWorkItem{Agent: s.Agent, Description: s.Description, Acceptance: s.Acceptance,
		Verifiers: s.Verifiers, Risk: headless.Risk(s.Risk), DependsOn: s.DependsOn}
}

func budgets(b ctl.Budgets) headless.Budgets {
	return headless.Budgets{Tokens: b.Tokens, WallSeconds: b.WallSeconds, ToolCalls: b.ToolCalls}
}

// workItemOp carries out POST /work_item.
func workItemOp(ctx context.Context, d *headless.Director, req ctl.WorkItemRequest) (any, error) {
	type result struct {
		Item     headless.WorkItem   `json:"item"`
		Children []headless.WorkItem `json:"children,omitempty"`
	}
	only := func(op string, ok bool) error {
		if !ok {
			return ctl.Errorf(http.StatusBadRequest, "bad_request", "work_item op %s: give only the fields it takes (create: item; split: id, children or request; update: id, update; cancel: id)", op)
		}
		return nil
	}
	switch req.Op {
	case "create", "":
		if err := only("create", req.Item != nil && req.ID == "" && req.Children == nil && req.Update == nil && req.Request == ""); err != nil {
			return nil, err
		}
		it, err := d.AddWorkItem(ctx, spec(*req.Item))
		return result{Item: it}, err
	case "split":
		if err := only("split", req.ID != "" && req.Item == nil && req.Update == nil && (req.Children == nil || req.Request == "")); err != nil {
			return nil, err
		}
		if req.Request != "" { // a human accepts a run's SPLIT_REQUEST (headless/split.go)
			parent, kids, err := d.SplitByRequest(ctx, req.ID, req.Request)
			return result{Item: parent, Children: kids}, err
		}
		children := make([]headless.NewWorkItem, len(req.Children))
		for i, c := range req.Children {
			children[i] = spec(c)
		}
		parent, kids, err := d.SplitWorkItem(ctx, req.ID, children)
		return result{Item: parent, Children: kids}, err
	case "update":
		if err := only("update", req.ID != "" && req.Update != nil && req.Item == nil && req.Children == nil && req.Request == ""); err != nil {
			return nil, err
		}
		u := req.Update
		up := headless.WorkItemUpdate{Description: u.Description, Acceptance: u.Acceptance, Verifiers: u.Verifiers, DependsOn: u.DependsOn}
		if u.Risk != nil {
			r := headless.Risk(*u.Risk)
			up.Risk = &r
		}
		it, err := d.UpdateWorkItem(ctx, req.ID, up)
		return result{Item: it}, err
	case "cancel":
		if err := only("cancel", req.ID != "" && req.Item == nil && req.Children == nil && req.Update == nil && req.Request == ""); err != nil {
			return nil, err
		}
		it, err := d.CancelWorkItem(ctx, req.ID)
		return result{Item: it}, err
	}
	return nil, ctl.Errorf(http.StatusBadRequest, "bad_request", "work_item op %q: want create, split, update or cancel", req.Op)
}

func (p *Plane) registerHeadlessRoutes(mux *http.ServeMux) {
	// handle serves one endpoint at the seed's path and under /v1.
	handle := func(method, path string, h func(d *headless.Director, w http.ResponseWriter, r *http.Request) (any, error)) {
		f := func(w http.ResponseWriter, r *http.Request) {
			d, err := p.headlessDirector()
			if err != nil {
				writeError(w, err)
				return
			}
			out, err := h(d, w, r)
			if err != nil {
				writeError(w, headlessError(err))
				return
			}
			writeJSON(w, out)
		}
		mux.HandleFunc(method+" "+path, f)
		mux.HandleFunc(method+" /v1"+path, f)
	}
	decode := func(w http.ResponseWriter, r *http.Request, max int64, what string, v any) error {
		return ctl.DecodeRequest(w, r, max, what, v)
	}

	handle("POST", "/work_item", func(d *headless.Director, w http.ResponseWriter, r *http.Request) (any, error) {
		var req ctl.WorkItemRequest
		if err := decode(w, r, maxWorkItemBody, "work_item", &req); err != nil {
			return nil, err
		}
		return workItemOp(r.Context(), d, req)
	})
	handle("GET", "/work_items", func(d *headless.Director, w http.ResponseWriter, r *http.Request) (any, error) {
		q := r.URL.Query()
		status := headless.WorkStatus(q.Get("status"))
		switch status {
		case "", headless.WorkOpen, headless.WorkReady, headless.WorkRunning, headless.WorkDone, headless.WorkSplit, headless.WorkCancelled, headless.WorkBlocked:
		default:
			return nil, ctl.Errorf(http.StatusBadRequest, "bad_request", "work_items ?status=%q: want open, ready, running, done, split, cancelled or blocked", status)
		}
		return d.WorkItems(r.Context(), headless.WorkFilter{Agent: q.Get("agent"), Status: status})
	})
	handle("GET", "/work_item/{id}", func(d *headless.Director, w http.ResponseWriter, r *http.Request) (any, error) {
		id := r.PathValue("id")
		it, err := d.WorkItem(r.Context(), id)
		if err != nil {
			return nil, err
		}
		kids, err := d.Children(r.Context(), id)
		if err != nil {
			return nil, err
		}
		runs, err := d.Runs(r.Context(), "", id)
		return struct {
			Item     headless.WorkItem `json:"item"`
			Children []string          `json:"children"`
			Runs     []headless.Run    `json:"runs"`
		}{it, kids, runs}, err
	})
	handle("POST", "/run", func(d *headless.Director, w http.ResponseWriter, r *http.Request) (any, error) {
		var req ctl.RunRequest
		if err := decode(w, r, maxRunBody, "run", &req); err != nil {
			return nil, err
		}
		return d.StartRun(r.Context(), headless.NewRun{WorkItem: req.WorkItem, Mood: req.Mood, Trigger: req.Trigger, Budgets: budgets(req.Budgets)})
	})
	handle("GET", "/runs", func(d *headless.Director, w http.ResponseWriter, r *http.Request) (any, error) {
		q := r.URL.Query()
		return d.Runs(r.Context(), q.Get("agent"), q.Get("work_item"))
	})
	handle("GET", "/run/{id}", func(d *headless.Director, w http.ResponseWriter, r *http.Request) (any, error) {
		run, err := d.Run(r.Context(), r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		rs, err := d.Receipts(r.Context(), run.ID, 0)
		if err != nil {
			return nil, err
		}
		check, err := d.CommitCheck(r.Context(), run.ID)
		return struct {
			Run      headless.Run         `json:"run"`
			Receipts int                  `json:"receipts"`
			Check    headless.CommitCheck `json:"check"`
		}{run, len(rs), check}, err
	})
	appended := func(rec headless.Receipt, fresh bool, err error) (any, error) {
		if err != nil {
			return nil, err
		}
		return struct {
			Receipt  headless.Receipt `json:"receipt"`
			Appended bool             `json:"appended"`
		}{rec, fresh}, nil
	}
	handle("POST", "/run/{id}/note", func(d *headless.Director, w http.ResponseWriter, r *http.Request) (any, error) {
		var req ctl.NoteRequest
		if err := decode(w, r, maxRunBody, "note", &req); err != nil {
			return nil, err
		}
		n := headless.Note{Type: headless.NoteType(req.Type), Text: req.Text, Test: req.Test, Bound: req.Bound,
			Claim: req.Claim, Edge: req.Edge, DeltaO: req.DeltaO, Scope: req.Scope, AntiDrive: req.AntiDrive,
			Trigger: req.Trigger, Effect: req.Effect, Verifiers: req.Verifiers, Cites: req.Cites, Retracts: req.Retracts}
		if req.Budget != nil {
			b := budgets(*req.Budget)
			n.Budget = &b
		}
		return appended(d.AddNote(r.Context(), r.PathValue("id"), n, req.IdempotencyKey))
	})
	handle("POST", "/run/{id}/verify", func(d *headless.Director, w http.ResponseWriter, r *http.Request) (any, error) {
		var req ctl.AttestationRequest
		if err := decode(w, r, maxRunBody, "verify", &req); err != nil {
			return nil, err
		}
		a := headless.Attestation{Verifier: req.Verifier, Passed: req.Passed, Summary: req.Summary,
			Signature: req.Signature, Patch: req.Patch, Artifacts: req.Artifacts, Supports: req.Supports}
		return appended(d.Attest(r.Context(), r.PathValue("id"), a, req.IdempotencyKey))
	})
	handle("POST", "/run/{id}/commit_request", func(d *headless.Director, w http.ResponseWriter, r *http.Request) (any, error) {
		var req ctl.CommitRequestBody
		if err := decode(w, r, maxRunBody, "commit_request", &req); err != nil {
			return nil, err
		}
		return appended(d.RequestCommit(r.Context(), r.PathValue("id"), headless.CommitRequest{Summary: req.Summary, Patch: req.Patch, Cites: req.Cites}, req.IdempotencyKey))
	})
	handle("POST", "/run/{id}/decision", func(d *headless.Director, w http.ResponseWriter, r *http.Request) (any, error) {
		var req ctl.RunDecision
		if err := decode(w, r, maxRunBody, "decision", &req); err != nil {
			return nil, err
		}
		if req.By == "" {
			return nil, ctl.Errorf(http.StatusBadRequest, "bad_request", "decision: say who decides in \"by\" (choirctl sends your user name)")
		}
		p.mu.RLock()
		rd := p.runDecider
		p.mu.RUnlock()
		if rd == nil {
			return appended(d.DecideCommit(r.Context(), r.PathValue("id"), req.Approve, "human:"+req.By, req.Reason, ""))
		}
		out, err := appended(rd.DecideRun(r.Context(), r.PathValue("id"), req.Approve, req.By, req.Reason))
		if errors.Is(err, approval.ErrAlreadyDecided) {
			return nil, approvalError(err)
		}
		return out, err
	})
	handle("GET", "/receipts/{id}", func(d *headless.Director, w http.ResponseWriter, r *http.Request) (any, error) {
		var after int64
		if s := r.URL.Query().Get("after"); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 0 {
				return nil, ctl.Errorf(http.StatusBadRequest, "bad_request", "receipts ?after=%q: want a receipt seq (0 or more)", s)
			}
			after = n
		}
		return d.Receipts(r.Context(), r.PathValue("id"), after)
	})
	handle("GET", "/state/ahdb", func(d *headless.Director, w http.ResponseWriter, r *http.Request) (any, error) {
		return d.State(r.Context(), r.URL.Query().Get("agent"))
	})
}
