package gateway_test

import (
	"strings"
	"testing"
)

// /usage: a regular DM sees its own agent's and may name no other; an
// admin DM sees every agent's, or the one it names.
func TestUsageScope(t *testing.T) {
	h := newHarness(t, nil)
	h.fc.bind("alice", "alpha")
	if got := h.say(aliceUser, "/usage beta"); !strings.Contains(got, "takes no agent name") {
		t.Errorf("alice: /usage beta → %q; want a refusal", got)
	}
	h.say(aliceUser, "/usage")
	h.say(adminUser, "/usage")
	h.say(adminUser, "/usage gamma")
	h.fc.mu.Lock()
	var got []string
	for _, c := range h.fc.commands {
		if c.Name == "usage" {
			got = append(got, c.DM+">"+c.Agent)
		}
	}
	h.fc.mu.Unlock()
	if want := "alice>alpha admin> admin>gamma"; strings.Join(got, " ") != want {
		t.Errorf("usage commands = %q; want %q", strings.Join(got, " "), want)
	}
}

// /status shows today's spend against the daily caps on its own line, as
// choird's ledger says it, and no spend line when no daily cap applies.
func TestStatusShowsSpend(t *testing.T) {
	h := newHarness(t, nil)
	h.fc.bind("alice", "alpha")
	if got := h.say(aliceUser, "/status"); strings.Contains(got, "spend") {
		t.Errorf("/status without a daily cap = %q; want no spend line", got)
	}
	today := "today 3.20 USD of 5.00 USD (daily cap), resets 2026-11-26 00:00 UTC"
	h.fc.mu.Lock()
	h.fc.spend = today
	h.fc.mu.Unlock()
	got := h.say(aliceUser, "/status")
	if !strings.Contains(got, "\nspend: "+today+"\n") {
		t.Errorf("/status = %q; want the line %q", got, "spend: "+today)
	}
}
