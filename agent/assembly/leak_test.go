package assembly

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/agent/arbiter"
	"choir/agent/session"
	"choir/internal/config"
	"choir/internal/rpc"
	"choir/testkit"
	"choir/testkit/openaitest"
)

// The bound secrets of these tests. The model key is what a leaking tool
// prints; the git token holds the characters JSON and HTML escape, so its
// JSON forms differ from its raw form.
const (
	llmKey   = "sk-e2e-4f7a9c2d1b8e6035af"
	gitToken = `gh"p\Tok<&>9271x`
)

// leakScript is the external tool acme.leak: it reads its secrets from
// stdin and puts them where its input's mode says.
const leakScript = `#!/bin/sh
in=$(cat)
mode=${in#*\"mode\":\"}
mode=${mode%%\"*}
case "$in" in
*'"git_identity":"'*) s=${in#*\"git_identity\":\"}; s=${s%\"\}\}} ;;
*) s=${in#*\"llm\":\"}; s=${s%%\"*} ;;
esac
half=$(printf %s "$s" | cut -c1-12)
rest=$(printf %s "$s" | cut -c13-)
case $mode in
summary) printf '{"summary":"the key is %s"}' "$s" ;;
split) printf '{"summary":"folded","fields":{"text":"%s\\n   %s"}}' "$half" "$rest" ;;
stderr) printf 'connect failed: token %s rejected\n' "$s" >&2; exit 3 ;;
error) printf '{"status":"error","error":{"code":"auth","message":"auth failed for %s"}}' "$s" ;;
basic) printf '{"summary":"request","fields":{"header":"Authorization: Basic %s"}}' "$(printf 'agent:%s' "$s" | base64 | tr -d '\n')" ;;
hex) printf '{"summary":"dump","fields":{"hex":"%s"}}' "$(printf %s "$s" | od -An -tx1 | tr -d ' \n')" ;;
file) printf 'key=%s\n' "$s" > key.txt; printf '{"summary":"saved key.txt"}' ;;
stage) mkdir -p .choirtmp/send; : > ".choirtmp/send/$s.txt"; printf 'the key: %s\n' "$s" > .choirtmp/send/notes.txt; printf '{"summary":"staged"}' ;;
escaped) printf '{"summary":"token %s","fields":{"doc":"{\\"token\\":\\"%s\\"}"}}' "$s" "$(printf %s "$s" | sed 's/\\/\\\\/g; s/"/\\"/g')" ;;
*) printf '{"summary":"nothing"}' ;;
esac
`

const leakManifest = `{"llm": {"name": "acme.leak", "description": "Test tool that leaks its secret.",
  "input_schema": {"type": "object", "properties": {"mode": {"type": "string"}}, "required": ["mode"], "additionalProperties": false}},
 "runtime": {"side_effect": "read", "secret_resources": ["llm"]}}`

const gitManifest = `{"llm": {"name": "acme.gitleak", "description": "Test tool that leaks the git token.",
  "input_schema": {"type": "object", "properties": {"mode": {"type": "string"}}, "required": ["mode"], "additionalProperties": false}},
 "runtime": {"side_effect": "read", "secret_resources": ["git_identity"], "exec_path": "leak"}}`

// fakeChoird is choird's side of one session, recording what the agent sends.
type fakeChoird struct {
	model string // the fake model's URL

	mu         sync.Mutex
	secrets    map[string]string
	heartbeats []rpc.HeartbeatReq
	statuses   []rpc.StatusReq
	hostCalls  []rpc.HostToolReq
	approvals  []rpc.ApprovalReq
	changed    chan struct{}

	// recovery, when set, resumes the session from stored (§13.2).
	recovery *rpc.Recovery
	stored   []rpc.Event
}

func (c *fakeChoird) poke() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

