package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"choir/internal/ctl"
	"choir/internal/docker"
	"choir/testkit"
	"choir/testkit/demomodel"
	"choir/testkit/dockertest"
	"choir/testkit/pgnative"
	"choir/testkit/telegramtest"
)

// TestReplicaFailoverDeliversOnce (issue 26): two choird --replica against
// one native Postgres, each with its own home (admin socket, agent
// sockets, containers). The first to start leads: it polls Telegram; the
// other does not. An agent runs under the follower; its reply to a chat is
// queued in the shared outbox and the leader's sender takes it, but
// Telegram never answers that send. The leader is killed with SIGKILL:
// the follower takes the lead, polls, and delivers the reply, exactly
// once. Telegram never saw two pollers of the bot (no 409), and the
// follower's agent ran on untouched. The failover time (kill to the new
// leader's first getUpdates) is logged, not asserted.
func TestReplicaFailoverDeliversOnce(t *testing.T) {
	r := newReplicaRig(t, replicaAgent{id: "ha-1", dm: "ha", user: 4545})
	dc, tg, bot, homeA, homeB, env := r.dc, r.tg, r.bot, r.homeA, r.homeB, r.env
	const user = int64(4545)
	dockertest.AgentImage(t, dc, "ha-1", "ha1")

	a := startChoird(t, homeA, env, "--replica")
	waitReady(t, homeA, a)
	tg.WaitPolling(t, bot) // a leads
	b := startChoird(t, homeB, env, "--replica")
	waitReady(t, homeB, b)
	if out, stderr, code := ctlRun(t, homeB, "", "agent", "start", "ha-1", "--dm=ha"); code != 0 {
		t.Fatalf("agent start ha-1 on the follower = %d %q %q", code, out, stderr)
	}

	// The leader's sender takes the follower's agent's reply; Telegram
	// never answers that send.
	tg.FailNext(bot, "sendMessage", 1, telegramtest.Hang())
	reply := demomodel.Prefix + `you said "across the failover"`
	if out, stderr, code := ctlRun(t, homeB, "across the failover\n", "chat", "ha-1", "--once", "--timeout", "2m"); code != 0 || !strings.Contains(out, reply) {
		t.Fatalf("chat --once on the follower = %d %q %q; want the reply %q", code, out, stderr, reply)
	}
	tg.Wait(t, "the leader's send of the reply to hang in Telegram", func() bool { return tg.InFlight(bot, "sendMessage") == 1 })
	if got := replies(tg.Texts(bot, user)); len(got) != 0 {
		t.Fatalf("Telegram has the reply before the failover: %q", got)
	}

	if polling(t, homeB) {
		t.Fatal("the follower polls Telegram while the leader runs")
	}
	killed := time.Now()
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the follower to take the lead and poll", func() bool { return polling(t, homeB) })
	t.Logf("leader failover: %s from SIGKILL of the leader to the new leader's open getUpdates", time.Since(killed).Round(time.Millisecond))

	waitFor(t, "the reply delivered by the new leader", func() bool { return len(replies(tg.Texts(bot, user))) > 0 })
	if out, _, _ := ctlRun(t, homeB, "", "agent", "status", "ha-1"); !strings.Contains(out, "running") {
		t.Errorf("the follower's agent after the failover:\n%s\nwant it running, untouched", out)
	}
	// Ask the agent again: the DM gets the second reply after the first,
	// and by then a duplicate of the first would have shown.
	reply2 := demomodel.Prefix + `you said "after the failover"`
	if out, stderr, code := ctlRun(t, homeB, "after the failover\n", "chat", "ha-1", "--once", "--timeout", "2m"); code != 0 || !strings.Contains(out, reply2) {
		t.Fatalf("chat --once after the failover = %d %q %q", code, out, stderr)
	}
	waitFor(t, "the second reply in the DM", func() bool { return len(replies(tg.Texts(bot, user))) >= 2 })
	got := replies(tg.Texts(bot, user))
	if len(got) != 2 || !strings.HasPrefix(got[0], reply) || !strings.HasPrefix(got[1], reply2) {
		t.Errorf("the DM got %q; want the reply in flight once, then the next", got)
	}
	if st := gatewayStatus(t, homeB); len(st) != 1 || st[0].Conflicts != 0 {
		t.Errorf("the new leader's pollers: %+v; want one bot and no 409 conflict (never two pollers)", st)
	}
	ctlRun(t, homeB, "", "agent", "stop", "ha-1")
	b.stop(t)
}

