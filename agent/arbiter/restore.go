package arbiter

import (
	"encoding/json"
	"errors"
	"fmt"

	"choir/agent/tool"
	"choir/internal/chain"
	"choir/internal/rpc"
)

// Interrupted is a tool call a resumed session found pending: requested,
// perhaps running, when the agent stopped, with no result committed. The
// arbiter commits an interrupted result for it and never runs it.
type Interrupted struct {
	ID, Tool, Job string
	// Ran is true when the call had passed its checks and taken its locks
	// (ToolCallCommitted): it may have run, in part or whole.
	Ran bool
}

// Restore rehydrates the log of a resumed session (§13.2) before Run: the
// events after revision base, whose hash is baseHash, as choird stored
// them; they verify from baseHash (else an error, and nothing changes).
// Every committed result is remembered by invocation id, so a proposal
// resubmitted with the same id is answered without running again (§13.3);
// every call pending when the agent stopped gets an interrupted result,
// committed now, and is returned. New events continue the chain.
func (a *Arbiter) Restore(base int64, baseHash string, events []rpc.Event) ([]Interrupted, error) {
	select {
	case <-a.stopped:
		return nil, errors.New("arbiter: Restore after Run")
	default:
	}
	if a.log.n != 0 || a.log.base != 0 {
		return nil, errors.New("arbiter: Restore of a log that holds events")
	}
	evs := make([]chain.Event, len(events))
	for i, e := range events {
		if e.Rev != base+int64(i)+1 {
			return nil, fmt.Errorf("arbiter: restore: event %d has revision %d; want %d (the tail must follow revision %d without gaps)", i, e.Rev, base+int64(i)+1, base)
		}
		evs[i] = chain.Event(e)
	}
	if err := chain.Verify(baseHash, evs); err != nil {
		return nil, fmt.Errorf("arbiter: restore: %w", err)
	}
	a.log.base, a.log.baseH = base, baseHash
	a.log.n, a.log.last = base, baseHash
	type pending struct {
		req CallRequested
		ran bool
	}
	open := map[string]*pending{}
	var order []string
	for _, e := range events {
		a.log.put(e)
		switch e.Type {
		case ToolCallRequested:
			var p CallRequested
			if json.Unmarshal(e.Payload, &p) == nil && p.ID != "" {
				if _, ok := open[p.ID]; !ok {
					order = append(order, p.ID)
				}
				open[p.ID] = &pending{req: p}
			}
		case ToolCallCommitted:
			var p CallCommitted
			if json.Unmarshal(e.Payload, &p) == nil && open[p.ID] != nil {
				open[p.ID].ran = true
			}
		case ToolResultCommitted:
			var p ResultCommitted
			if json.Unmarshal(e.Payload, &p) == nil && p.ID != "" {
				a.results[p.ID] = Outcome{ID: p.ID, Tool: p.Tool, Status: tool.Status(p.Status), Output: p.Output, Rev: e.Rev}
				delete(open, p.ID)
			}
		}
	}
	var out []Interrupted
	for _, id := range order {
		p := open[id]
		if p == nil {
			continue
		}
		msg := "the agent stopped before this call started; it was not run. Call it again if it is still needed."
		if p.ran {
			msg = "the agent stopped while this call ran; it was not run again, and it may have taken effect in part or whole: check before calling it again."
		}
		res := errorOutcome(tool.Errorf(tool.CodeInterrupted, "%s", msg))
		rc := ResultCommitted{ID: id, Job: p.req.Job, Output: res.Output, Status: string(res.Status), Tool: p.req.Tool, ToolCallID: p.req.ToolCallID}
		raw, err := json.Marshal(rc)
		if err == nil {
			raw, err = Canonical(raw)
		}
		if err != nil {
			return out, fmt.Errorf("arbiter: restore: the interrupted result of %s: %w", id, err)
		}
		lane := LaneEdge
		if p.req.Job != "" {
			lane = LaneCore
		}
		e := a.log.append(lane, ToolResultCommitted, raw)
		res.ID, res.Tool, res.Rev = id, p.req.Tool, e.Rev
		a.results[id] = res
		out = append(out, Interrupted{ID: id, Tool: p.req.Tool, Job: p.req.Job, Ran: p.ran})
	}
	return out, nil
}
