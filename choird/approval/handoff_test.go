package approval_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"choir/choird/approval"
)

// handoff is a scripted approval.Handoff.
type handoff struct {
	mu     sync.Mutex
	mine   bool
	err    error
	claims []string
}

var _ approval.Handoff = (*handoff)(nil)

func (h *handoff) Claim(ctx context.Context, id string) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.claims = append(h.claims, id)
	return h.mine, h.err
}
func (h *handoff) Untold(ctx context.Context) ([]approval.Approval, error)  { return nil, nil }
func (h *handoff) Pending(ctx context.Context) ([]approval.Approval, error) { return nil, nil }

// With a Handoff, a decision is handed on (agent, DM) only when the claim
// says this choird should; a claim that fails is handed on anyway when no
// RunHandoff would look again.
func TestDecideHandsOnWhatItClaims(t *testing.T) {
	for _, c := range []struct {
		name     string
		mine     bool
		err      error
		wantTold int
	}{
		{"its own session", true, nil, 1},
		{"another replica's session", false, nil, 0},
		{"the claim failed", false, errors.New("connection reset"), 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			h := &handoff{mine: c.mine, err: c.err}
			f.svc = approval.New(approval.Config{Store: f.store, Notifier: f.rec, OnDecision: f.rec.onDecision, Timeout: timeout, Clock: f.clock, Handoff: h})
			t.Cleanup(f.svc.Close)
			a := f.request(t, "alpha", "merge")
			if d, err := f.svc.Decide(t.Context(), a.ID, true, approval.Operator("choirctl")); err != nil || d.Status != approval.Approved {
				t.Fatalf("Decide() = %+v, %v", d, err)
			}
			if _, dec, agent := f.rec.counts(); dec != c.wantTold || agent != c.wantTold {
				t.Errorf("Decide() told the DM %d times and the agent %d; want %d", dec, agent, c.wantTold)
			}
			if len(h.claims) != 1 || h.claims[0] != a.ID {
				t.Errorf("claims = %v; want one for %s", h.claims, a.ID)
			}
			if got, _ := f.svc.Get(t.Context(), a.ID); got.Status != approval.Approved {
				t.Errorf("stored = %+v; want approved whoever hands it on", got)
			}
		})
	}
}
