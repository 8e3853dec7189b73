package main

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"choir/testkit"
	"choir/testkit/demomodel"
	"choir/testkit/dockertest"
	"choir/testkit/telegramtest"
)

// TestTelegramDMToARunningAgent: an admin DM starts an agent with /start,
// the agent (in a real container, answering through the offline model)
// replies to a Telegram message in the same DM, an approval it asks for
// arrives there with buttons (decided here with choirctl; the button press
// itself is covered by the gateway's tests), and /stop ends it.
func TestTelegramDMToARunningAgent(t *testing.T) {
	dc := dockertest.Engine(t)
	home := filepath.Join(t.TempDir(), "h")
	workspace := testkit.Workspace(t)
	ctlRun(t, home, "", "init")
	env := backends(t, home)
	agentConfig(t, home, workspace)

	// The agent's model: the offline one, where containers reach it.
	ip := dockertest.BridgeIP(t)
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	model := &http.Server{Handler: &demomodel.Server{}}
	go model.Serve(l)
	t.Cleanup(func() { model.Close() })
	tg := telegramtest.New(t)
	const admin = int64(4242)
	bot := tg.AddBot("777:tg-e2e-dm-Token", "choir_dm_bot")
	path := filepath.Join(home, "config.json")
	data, _ := os.ReadFile(path)
	var cfg map[string]any
	json.Unmarshal(data, &cfg)
	cfg["models"].(map[string]any)["m"] = map[string]any{"provider": "demo", "model": "demo", "endpoint": "http://" + l.Addr().String() + "/v1"}
	cfg["gateways"] = map[string]any{"bot": map[string]any{"type": "telegram", "secret": "tg", "api_base": tg.URL()}}
	cfg["dms"] = map[string]any{"dm1": map[string]any{"gateway": "bot", "user_id": "4242", "admin": true}}
	out, _ := json.MarshalIndent(cfg, "", "  ")
	os.WriteFile(path, out, 0o644)
	ctlRun(t, home, "", "secret", "set", "tg", "777:tg-e2e-dm-Token")
	dockertest.AgentImage(t, dc, "agent-1", "tg1")
	d := startChoird(t, home, env)
	waitReady(t, home, d)
	tg.WaitPolling(t, bot)

	// /start from the admin DM binds that DM.
	tg.InjectText(bot, admin, "/start agent-1")
	tg.Wait(t, "the start to be confirmed", func() bool { return strings.Contains(strings.Join(tg.Texts(bot, admin), "\n"), "agent-1") })
	waitFor(t, "agent-1 to run", func() bool {
		out, _, _ := ctlRun(t, home, "", "agent", "status", "agent-1")
		return strings.Contains(out, "running")
	})
	before := len(tg.Texts(bot, admin))
	tg.InjectText(bot, admin, "hello from telegram")
	tg.Wait(t, "the agent's reply in the DM", func() bool {
		texts := tg.Texts(bot, admin)
		return len(texts) > before && strings.Contains(strings.Join(texts[before:], "\n"), demomodel.Prefix+`you said "hello from telegram"`)
	})

	// The turn's committed events reach Postgres with the heartbeats.
	list, _, _ := ctlRun(t, home, "", "session", "list", "agent-1")
	sessionID := strings.Fields(strings.Split(list, "\n")[1])[0]
	waitFor(t, "the turn's events in Postgres", func() bool {
		out, _, _ := ctlRun(t, home, "", "session", "events", sessionID)
		return strings.Contains(out, "UserMsg") && strings.Contains(out, "ModelOutput")
	})

	// An approval the agent asks for reaches the DM with buttons.
	approvalRoundTrip(t, home, dc)
	sent := tg.Sent(bot, admin)
	withButtons := 0
	for _, m := range sent {
		if len(m.Keyboard) > 0 {
			withButtons++
		}
	}
	if withButtons == 0 {
		t.Errorf("no approval message with buttons reached the DM: %v", tg.Texts(bot, admin))
	}

	tg.InjectText(bot, admin, "/stop")
	waitFor(t, "agent-1 to stop", func() bool {
		out, _, _ := ctlRun(t, home, "", "agent", "status", "agent-1")
		return strings.Contains(out, "stopped")
	})
	if err := d.stop(t); err != nil {
		t.Errorf("choird stop = %v", err)
	}
}
