package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"choir/internal/ctl"
	"choir/testkit"
	"choir/testkit/demomodel"
	"choir/testkit/dockertest"
	"choir/testkit/telegramtest"
)

// TestOutboxRepliesDoNotWaitForTelegram (issue 19): ob-1 runs in a real
// container, bound to a Telegram DM whose first send hangs in Telegram.
// Twenty `printf 'hello N\n' | choirctl chat ob-1 --once` in a row all get
// their reply on the console while Telegram has delivered none of them:
// the agent's choir.dm.send returns once the message is queued, not once
// Telegram has it. agent status shows the queue. After a restart of choird
// (which ends the hung send) every reply reaches the DM, once, in order.
func TestOutboxRepliesDoNotWaitForTelegram(t *testing.T) {
	dc := dockertest.Engine(t)
	home := filepath.Join(t.TempDir(), "h")
	workspace := testkit.Workspace(t)
	ctlRun(t, home, "", "init")
	env := backends(t, home)
	agentConfig(t, home, workspace) // models, identities and secrets; ob-1 below

	l, err := net.Listen("tcp", net.JoinHostPort(dockertest.BridgeIP(t), "0"))
	if err != nil {
		t.Fatal(err)
	}
	model := &http.Server{Handler: &demomodel.Server{}}
	go model.Serve(l)
	t.Cleanup(func() { model.Close() })
	tg := telegramtest.New(t)
	const user = int64(4343)
	bot := tg.AddBot("12345:tg-e2e-Token-9Kd", "choir_ob_bot") // agentConfig's secret "tg"
	path := filepath.Join(home, "config.json")
	data, _ := os.ReadFile(path)
	var cfg map[string]any
	json.Unmarshal(data, &cfg)
	cfg["models"].(map[string]any)["m"] = map[string]any{"provider": "demo", "model": "demo", "endpoint": "http://" + l.Addr().String() + "/v1"}
	cfg["gateways"] = map[string]any{"bot": map[string]any{"type": "telegram", "secret": "tg", "api_base": tg.URL()}}
	cfg["dms"] = map[string]any{"ob": map[string]any{"gateway": "bot", "user_id": fmt.Sprint(user)}}
	cfg["agents"] = map[string]any{"ob-1": map[string]any{"defaults": map[string]any{"workspace": "main", "llm": "m", "git_identity": "dev", "dm": "ob"}}}
	out, _ := json.MarshalIndent(cfg, "", "  ")
	os.WriteFile(path, out, 0o644)
	dockertest.AgentImage(t, dc, "ob-1", "ob1")
	d := startChoird(t, home, env)
	waitReady(t, home, d)
	tg.WaitPolling(t, bot)
	if out, stderr, code := ctlRun(t, home, "", "agent", "start", "ob-1", "--dm=ob"); code != 0 {
		t.Fatalf("agent start ob-1 = %d %q %q", code, out, stderr)
	}

	// Telegram takes the next message and never answers: the DM's sender
	// is stuck on it; everything after it waits in the outbox.
	tg.FailNext(bot, "sendMessage", 1, telegramtest.Hang())
	const n = 20
	var want []string
	for i := 1; i <= n; i++ {
		reply := demomodel.Prefix + fmt.Sprintf(`you said "hello %d"`, i)
		want = append(want, reply)
		out, stderr, code := ctlRun(t, home, fmt.Sprintf("hello %d\n", i), "chat", "ob-1", "--once", "--timeout", "2m")
		if code != 0 || !strings.Contains(out, reply) {
			t.Fatalf("chat --once #%d = %d %q %q; want the reply %q on the console", i, code, out, stderr, reply)
		}
	}
	if got := replies(tg.Texts(bot, user)); len(got) != 0 {
		t.Fatalf("Telegram delivered %d replies (%q) while its first send hangs; the console's %d replies cannot have waited for it", len(got), got, n)
	}
	var st ctl.AgentStatus
	waitFor(t, "agent status to show the queued replies", func() bool {
		out, _, _ := ctlRun(t, home, "", "agent", "status", "ob-1", "--json")
		st = ctl.AgentStatus{}
		json.Unmarshal([]byte(out), &st)
		return len(st.Outbox) == 1 && st.Outbox[0].Queued >= n
	})
	if o := st.Outbox[0]; o.DM != "ob" || o.OldestAgeSeconds <= 0 {
		t.Errorf("agent status --json outbox = %+v; want DM ob with the oldest message's age", o)
	}
	if out, _, _ := ctlRun(t, home, "", "agent", "status", "ob-1"); !strings.Contains(out, "outbox ob") || !strings.Contains(out, "queued, the oldest for") {
		t.Errorf("agent status does not show the outbox:\n%s", out)
	}

	// choird restarts: the queued replies survive and all go out.
	if err := d.stop(t); err != nil {
		t.Fatalf("choird stop = %v\n%s", err, d.stderr.String())
	}
	d = startChoird(t, home, env)
	waitReady(t, home, d)
	// At Telegram's one message a second to a chat: about 20 s.
	deadline := time.Now().Add(3 * time.Minute)
	for len(replies(tg.Texts(bot, user))) < n {
		if time.Now().After(deadline) {
			t.Fatalf("after the restart the DM got %d of %d replies in 3 minutes: %q\n%s", len(replies(tg.Texts(bot, user))), n, tg.Texts(bot, user), d.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	got := replies(tg.Texts(bot, user))
	inOrder := len(got) == n
	for i := 0; inOrder && i < n; i++ {
		inOrder = strings.HasPrefix(got[i], want[i])
	}
	if !inOrder {
		t.Errorf("the DM got the replies\n%q\nwant each once, in order:\n%q", got, want)
	}
	waitFor(t, "the outbox to drain", func() bool {
		out, _, _ := ctlRun(t, home, "", "agent", "status", "ob-1", "--json")
		st = ctl.AgentStatus{}
		json.Unmarshal([]byte(out), &st)
		return len(st.Outbox) == 0 || st.Outbox[0].Queued == 0
	})
	d.stop(t)
}

// replies are the demo model's answers among a DM's texts.
func replies(texts []string) []string {
	var out []string
	for _, s := range texts {
		if strings.HasPrefix(s, demomodel.Prefix) {
			out = append(out, s)
		}
	}
	return out
}
