package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/internal/ctl"
	"choir/testkit"
	"choir/testkit/demomodel"
	"choir/testkit/dockertest"
	"choir/testkit/telegramtest"
)

// countingModel is the demo model behind a counter and a gate that can
// keep the user's turns in flight.
type countingModel struct {
	demo  demomodel.Server
	mu    sync.Mutex
	turns int
	seen  []string // every request body
	gate  chan struct{}
	held  int
}

func (m *countingModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 16<<20))
	turn := requestKind(body) == "turn"
	m.mu.Lock()
	m.seen = append(m.seen, string(body))
	gate := m.gate
	if turn {
		m.turns++
		if gate != nil {
			m.held++
		}
	}
	m.mu.Unlock()
	if turn && gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	m.demo.ServeHTTP(w, r)
}

func (m *countingModel) count() (turns, held int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.turns, m.held
}

func (m *countingModel) saw(text string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.seen {
		if strings.Contains(s, text) {
			return true
		}
	}
	return false
}

// serveModel serves a countingModel where containers reach it and returns
// its /v1 endpoint.
func serveModel(t testing.TB, m *countingModel) string {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(dockertest.BridgeIP(t), "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: m}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String() + "/v1"
}

// TestConfigApplyAndAgentUpdate is the two-phase change of a running
// installation (§16.3, §17.4-17.6) on a real engine: a hot change (the
// model's endpoint) reaches the running agent without a restart while a
// call in flight finishes where it began; a restart-required change is
// reported by diff and refused by apply; a repo change is reported file by
// file and applied by agent update, which resumes the session on the new
// image.
// builtAgent is a choird with agent-1 built by choird from real repos
// (the global repo's base is busybox with choir-agent) and started, its
// model A on the bridge.
type builtAgent struct {
	home, agentRepo string
	d               *daemon
	a               *countingModel
}

// builtOpts change newBuiltAgent's installation: more config, more
// secrets, the DM the agent starts on (default dm1, the console).
type builtOpts struct {
	config  func(cfg map[string]any)
	secrets map[string]string
	dm      string
	// http runs choird with --transport=http: the agent reaches it over
	// HTTPS on the bridge, with no socket.
	http bool
}

func newBuiltAgent(t testing.TB, opts ...builtOpts) *builtAgent {
	t.Helper()
	var o builtOpts
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.dm == "" {
		o.dm = "dm1"
	}
	dc := dockertest.Engine(t)
	testkit.Build(t, "choir/agent")
	dockertest.BusyboxImage(t, dc, "choir-test/busybox:1")
	home := filepath.Join(t.TempDir(), "h")
	repos := t.TempDir()
	global, agentRepo := filepath.Join(repos, "global.git"), filepath.Join(repos, "agent-1.git")
	if _, stderr, code := ctlRun(t, home, "", "init", "--global-repo", global); code != 0 {
		t.Fatalf("init = %d %q", code, stderr)
	}
	commitFile(t, global, "Dockerfile.base", "FROM choir-test/busybox:1\nCOPY choir-agent /choir/bin/choir-agent\nENTRYPOINT [\"/choir/bin/choir-agent\"]\n", 0o644)
	if _, stderr, code := ctlRun(t, home, "", "agent", "init", "agent-1", "--repo", agentRepo); code != 0 {
		t.Fatalf("agent init = %d %q", code, stderr)
	}
	a := &countingModel{}
	endpointA := serveModel(t, a)
	env := backends(t, home)
	editConfig(t, home, func(cfg map[string]any) {
		cfg["global_repo"] = map[string]any{"url": global, "ref": "main"}
		cfg["workspaces"] = map[string]any{"main": map[string]any{"path": testkit.Workspace(t)}}
		cfg["models"] = map[string]any{"m": map[string]any{"provider": "test", "model": "x", "endpoint": endpointA, "secret": "llm-key"}}
		cfg["git_identities"] = map[string]any{"dev": map[string]any{"name": "Dev", "email": "dev@choir.local", "secret": "git-token"}}
		cfg["gateways"] = map[string]any{"console": map[string]any{"type": "console"}}
		cfg["dms"] = map[string]any{"dm1": map[string]any{"gateway": "console", "admin": true}}
		cfg["agents"] = map[string]any{"agent-1": map[string]any{"repo": map[string]any{"url": agentRepo, "ref": "main"},
			"defaults": map[string]any{"workspace": "main", "llm": "m", "git_identity": "dev", "dm": "dm1"}}}
		cfg["heartbeat_interval_ms"] = 200
		if o.config != nil {
			o.config(cfg)
		}
	})
	secrets := map[string]string{"llm-key": apiSecret, "git-token": "ghp-e2e-Token-5Yt"}
	for k, v := range o.secrets {
		secrets[k] = v
	}
	for name, value := range secrets {
		if _, stderr, code := ctlRun(t, home, "", "secret", "set", name, value); code != 0 {
			t.Fatalf("secret set %s = %d %s", name, code, stderr)
		}
	}
	var args []string
	if o.http {
		args = []string{"--transport=http", "--listen=" + dockertest.BridgeIP(t) + ":0"}
	}
	d := startChoird(t, home, env, args...)
	waitReady(t, home, d)
	t.Cleanup(func() { removeAgentImages(t, "agent-1") })
	b := &builtAgent{home: home, agentRepo: agentRepo, d: d, a: a}
	if out, stderr, code := ctlRun(t, home, "", "agent", "build", "agent-1"); code != 0 {
		t.Fatalf("agent build = %d\n%s\n%s", code, out, stderr)
	}
	if _, stderr, code := ctlRun(t, home, "", "agent", "start", "agent-1", "--dm="+o.dm); code != 0 {
		t.Fatalf("agent start = %d %q\n%s", code, stderr, b.report())
	}
	t.Cleanup(func() { ctlRun(t, home, "", "agent", "stop", "agent-1") })
	return b
}

func (b *builtAgent) report() string { return "choird:\n" + tail(b.d.stderr.String(), 3000) }

// say chats with agent-1 and wants the model's answer.
func (b *builtAgent) say(t testing.TB, msg string) string {
	t.Helper()
	out, stderr, code := ctlRun(t, b.home, msg, "chat", "agent-1", "--once", "--timeout", "2m")
	if code != 0 || !strings.Contains(out, demomodel.Prefix) {
		t.Fatalf("chat %q = %d %q %q\n%s", msg, code, out, stderr, b.report())
	}
	return out
}

func TestConfigApplyAndAgentUpdate(t *testing.T) {
	ag := newBuiltAgent(t)
	home, agentRepo, a, d := ag.home, ag.agentRepo, ag.a, ag.d
	b := &countingModel{}
	endpointB := serveModel(t, b)
	report := ag.report
	say := func(msg string) string { t.Helper(); return ag.say(t, msg) }
	say("hello")
	before := agentState(t, home, "agent-1")

	// A hot change while a call is in flight at the old endpoint.
	a.mu.Lock()
	a.gate = make(chan struct{})
	a.mu.Unlock()
	inFlight := goChat(t, home, "agent-1", "a question in flight")
	waitUntil(t, "the call in flight at model A", time.Minute, func() bool { _, held := a.count(); return held == 1 }, report)
	editConfig(t, home, func(cfg map[string]any) {
		cfg["models"].(map[string]any)["m"].(map[string]any)["endpoint"] = endpointB
	})
	out, stderr, code := ctlRun(t, home, "", "config", "load")
	if code != 0 || !strings.Contains(out, "~ config.json: models.m [hot-reload] → included in: choirctl config apply") {
		t.Fatalf("config load = %d %q %q; want the model's change, hot", code, out, stderr)
	}
	if out, stderr, code := ctlRun(t, home, "", "config", "apply"); code != 0 || !strings.Contains(out, "applied 1 change(s)") {
		t.Fatalf("config apply = %d %q %q", code, out, stderr)
	}
	version := choirdStatus(t, home).ConfigVersion
	waitUntil(t, "the agent on the applied config version", time.Minute, func() bool {
		return agentState(t, home, "agent-1").ConfigVersion == version
	}, report)
	close(a.gate)
	if r := <-inFlight; r.code != 0 || !strings.Contains(r.out, demomodel.Prefix) {
		t.Errorf("the chat in flight during the apply = %d %q %q; want its answer", r.code, r.out, r.stderr)
	}
	turnsA, _ := a.count()
	say("after the apply")
	if n, _ := a.count(); n != turnsA {
		t.Errorf("model A got %d more turn(s) after the apply; want none", n-turnsA)
	}
	if !b.saw("after the apply") {
		t.Errorf("model B never saw the turn after the apply\n%s", report())
	}
	if st := agentState(t, home, "agent-1"); st.Container != before.Container || st.SessionID != before.SessionID {
		t.Errorf("the apply restarted the agent: container %s -> %s, session %s -> %s", before.Container, st.Container, before.SessionID, st.SessionID)
	}

	// A restart-required change: reported, refused, nothing applied.
	editConfig(t, home, func(cfg map[string]any) { cfg["approval_timeout_ms"] = 123456 })
	out, _, code = ctlRun(t, home, "", "config", "load")
	if code != 0 || !strings.Contains(out, "~ config.json: approval_timeout_ms [restart-required]") || !strings.Contains(out, "config apply would refuse") {
		t.Errorf("config load of a restart-required change = %d %q", code, out)
	}
	if _, stderr, code := ctlRun(t, home, "", "config", "apply"); code != 1 || !strings.Contains(stderr, "restart choird") || !strings.Contains(stderr, "nothing applied") {
		t.Errorf("config apply of a restart-required change = %d %q; want 1 saying to restart choird", code, stderr)
	}
	if choirdStatus(t, home).ConfigVersion != version {
		t.Error("a refused apply moved the config version")
	}
	if shown, _, _ := ctlRun(t, home, "", "config", "show"); strings.Contains(shown, "123456") {
		t.Error("a refused apply changed the running configuration")
	}
	editConfig(t, home, func(cfg map[string]any) { delete(cfg, "approval_timeout_ms") })

	// A repo change: listed file by file, applied by agent update.
	commitFile(t, agentRepo, "identity/SOUL.md", "You are the updated soul, SOUL-MARK-2.\n", 0o644)
	out, stderr, code = ctlRun(t, home, "", "config", "load")
	for _, want := range []string{"~ agent-1 repo: ", "~ agent-1:identity/SOUL.md [restart-required] → use: choirctl agent update agent-1"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("config load after a repo commit = %d %q %q; want %q", code, out, stderr, want)
		}
	}
	out, stderr, code = ctlRun(t, home, "", "agent", "update", "agent-1")
	if code != 0 || !strings.Contains(out, "agent-1: redeployed") {
		t.Fatalf("agent update = %d %q %q\n%s", code, out, stderr, report())
	}
	after := agentState(t, home, "agent-1")
	if after.Container == before.Container || after.SessionID != before.SessionID || after.Resumed == nil {
		t.Errorf("after update: container %s (was %s), session %s (was %s), resumed %v; want a new container resuming the session",
			after.Container, before.Container, after.SessionID, before.SessionID, after.Resumed)
	}
	if after.Image == before.Image {
		t.Errorf("after update the agent runs %s, the image it ran before", after.Image)
	}
	say("after the update")
	if !b.saw("SOUL-MARK-2") {
		t.Error("the updated agent's prompt lacks the new SOUL.md")
	}
	if out, stderr, code := ctlRun(t, home, "", "agent", "update-all"); code != 0 || !strings.Contains(out, "agent-1: skipped") {
		t.Errorf("agent update-all with nothing new = %d %q %q; want agent-1 skipped", code, out, stderr)
	}
	if _, stderr, code := ctlRun(t, home, "", "agent", "stop", "agent-1"); code != 0 {
		t.Errorf("agent stop = %d %q", code, stderr)
	}
	d.stop(t)
}