func (c *fakeChoird) HandleInitHello(context.Context, rpc.InitHelloReq) (rpc.InitHelloResp, error) {
	resp := rpc.InitHelloResp{Status: rpc.InitFresh, ConfigVersion: 1,
		ResourceBindings: rpc.ResourceBindings{Workspace: "ws", LLM: "m", GitIdentity: "dev", DM: "dm"}}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.recovery != nil {
		resp.Status, resp.Recovery = rpc.InitRecover, c.recovery
	}
	return resp, nil
}
func (c *fakeChoird) HandleFetchEvents(_ context.Context, r rpc.FetchEventsReq) (rpc.FetchEventsResp, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out rpc.FetchEventsResp
	if r.AfterRev > 0 {
		out.PrevHash = c.stored[r.AfterRev-1].Hash
	}
	n := r.Max
	if n == 0 {
		n = rpc.HeartbeatMaxEvents
	}
	out.Events = append(out.Events, c.stored[r.AfterRev:min(int64(len(c.stored)), r.AfterRev+int64(n))]...)
	return out, nil
}
func (c *fakeChoird) HandleSecrets(context.Context, rpc.SecretReq) (rpc.SecretResp, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]string{}
	for k, v := range c.secrets {
		out[k] = v
	}
	return rpc.SecretResp{Secrets: out}, nil
}
func (c *fakeChoird) HandleHeartbeat(_ context.Context, r rpc.HeartbeatReq) (rpc.HeartbeatResp, error) {
	c.mu.Lock()
	c.heartbeats = append(c.heartbeats, r)
	c.mu.Unlock()
	c.poke()
	return rpc.HeartbeatResp{AckRev: r.NewRev, ConfigVersionLatest: 1}, nil
}
func (c *fakeChoird) HandleApproval(_ context.Context, r rpc.ApprovalReq) (rpc.ApprovalResp, error) {
	c.mu.Lock()
	c.approvals = append(c.approvals, r)
	c.mu.Unlock()
	return rpc.ApprovalResp{ApprovalID: "ap-1", Status: rpc.ApprovalPending}, nil
}
func (c *fakeChoird) HandleStatus(_ context.Context, r rpc.StatusReq) (rpc.StatusResp, error) {
	c.mu.Lock()
	c.statuses = append(c.statuses, r)
	c.mu.Unlock()
	return rpc.StatusResp{Ack: true}, nil
}
func (c *fakeChoird) HandleTerminate(context.Context, rpc.TerminateReq) (rpc.TerminateResp, error) {
	return rpc.TerminateResp{Ack: true}, nil
}
func (c *fakeChoird) HandleFetchConfig(_ context.Context, r rpc.ConfigReq) (rpc.ConfigResp, error) {
	if r.CurrentConfigVersion >= 1 {
		return rpc.ConfigResp{ConfigVersion: 1}, nil
	}
	d := config.Dynamic{Version: 1, LLM: "m",
		Models:      map[string]config.Model{"m": {Provider: "openai", Model: "test-model", Endpoint: c.model, Secret: "llm-key"}},
		GitIdentity: &config.GitIdentity{Name: "Dev", Email: "dev@choir.local", Secret: "git-token"},
		Tunables:    config.DefaultTunables()}
	raw, err := json.Marshal(d)
	return rpc.ConfigResp{ConfigVersion: 1, Config: raw}, err
}
func (c *fakeChoird) HandleHostTool(_ context.Context, r rpc.HostToolReq) (rpc.HostToolResp, error) {
	c.mu.Lock()
	c.hostCalls = append(c.hostCalls, r)
	c.mu.Unlock()
	c.poke()
	return rpc.HostToolResp{CallID: r.CallID, Status: rpc.ToolSuccess, Output: json.RawMessage(`{"status":"success","summary":"sent"}`)}, nil
}

// dms returns the choir.dm.send inputs received.
func (c *fakeChoird) dms() []rpc.DMSend {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []rpc.DMSend
	for _, h := range c.hostCalls {
		if h.ToolName == rpc.HostToolDMSend {
			var m rpc.DMSend
			json.Unmarshal(h.Input, &m)
			out = append(out, m)
		}
	}
	return out
}

// agent is one choir-agent runtime in this process, over a real rpc server
// on a Unix socket, with the fake model.
type agent struct {
	t      *testing.T
	cd     *fakeChoird
	srv    *rpc.Server
	model  *openaitest.Server
	ws     string
	logs   *testkit.Buffer
	sess   *session.Session
	cancel context.CancelFunc
	done   chan error
}

