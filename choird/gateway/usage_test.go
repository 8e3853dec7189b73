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