// TestApprovedSkillLandsInTheAgent is self-evolution through approval
// (§8.10, §20) on a real engine: the agent proposes a skill, nothing
// changes until a human approves; the approval commits the skill to the
// agent repo as the agent's git identity, builds a new image and restarts
// the agent on it, resuming its session, and the DM hears each step. It
// runs over the HTTP transport (the other tests of this file over the
// socket), so start, chat, approval, update and resume pass on both.
func TestApprovedSkillLandsInTheAgent(t *testing.T) {
	ag := newBuiltAgent(t, builtOpts{http: true})
	if st := choirdStatus(t, ag.home); st.Transport != "http" {
		t.Fatalf("choird's transport is %q; want http", st.Transport)
	}
	outbox := watchOutbox(t, ag.home, "agent-1")
	before := agentState(t, ag.home, "agent-1")
	head := func() string {
		out, _ := exec.Command("git", "-C", ag.agentRepo, "rev-parse", "main").Output()
		return strings.TrimSpace(string(out))
	}
	headBefore := head()
	ag.say(t, "propose skill file-reader")
	out, _, code := ctlRun(t, ag.home, "", "approval", "list", "--json")
	var pending []ctl.Approval
	if code != 0 || json.Unmarshal([]byte(out), &pending) != nil || len(pending) != 1 || pending[0].Status != "pending" {
		t.Fatalf("approval list = %d %q; want one pending proposal", code, out)
	}
	if !strings.Contains(pending[0].Summary, "new or changed skill file-reader: the user asked for it") {
		t.Errorf("the human sees %q", pending[0].Summary)
	}
	if head() != headBefore {
		t.Fatal("the repo changed before anyone approved")
	}
	if _, stderr, code := ctlRun(t, ag.home, "", "approval", "approve", pending[0].ID); code != 0 {
		t.Fatalf("approval approve = %d %q", code, stderr)
	}
	waitUntil(t, "the agent on a new image", 5*time.Minute, func() bool {
		st := agentState(t, ag.home, "agent-1")
		return st.State == "running" && st.Image != before.Image
	}, ag.report)
	if _, ok := outbox.find("now runs", "with the skill file-reader"); !ok {
		waitUntil(t, "the DM told the update", time.Minute, func() bool { _, ok := outbox.find("now runs", "file-reader"); return ok }, outbox.String)
	}
	if _, ok := outbox.find("Approved skill file-reader: committed"); !ok {
		t.Errorf("the DM did not hear of the commit:\n%s", outbox)
	}
	show, err := exec.Command("git", "-C", ag.agentRepo, "show", "main:skills/file-reader.json").Output()
	if err != nil || !strings.Contains(string(show), `"name": "file-reader"`) {
		t.Errorf("skills/file-reader.json on main = %q, %v", show, err)
	}
	if author, _ := exec.Command("git", "-C", ag.agentRepo, "log", "-1", "--format=%an <%ae>", "main").Output(); strings.TrimSpace(string(author)) != "Dev <dev@choir.local>" {
		t.Errorf("the commit's author = %q; want the agent's git identity", author)
	}
	after := agentState(t, ag.home, "agent-1")
	if after.SessionID != before.SessionID {
		t.Errorf("the update started session %s; want %s resumed", after.SessionID, before.SessionID)
	}
	ag.say(t, "hello with the new skill")
	if !ag.a.saw("file-reader") {
		t.Error("the restarted agent's model never heard of the skill file-reader")
	}

	// A tool, through the built-in tool-builder: approved, its manifest
	// waits on a proposal branch for a person to write the code; main and
	// the running agent stay as they are.
	mainBefore, imageBefore := head(), agentState(t, ag.home, "agent-1").Image
	ag.say(t, "build tool wordcount")
	out, _, _ = ctlRun(t, ag.home, "", "approval", "list", "--json")
	pending = nil
	json.Unmarshal([]byte(out), &pending)
	if len(pending) != 1 || !strings.Contains(pending[0].Summary, "new or changed tool demo.wordcount (manifest only") {
		t.Fatalf("after tool-builder, pending approvals = %q", out)
	}
	if _, stderr, code := ctlRun(t, ag.home, "", "approval", "approve", pending[0].ID); code != 0 {
		t.Fatalf("approval approve = %d %q", code, stderr)
	}
	waitUntil(t, "the DM told where the manifest is", time.Minute, func() bool {
		_, ok := outbox.find("Approved tool demo.wordcount", "a person has written and reviewed")
		return ok
	}, outbox.String)
	branch := "proposal/" + after.SessionID + "/demo.wordcount"
	if manifest, err := exec.Command("git", "-C", ag.agentRepo, "show", branch+":tools/demo.wordcount.json").Output(); err != nil || !strings.Contains(string(manifest), "demo.wordcount") {
		t.Errorf("the manifest on %s = %q, %v", branch, manifest, err)
	}
	if head() != mainBefore || agentState(t, ag.home, "agent-1").Image != imageBefore {
		t.Error("an approved tool proposal changed main or the running image before a person wrote its code")
	}
	ag.d.stop(t)
}