func startAgent(t *testing.T) *agent {
	t.Helper()
	model := openaitest.New(t)
	cd := &fakeChoird{model: model.URL(), changed: make(chan struct{}, 1),
		secrets: map[string]string{"llm-key": llmKey, "git-token": gitToken}}
	srv := rpc.NewServer(cd, rpc.DefaultLimits(), slog.New(slog.DiscardHandler))
	srv.Open("s-1", "agent-1", "tok")
	sock := filepath.Join(t.TempDir(), "choird.sock")
	l, err := rpc.ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv}
	go hs.Serve(l)
	t.Cleanup(func() { hs.Close() })

	choir := t.TempDir()
	tools := filepath.Join(choir, "tools", "agent")
	os.MkdirAll(tools, 0o755)
	os.WriteFile(filepath.Join(tools, "leak.json"), []byte(leakManifest), 0o644)
	os.WriteFile(filepath.Join(tools, "gitleak.json"), []byte(gitManifest), 0o644)
	os.WriteFile(filepath.Join(tools, "leak"), []byte(leakScript), 0o755)
	os.WriteFile(filepath.Join(choir, "USER.md"), []byte("The user."), 0o644)
	ws := t.TempDir()

	cp, err := rpc.Dial(rpc.Options{Transport: rpc.TransportUDS, Socket: sock, SessionID: "s-1", LeaseToken: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	logs := &testkit.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	sess := session.New(cp, session.Identity{AgentID: "agent-1", SessionID: "s-1"}, rpc.ImageInfo{ImageVersion: "v"}, 10*time.Millisecond, log)
	New(cp, sess, Config{ChoirDir: choir, Workspace: ws, Log: log}).Attach()
	ctx, cancel := context.WithCancel(context.Background())
	a := &agent{t: t, cd: cd, srv: srv, model: model, ws: ws, logs: logs, sess: sess, cancel: cancel, done: make(chan error, 1)}
	go func() { a.done <- sess.Run(ctx) }()
	t.Cleanup(a.stop)
	a.waitFor("the session to open", func() bool { return len(a.cd.heartbeats) > 0 })
	return a
}

// stop ends the session gracefully (final heartbeat included) once.
func (a *agent) stop() {
	a.cancel()
	select {
	case err := <-a.done:
		if err != nil {
			a.t.Errorf("session Run = %v", err)
		}
		a.done <- nil
	case <-time.After(30 * time.Second):
		a.t.Fatal("the session did not stop")
	}
}

// waitFor waits, without sleeping, until cond holds under the fake's lock.
func (a *agent) waitFor(what string, cond func() bool) {
	a.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		a.cd.mu.Lock()
		ok := cond()
		a.cd.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-a.cd.changed:
		case <-deadline:
			a.t.Fatalf("timed out waiting for %s; agent log:\n%s", what, a.logs.String())
		}
	}
}

// waitReply waits until a reply has gone to the DM.
func (a *agent) waitReply() {
	a.t.Helper()
	a.waitFor("the reply", func() bool {
		for _, h := range a.cd.hostCalls {
			if strings.Contains(string(h.Input), `"kind":"reply"`) {
				return true
			}
		}
		return false
	})
}

func (a *agent) say(id, text string) {
	a.srv.Publish("s-1", rpc.EventUserMessage, rpc.UserMessage{ID: id, From: "console", Text: text})
}

// exits is every text that left the agent, by where it went.
func (a *agent) exits() map[string]string {
	out := map[string]string{}
	for i, r := range a.model.Requests() {
		out[fmt.Sprintf("model request %d", i+1)] = string(r.Body)
	}
	a.cd.mu.Lock()
	defer a.cd.mu.Unlock()
	for i, h := range a.cd.hostCalls {
		out[fmt.Sprintf("host tool call %d (%s)", i+1, h.ToolName)] = string(h.Input)
	}
	for i, hb := range a.cd.heartbeats {
		raw, _ := json.Marshal(hb)
		out[fmt.Sprintf("heartbeat %d", i+1)] = string(raw)
	}
	for i, st := range a.cd.statuses {
		raw, _ := json.Marshal(st)
		out[fmt.Sprintf("status report %d", i+1)] = string(raw)
	}
	for i, ap := range a.cd.approvals {
		raw, _ := json.Marshal(ap)
		out[fmt.Sprintf("approval %d", i+1)] = string(raw)
	}
	out["agent log"] = a.logs.String()
	return out
}

// events is every event replicated by heartbeats, in order, each once (a
// heartbeat cut short by the stop is sent again: replication is at least
// once, and a repeat must be identical).
func (a *agent) events() []rpc.Event {
	a.cd.mu.Lock()
	defer a.cd.mu.Unlock()
	var evs []rpc.Event
	for _, hb := range a.cd.heartbeats {
		for _, e := range hb.Patches {
			if n := int64(len(evs)); e.Rev <= n {
				if evs[e.Rev-1].Hash != e.Hash {
					a.t.Errorf("event %d was replicated twice with different hashes", e.Rev)
				}
				continue
			}
			evs = append(evs, e)
		}
	}
	return evs
}

