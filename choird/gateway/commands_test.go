package gateway_test

import (
	"slices"
	"strings"
	"testing"

	"choir/choird/lease"
	"choir/testkit/telegramtest"
)

func TestRegularDMScope(t *testing.T) {
	h := newHarness(t, nil)
	h.fc.bind("alice", "alpha")
	h.fc.bind("bob", "beta")
	for _, tc := range []struct{ text, want string }{
		{"/stop alpha", "takes no agent name"},
		{"/status alpha", "takes no agent name"},
		{"/restart alpha", "takes no agent name"},
		{"/workspace list", "/workspace is for admin DMs only"},
		{"/secret list", "/secret is for admin DMs only"},
		{"/agent list", "/agent is for admin DMs only"},
		{"/update-all", "/update-all is for admin DMs only"},
		{"/start gamma", "Starting agents is for admin DMs"},
	} {
		if got := h.say(bobUser, tc.text); !strings.Contains(got, tc.want) {
			t.Errorf("bob: %s → %q; want it to say %q", tc.text, got, tc.want)
		}
	}
	if stops := h.fc.stopCalls(); len(stops) != 0 {
		t.Fatalf("Stop called for %v from a regular DM naming another agent", stops)
	}
	if starts := h.fc.startCalls(); len(starts) != 0 {
		t.Fatalf("Start called %+v from a regular DM", starts)
	}
	// Its own agent, without a name, it may stop.
	got := h.sayAll(bobUser, "/stop", 2)
	if got[1] != "beta stopped." || !slices.Equal(h.fc.stopCalls(), []string{"beta"}) {
		t.Errorf("bob: /stop → %q, Stop(%v); want beta stopped", got, h.fc.stopCalls())
	}
}

func TestAdminStartBindsDM(t *testing.T) {
	h := newHarness(t, nil)
	got := h.sayAll(adminUser, "/start alpha llm=big workspace=ws2", 2)
	if got[0] != "Starting alpha…" || !strings.Contains(got[1], "alpha is running (session sess-alpha)") {
		t.Errorf("/start alpha → %q", got)
	}
	starts := h.fc.startCalls()
	want := lease.Overrides{LLM: "big", Workspace: "ws2", DM: "admin"}
	if len(starts) != 1 || starts[0].agent != "alpha" || starts[0].o != want {
		t.Fatalf("Start calls = %+v; want alpha with %+v", starts, want)
	}
	if a, _ := h.fc.AgentForDM("admin"); a != "alpha" {
		t.Fatalf("admin DM bound to %q; want alpha", a)
	}
	if got := h.say(adminUser, "/start beta"); !strings.Contains(got, "already bound to alpha") {
		t.Errorf("second /start on a bound DM → %q; want a refusal", got)
	}
	if got := h.say(adminUser, "/start beta dm=alice"); !strings.Contains(got, "already bound") {
		t.Errorf("/start with dm= → %q", got)
	}
	if n := len(h.fc.startCalls()); n != 1 {
		t.Errorf("Start called %d times; want once", n)
	}
	// An admin may act on any agent by name.
	got = h.sayAll(adminUser, "/stop gamma", 2)
	if got[1] != "gamma stopped." || !slices.Equal(h.fc.stopCalls(), []string{"gamma"}) {
		t.Errorf("/stop gamma → %q, Stop(%v)", got, h.fc.stopCalls())
	}
}

func TestStartOverridesRefused(t *testing.T) {
	h := newHarness(t, nil)
	for _, text := range []string{"/start alpha dm=bob", "/start alpha colour=blue", "/start alpha llm"} {
		if got := h.say(adminUser, text); !strings.HasPrefix(got, "Cannot start:") {
			t.Errorf("%s → %q; want a refusal", text, got)
		}
	}
	if got := h.say(adminUser, "/start"); !strings.HasPrefix(got, "Usage: /start <agent>") {
		t.Errorf("/start alone → %q", got)
	}
	if n := len(h.fc.startCalls()); n != 0 {
		t.Errorf("Start called %d times", n)
	}
}

func TestCommandAnswers(t *testing.T) {
	h := newHarness(t, nil)
	h.fc.bind("alice", "alpha")
	for _, tc := range []struct {
		user       int64
		text, want string
	}{
		{aliceUser, "/cores", "/cores is not available in this choird yet."},
		{aliceUser, "/model llm big", "/model is not available in this choird yet."},
		{aliceUser, "/status", "alpha: running\nsession: sess-alpha"},
		{aliceUser, "/inject remember the milk", "Injected into alpha at its next safe point."},
		{aliceUser, "/nosuch", "There is no /nosuch."},
		{aliceUser, "/help", "This DM is bound to alpha."},
		{adminUser, "/update-all", "/update-all is not available in this choird yet."},
		{adminUser, "/agent build alpha", "/agent build is not available in this choird yet."},
		{adminUser, "/config apply", "/config is not available in this choird yet."},
		{adminUser, "/secret list", "Secrets (names only):\npostgres\ntg-work"},
		{adminUser, "/workspace list", "ws-alpha — /srv/ws/alpha (leased by alpha)"},
		{adminUser, "/workspace reset ws-alpha", "Workspace ws-alpha reset: 3 entries removed."},
		{adminUser, "/agent list", "alpha — running\ngamma — stopped"},
		{adminUser, "/status@choir_bot alpha", "alpha: running"},
	} {
		if got := h.say(tc.user, tc.text); !strings.Contains(got, tc.want) {
			t.Errorf("%d: %s → %q; want %q", tc.user, tc.text, got, tc.want)
		}
	}
	h.fc.mu.Lock()
	injects, cmds := h.fc.injects, h.fc.commands
	h.fc.mu.Unlock()
	if !slices.Equal(injects, []string{"alpha: remember the milk"}) {
		t.Errorf("Inject calls = %q", injects)
	}
	if len(cmds) < 2 || cmds[1].Name != "model" || cmds[1].Agent != "alpha" || !slices.Equal(cmds[1].Args, []string{"llm", "big"}) || cmds[1].DM != "alice" {
		t.Errorf("Command calls = %+v; want /model with alpha and [llm big]", cmds)
	}
}

func TestCommandMenus(t *testing.T) {
	h := newHarness(t, nil)
	names := func(scope telegramtest.Scope) []string {
		cmds, _ := h.srv.Commands(h.bot, scope)
		var out []string
		for _, c := range cmds {
			out = append(out, c.Command)
		}
		return out
	}
	h.srv.Wait(t, "menus set", func() bool {
		return len(names(telegramtest.DefaultScope)) > 0 && len(names(telegramtest.ChatScope(adminUser))) > 0
	})
	regular, admin := names(telegramtest.DefaultScope), names(telegramtest.ChatScope(adminUser))
	if slices.Contains(regular, "start") || slices.Contains(regular, "workspace") || !slices.Contains(regular, "approve") {
		t.Errorf("regular menu = %v; want no admin commands", regular)
	}
	for _, c := range []string{"start", "workspace", "secret", "agent", "update_all", "approve", "status"} {
		if !slices.Contains(admin, c) {
			t.Errorf("admin menu = %v; lacks %s", admin, c)
		}
	}
}