// TestTelegramConfigUpdateAndApproval: the admin commands of §19.3 through
// the fake Bot API on a real installation: /config load, diff, apply and
// show; /events; /update and /update_all with their progress; a regular DM
// refused each admin command; and a skill the agent proposes, approved with
// the DM's button, landing in the agent.
func TestTelegramConfigUpdateAndApproval(t *testing.T) {
	tg := telegramtest.New(t)
	tg.SetWaitTimeout(5 * time.Minute) // /update builds an image; a busy machine builds slowly
	const admin, user = int64(4242), int64(5151)
	bot := tg.AddBot("778:tg-e2e-admin-Token", "choir_admin_bot")
	ag := newBuiltAgent(t, builtOpts{
		config: func(cfg map[string]any) {
			cfg["gateways"].(map[string]any)["bot"] = map[string]any{"type": "telegram", "secret": "tg", "api_base": tg.URL()}
			dms := cfg["dms"].(map[string]any)
			dms["tgadmin"] = map[string]any{"gateway": "bot", "user_id": "4242", "admin": true}
			dms["tguser"] = map[string]any{"gateway": "bot", "user_id": "5151"}
		},
		secrets: map[string]string{"tg": "778:tg-e2e-admin-Token"},
		dm:      "tgadmin",
	})
	tg.WaitPolling(t, bot)
	ask := func(from int64, text string, want ...string) string {
		t.Helper()
		before := len(tg.Texts(bot, from))
		tg.InjectText(bot, from, text)
		var got string
		tg.Wait(t, fmt.Sprintf("the answer to %q containing %q", text, want), func() bool {
			got = strings.Join(tg.Texts(bot, from)[before:], "\n")
			for _, w := range want {
				if !strings.Contains(got, w) {
					return false
				}
			}
			return true
		})
		return got
	}

	for _, cmd := range []string{"/config load", "/update", "/update_all"} {
		ask(user, cmd, "for admin DMs only")
	}

	b := &countingModel{}
	endpointB := serveModel(t, b)
	editConfig(t, ag.home, func(cfg map[string]any) {
		cfg["models"].(map[string]any)["m"].(map[string]any)["endpoint"] = endpointB
	})
	ask(admin, "/config load", "~ config.json: models.m [hot-reload]", "/config apply publishes")
	ask(admin, "/config diff", "~ config.json: models.m [hot-reload]")
	ask(admin, "/config apply", "Applied 1 change(s)")
	ask(admin, "/config show", "Running config", "1 agents")
	ask(admin, "hello over telegram", demomodel.Prefix)
	if !b.saw("hello over telegram") {
		t.Error("after /config apply the agent's turn did not reach the new endpoint")
	}
	ask(admin, "/events agent-1", "The last", "UserMsg")

	// A skill proposed in the DM and approved with its button.
	tg.InjectText(bot, admin, "build skill tg-reader") // the built-in skill-builder, step by step
	var press telegramtest.Sent
	var approve string
	tg.Wait(t, "an approval with an approve button in the DM", func() bool {
		for _, m := range tg.Sent(bot, admin) {
			for _, row := range m.Keyboard {
				for _, btn := range row {
					if strings.HasSuffix(btn.CallbackData, ":y") {
						press, approve = m, btn.CallbackData
					}
				}
			}
		}
		return approve != ""
	})
	if !strings.Contains(press.Text, "new or changed skill tg-reader") {
		t.Errorf("the approval request says %q; want what is proposed", press.Text)
	}
	before := agentState(t, ag.home, "agent-1")
	tg.InjectCallback(bot, admin, press.MessageID, approve)
	tg.Wait(t, "the DM told the skill is live", func() bool {
		return strings.Contains(strings.Join(tg.Texts(bot, admin), "\n"), "with the skill tg-reader")
	})
	if after := agentState(t, ag.home, "agent-1"); after.Image == before.Image || after.SessionID != before.SessionID {
		t.Errorf("after the approval: image %s (was %s), session %s (was %s)", after.Image, before.Image, after.SessionID, before.SessionID)
	}

	// /update after a repo change, then /update_all with nothing new.
	commitFile(t, ag.agentRepo, "identity/SOUL.md", "The soul after /update.\n", 0o644)
	ask(admin, "/update agent-1", "agent-1: redeployed")
	ask(admin, "/update_all", "agent-1: skipped", "update-all done: 0 redeployed, 0 built, 1 skipped, 0 failed.")
	ag.d.stop(t)
}