// forms are the texts a value must not appear as.
func forms(v string) []string {
	q, _ := json.Marshal(v)
	once := string(q[1 : len(q)-1])
	q2, _ := json.Marshal(once)
	return []string{v, once, string(q2[1 : len(q2)-1])}
}

func jsonString(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

// checkNoLeak fails for every exit that holds a forbidden text, and checks
// the replicated log still verifies.
func (a *agent) checkNoLeak(forbid []string) {
	a.t.Helper()
	for where, text := range a.exits() {
		for _, f := range forbid {
			if strings.Contains(text, f) {
				a.t.Errorf("%s holds %q:\n%s", where, f, text)
			}
		}
	}
	if err := arbiter.Verify("", a.events()); err != nil {
		a.t.Errorf("the replicated events do not verify: %v", err)
	}
}

func call(id, name, args string) openaitest.ToolCall {
	return openaitest.ToolCall{ID: id, Name: name, Arguments: args}
}

// The whole path: a tool prints the model key; the next model request, the
// reply on the DM, the replicated events, the status reports and the log
// hold the marker, never the key.
func TestToolOutputSecretLeavesNowhere(t *testing.T) {
	a := startAgent(t)
	a.model.Expect(
		openaitest.Chat().ReplyToolCalls(call("c1", "acme_leak", `{"mode":"summary"}`)),
		openaitest.Chat().Check(func(t testing.TB, req *openaitest.Request) {
			msgs := req.Messages()
			last := msgs[len(msgs)-1]
			if last.Role != "tool" || !strings.Contains(last.Content, "the key is [secret:llm-key]") {
				t.Errorf("the tool message the model sees = %+v; want the marker in place of the key", last)
			}
		}).ReplyText("Your key is "+llmKey+", keep it safe."),
	)
	a.say("m1", "show me the key")
	a.waitReply()
	a.stop()

	dms := a.cd.dms()
	if len(dms) != 1 || dms[0].Text != "Your key is [secret:llm-key], keep it safe." {
		t.Errorf("DM sends = %+v; want one reply with the marker", dms)
	}
	var sawResult bool
	for _, e := range a.events() {
		if e.Type == arbiter.ToolResultCommitted && strings.Contains(string(e.Payload), "[secret:llm-key]") {
			sawResult = true
		}
	}
	if !sawResult {
		t.Error("no replicated ToolResultCommitted carries the marker")
	}
	a.checkNoLeak(forms(llmKey))
}

// Each case drives one turn in which a secret tries to leave another way.
func TestHostileSecretLeaks(t *testing.T) {
	basic := base64.StdEncoding.EncodeToString([]byte("agent:" + llmKey))
	tests := []struct {
		name   string
		user   string
		steps  []*openaitest.Step // the model's turns; a final text reply is added
		forbid []string           // besides every form of both secrets
		// marker must appear in the last model request (the leak path was
		// really taken).
		marker string
		check  func(t *testing.T, a *agent)
	}{
		{name: "secret split across lines", steps: tools(call("c", "acme_leak", `{"mode":"split"}`)),
			forbid: []string{llmKey[:12], llmKey[12:]}, marker: "[secret:llm-key]"},
		{name: "JSON-escaped token in a nested JSON document", steps: tools(call("c", "acme_gitleak", `{"mode":"escaped"}`)),
			marker: "[secret:git-token]"},
		{name: "on stderr of a failing tool", steps: tools(call("c", "acme_leak", `{"mode":"stderr"}`)),
			marker: "token [secret:llm-key] rejected"},
		{name: "in a tool error message", steps: tools(call("c", "acme_leak", `{"mode":"error"}`)),
			marker: "auth failed for [secret:llm-key]"},
		{name: "base64 in an HTTP Basic header", steps: tools(call("c", "acme_leak", `{"mode":"basic"}`)),
			forbid: []string{basic[8:40]}, marker: "[secret:llm-key]"},
		{name: "hex dump", steps: tools(call("c", "acme_leak", `{"mode":"hex"}`)),
			forbid: []string{hex.EncodeToString([]byte(llmKey))}, marker: "[secret:llm-key]"},
		{name: "read back from a workspace file", steps: append(tools(call("c", "acme_leak", `{"mode":"file"}`)),
			openaitest.Chat().ReplyToolCalls(call("r", "choir_fs_read", `{"path":"key.txt"}`))),
			marker: "key=[secret:llm-key]"},
		{name: "in the name and text of a staged file", steps: tools(call("c", "acme_leak", `{"mode":"stage"}`)),
			marker: "staged", check: func(t *testing.T, a *agent) {
				dms := a.cd.dms()
				if len(dms) == 0 || !containsAll(dms[len(dms)-1].Files, ".choirtmp/send/[secret:llm-key].txt", ".choirtmp/send/notes.txt") {
					t.Errorf("DM files = %+v; want the staged file renamed with the marker", dms)
				}
				data, _ := os.ReadFile(filepath.Join(a.ws, ".choirtmp", "send", "notes.txt"))
				if string(data) != "the key: [secret:llm-key]\n" {
					t.Errorf("staged notes.txt = %q; want it redacted before it is sent", data)
				}
			}},
		{name: "in a skill violation", steps: []*openaitest.Step{
			openaitest.Chat().ReplyToolCalls(call("s", "choir_skill_start", `{"skill":"tool-builder"}`)),
			openaitest.Chat().ReplyToolCalls(call("t", "choir_skill_transition", `{"on":`+jsonString(llmKey)+`}`)),
		}, marker: "[secret:llm-key]"},
		{name: "in a tool name the model invents", steps: tools(call("c", "acme_"+llmKey, `{}`)),
			marker: "acme_[secret:llm-key]"},
		{name: "in the model's tool arguments", steps: tools(call("c", "choir_fs_write", `{"path":"k.txt","op":"create","content":`+jsonString("key "+gitToken)+`}`)),
			marker: "[secret:git-token]"},
		{name: "pasted by the user", user: "here is my key " + llmKey + " please store it", steps: nil, marker: "here is my key [secret:llm-key]"},
		{name: "in the model's reply", steps: nil, marker: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := startAgent(t)
			steps := append([]*openaitest.Step(nil), tc.steps...)
			steps = append(steps, openaitest.Chat().Check(func(t testing.TB, req *openaitest.Request) {
				if tc.marker != "" && !strings.Contains(string(req.Body), tc.marker) {
					t.Errorf("the last model request lacks %q: the leak path was not taken:\n%s", tc.marker, req.Body)
				}
			}).ReplyText("Done. The key was "+llmKey+" and the token "+gitToken+"."))
			a.model.Expect(steps...)
			user := tc.user
			if user == "" {
				user = "go"
			}
			a.say("m1", user)
			a.waitReply()
			a.stop()
			dms := a.cd.dms()
			if len(dms) == 0 || !strings.Contains(dms[len(dms)-1].Text, "The key was [secret:llm-key] and the token [secret:git-token].") {
				t.Errorf("DM sends = %+v; want the reply with both markers", dms)
			}
			if tc.check != nil {
				tc.check(t, a)
			}
			a.checkNoLeak(append(append(forms(llmKey), forms(gitToken)...), tc.forbid...))
		})
	}
}

