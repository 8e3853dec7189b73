package runner

import (
	"context"
	"net/http"

	"choir/choird/headless"
	"choir/internal/ctl"
)

// Contexts gives the operator a run's context pack (choirctl run context):
// its latest ContextFootprint and the prompt rebuilt from it (Rebuild),
// read from the director's receipts and the object store. It is
// control.RunContexts.
type Contexts struct {
	Director *headless.Director
	Objects  Getter
}

// RunContext rebuilds run runID's context pack. An unknown run is
// headless.ErrNotFound; a run without a footprint yet, or one whose
// objects cannot rebuild it, is a *ctl.Error saying so.
func (c Contexts) RunContext(ctx context.Context, runID string) (ctl.RunContext, error) {
	if _, err := c.Director.Run(ctx, runID); err != nil {
		return ctl.RunContext{}, err
	}
	rs, err := c.Director.Receipts(ctx, runID, 0)
	if err != nil {
		return ctl.RunContext{}, err
	}
	var ref string // the latest footprint's, as where reads it
	for _, rec := range rs {
		if rec.Kind == headless.KindContextFootprint {
			ref = rec.Ref()
		}
	}
	fp, _, _ := where(rs)
	if fp == nil {
		return ctl.RunContext{}, ctl.Errorf(http.StatusNotFound, "no_context",
			"run %s has no ContextFootprint receipt: its context is built when it starts (see choirctl run show %s)", runID, runID)
	}
	if c.Objects == nil {
		return ctl.RunContext{}, ctl.Errorf(http.StatusServiceUnavailable, "unavailable", "rebuild the context of run %s: this choird has no object store", runID)
	}
	prompt, err := Rebuild(*fp, c.Objects)
	if err != nil {
		return ctl.RunContext{}, ctl.Errorf(http.StatusInternalServerError, "rebuild_failed",
			"run %s, footprint %s: %v (the object store under ~/.choir.d/objects lost or changed an object the receipt names)", runID, ref, err)
	}
	out := ctl.RunContext{Run: runID, Receipt: ref, Objective: fp.Objective, Parts: []ctl.RunContextPart{},
		Budget: fp.Budget, Tokens: fp.Tokens, LeftOut: []ctl.RunContextOmit{}, Evidence: nonNil(fp.Evidence), Cites: nonNil(fp.Cites),
		Tools: nonNil(fp.Tools), Mood: fp.Mood, Network: fp.Network, Repo: fp.Repo, Target: fp.Target, Base: fp.Base, Prompt: prompt}
	for _, p := range fp.Parts {
		out.Parts = append(out.Parts, ctl.RunContextPart{Name: p.Name, Object: p.Object, Tokens: p.Tokens})
	}
	for _, o := range fp.LeftOut {
		out.LeftOut = append(out.LeftOut, ctl.RunContextOmit{What: o.What, Count: o.Count})
	}
	return out, nil
}