// replicaAgent is an agent of a replica rig: its id, its DM and that DM's
// Telegram user; each gets a workspace of its own.
type replicaAgent struct {
	id, dm string
	user   int64
}

// replicaRig is what two choird replicas share: the Docker engine, one
// native Postgres database, the offline model, a fake Telegram with one
// bot, and a home for each replica configured alike: each agent with a
// workspace, a git identity and a DM of its own.
type replicaRig struct {
	dc           *docker.Client
	tg           *telegramtest.Server
	bot          telegramtest.BotID
	homeA, homeB string
	env          []string
}

func newReplicaRig(t *testing.T, agents ...replicaAgent) *replicaRig {
	t.Helper()
	dc := dockertest.Engine(t)
	db := pgnative.DB(t)
	l, err := net.Listen("tcp", net.JoinHostPort(dockertest.BridgeIP(t), "0"))
	if err != nil {
		t.Fatal(err)
	}
	model := &http.Server{Handler: &demomodel.Server{}}
	go model.Serve(l)
	t.Cleanup(func() { model.Close() })
	tg := telegramtest.New(t)
	bot := tg.AddBot("12345:tg-e2e-Token-9Kd", "choir_ha_bot") // agentConfig's secret "tg"
	u, _ := url.Parse(db.DSN)
	port, _ := strconv.Atoi(u.Port())
	workspaces := map[string]any{}
	dms := map[string]any{}
	agentsCfg := map[string]any{}
	identities := map[string]any{} // leased like workspaces: one per agent
	first := ""
	for _, a := range agents {
		ws := testkit.Workspace(t)
		if first == "" {
			first = ws
		}
		workspaces[a.id] = map[string]any{"path": ws}
		dms[a.dm] = map[string]any{"gateway": "bot", "user_id": fmt.Sprint(a.user)}
		identities[a.id] = map[string]any{"name": "Dev", "email": a.id + "@choir.local", "secret": "git-token"}
		agentsCfg[a.id] = map[string]any{"defaults": map[string]any{"workspace": a.id, "llm": "m", "git_identity": a.id, "dm": a.dm}}
	}
	home := func(name string) string {
		h := filepath.Join(t.TempDir(), name)
		ctlRun(t, h, "", "init")
		agentConfig(t, h, first)
		path := filepath.Join(h, "config.json")
		data, _ := os.ReadFile(path)
		var cfg map[string]any
		json.Unmarshal(data, &cfg)
		cfg["postgres"] = map[string]any{"host": u.Hostname(), "port": port, "database": db.Name, "sslmode": "disable", "pool_size": 4, "secret": "postgres"}
		cfg["models"].(map[string]any)["m"] = map[string]any{"provider": "demo", "model": "demo", "endpoint": "http://" + l.Addr().String() + "/v1"}
		cfg["gateways"] = map[string]any{"bot": map[string]any{"type": "telegram", "secret": "tg", "api_base": tg.URL()}}
		cfg["workspaces"], cfg["dms"], cfg["agents"], cfg["git_identities"] = workspaces, dms, agentsCfg, identities
		out, _ := json.MarshalIndent(cfg, "", "  ")
		os.WriteFile(path, out, 0o644)
		if _, stderr, code := ctlRun(t, h, "", "secret", "set", "postgres", "choir:unused-"+pgSecret); code != 0 {
			t.Fatalf("secret set postgres = %d %s", code, stderr)
		}
		return h
	}
	return &replicaRig{dc: dc, tg: tg, bot: bot, homeA: home("a"), homeB: home("b"), env: []string{"DOCKER_HOST=" + dc.Host()}}
}

// gatewayStatus is a choird's bots as choirctl status --json shows them.
func gatewayStatus(t *testing.T, home string) []ctl.GatewayStatus {
	var st ctl.Status
	out, _, _ := ctlRun(t, home, "", "status", "--json")
	json.Unmarshal([]byte(out), &st)
	return st.Gateways
}

// polling reports whether a choird has a getUpdates open or answered one.
func polling(t *testing.T, home string) bool {
	for _, g := range gatewayStatus(t, home) {
		if g.Polling || !g.LastOK.IsZero() {
			return true
		}
	}
	return false
}