func tools(calls ...openaitest.ToolCall) []*openaitest.Step {
	return []*openaitest.Step{openaitest.Chat().ReplyToolCalls(calls...)}
}

func containsAll(have []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}

// A rotated secret is redacted from the moment the agent has it.
func TestRotatedSecretIsRedacted(t *testing.T) {
	const rotated = "sk-e2e-rotated-77aa88bb99cc"
	a := startAgent(t)
	a.cd.mu.Lock()
	a.cd.secrets["llm-key"] = rotated
	a.cd.mu.Unlock()
	a.srv.Publish("s-1", rpc.EventSecretsChanged, map[string]string{})
	a.model.Expect(
		openaitest.Chat().WantHeader("Authorization", "Bearer "+rotated).ReplyToolCalls(call("c1", "acme_leak", `{"mode":"summary"}`)),
		openaitest.Chat().Check(func(t testing.TB, req *openaitest.Request) {
			if !strings.Contains(string(req.Body), "the key is [secret:llm-key]") {
				t.Errorf("the tool result in the request is not the marker:\n%s", req.Body)
			}
		}).ReplyText("old "+llmKey+" new "+rotated),
	)
	a.waitFor("the rotated key", func() bool { v, _ := a.sess.Secrets.Get("llm-key"); return v == rotated })
	a.say("m1", "go")
	a.waitReply()
	a.stop()
	if dms := a.cd.dms(); len(dms) != 1 || dms[0].Text != "old [secret:llm-key] new [secret:llm-key]" {
		t.Errorf("DM = %+v; want both the retired and the rotated key redacted", dms)
	}
	a.checkNoLeak(append(forms(llmKey), forms(rotated)...))
}
