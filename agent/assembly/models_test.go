package assembly

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/agent/session"
	"choir/internal/config"
	"choir/internal/rpc"
	"choir/testkit"
	"choir/testkit/openaitest"
)

// lanesChoird is choird for tests of the lanes' models and budgets: it
// sends dyn as the config, grants the keys, records the DMs and
// TERMINATE_SELF.
type lanesChoird struct {
	*fakeChoird
	dyn    config.Dynamic
	gitDir string // the runtime's GitDir ("": none)

	mu        sync.Mutex
	terminate []string
	version   int64 // dyn's version once setDynamic changed it (0: 1)
}

// setDynamic makes d the config, at the next version: heartbeats announce
// it and the agent fetches it.
func (c *lanesChoird) setDynamic(d config.Dynamic) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version = max(c.version, 1) + 1
	d.Version, c.dyn = c.version, d
}

func (c *lanesChoird) current() (int64, config.Dynamic) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return max(c.version, 1), c.dyn
}

func (c *lanesChoird) HandleFetchConfig(_ context.Context, r rpc.ConfigReq) (rpc.ConfigResp, error) {
	v, d := c.current()
	if r.CurrentConfigVersion >= v {
		return rpc.ConfigResp{ConfigVersion: v}, nil
	}
	raw, err := json.Marshal(d)
	return rpc.ConfigResp{ConfigVersion: v, Config: raw}, err
}

func (c *lanesChoird) HandleHeartbeat(ctx context.Context, r rpc.HeartbeatReq) (rpc.HeartbeatResp, error) {
	resp, err := c.fakeChoird.HandleHeartbeat(ctx, r)
	resp.ConfigVersionLatest, _ = c.current()
	return resp, err
}

func (c *lanesChoird) HandleTerminate(_ context.Context, r rpc.TerminateReq) (rpc.TerminateResp, error) {
	c.mu.Lock()
	c.terminate = append(c.terminate, r.Reason)
	c.mu.Unlock()
	c.poke()
	return rpc.TerminateResp{Ack: true}, nil
}

// runtimeFor serves c on a fresh socket and returns its server, a session
// of agent-1 with the runtime attached (not yet running), and the
// session's log, printed when the test fails.
func runtimeFor(t *testing.T, c *lanesChoird) (*rpc.Server, *session.Session, *testkit.Buffer) {
	t.Helper()
	srv := rpc.NewServer(c, rpc.DefaultLimits(), slog.New(slog.DiscardHandler))
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
	os.WriteFile(filepath.Join(choir, "USER.md"), []byte("The user."), 0o644)
	cp, err := rpc.Dial(rpc.Options{Transport: rpc.TransportUDS, Socket: sock, SessionID: "s-1", LeaseToken: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	logs := &testkit.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	sess := session.New(cp, session.Identity{AgentID: "agent-1", SessionID: "s-1"}, rpc.ImageInfo{ImageVersion: "v"}, 10*time.Millisecond, log)
	New(cp, sess, Config{ChoirDir: choir, Workspace: t.TempDir(), Log: log, GitDir: c.gitDir, GitHelper: "/choir/bin/git-cred-helper"}).Attach()
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	return srv, sess, logs
}

// runLanes starts a runtime against c and returns the publisher of push
// events and the session's result.
func runLanes(t *testing.T, c *lanesChoird) (*rpc.Server, <-chan error) {
	t.Helper()
	srv, sess, _ := runtimeFor(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { err := sess.Run(ctx); done <- err; done <- err }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("the session did not stop")
		}
	})
	return srv, done
}

// waitDM waits for a DM of the kind and returns it.
func (c *lanesChoird) waitDM(t *testing.T, kind string) rpc.DMSend {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		for _, m := range c.dms() {
			if m.Kind == kind {
				return m
			}
		}
		select {
		case <-c.changed:
		case <-deadline:
			t.Fatalf("no %s DM; got %+v", kind, c.dms())
		}
	}
}

func newLanesChoird(models map[string]config.Model, llm, core string, secrets map[string]string) *lanesChoird {
	return &lanesChoird{
		fakeChoird: &fakeChoird{changed: make(chan struct{}, 1), secrets: secrets},
		dyn:        config.Dynamic{Version: 1, LLM: llm, CoreLLM: core, Models: models, Tunables: config.DefaultTunables()},
	}
}

// The core jobs call their own model (core_llm: its endpoint, name and
// key), the edge its own, each chosen at the call (§7.1, §21.2).
func TestCoreJobsUseTheirOwnModel(t *testing.T) {
	edge, core := openaitest.New(t), openaitest.New(t)
	c := newLanesChoird(map[string]config.Model{
		"small":    {Provider: "openai", Model: "small-model", Endpoint: edge.URL(), Secret: "edge-key"},
		"flagship": {Provider: "openai", Model: "flagship-model", Endpoint: core.URL(), Secret: "core-key"},
	}, "small", "flagship", map[string]string{"edge-key": "sk-edge-1234", "core-key": "sk-core-5678"})
	edge.Expect(
		openaitest.Chat().ReplyToolCalls(openaitest.ToolCall{ID: "c1", Name: "choir_core_spawn", Arguments: `{"job_name":"deep","task_spec":"Think hard."}`}),
		openaitest.Chat().ReplyText("Started deep."),
	)
	core.Expect(openaitest.Chat().ReplyText("The answer is 42."))
	srv, _ := runLanes(t, c)
	srv.Publish("s-1", rpc.EventUserMessage, rpc.UserMessage{ID: "m1", From: "console", Text: "think"})
	if r := c.waitDM(t, rpc.DMCoreReport); r.Core != "deep" || !strings.Contains(r.Text, "The answer is 42.") {
		t.Errorf("core report = %+v", r)
	}
	if r := c.waitDM(t, rpc.DMReply); r.Text != "Started deep." { // the core may report first
		t.Errorf("reply = %+v", r)
	}
	for _, tt := range []struct {
		name   string
		server *openaitest.Server
		model  string
		key    string
		calls  int
	}{{"edge", edge, "small-model", "sk-edge-1234", 2}, {"core", core, "flagship-model", "sk-core-5678", 1}} {
		reqs := tt.server.Requests()
		if len(reqs) != tt.calls {
			t.Errorf("%s model got %d requests; want %d", tt.name, len(reqs), tt.calls)
		}
		for _, r := range reqs {
			if r.Model() != tt.model || r.Header.Get("Authorization") != "Bearer "+tt.key {
				t.Errorf("%s request %d: model %q, auth %q; want %q with its own key", tt.name, r.Number, r.Model(), r.Header.Get("Authorization"), tt.model)
			}
		}
	}
}

// An edge whose session budget is spent tells the DM and ends the session
// itself, TERMINATE_SELF naming the budget (§7.6); the session's graceful
// end (final heartbeat) is session.TestEndStopsTheSessionWithItsReason's.
func TestSpentSessionBudgetTerminatesTheSession(t *testing.T) {
	model := openaitest.New(t)
	c := newLanesChoird(map[string]config.Model{"m": {Provider: "openai", Model: "test-model", Endpoint: model.URL(), Secret: "k"}},
		"m", "", map[string]string{"k": "sk-test-9876"})
	c.dyn.Tunables.Budgets.TotalSessionTokens = 50
	model.Expect(openaitest.Chat().WithUsage(40, 20).ReplyText("Hello."))
	srv, done := runLanes(t, c)
	srv.Publish("s-1", rpc.EventUserMessage, rpc.UserMessage{ID: "m1", From: "console", Text: "hi"})
	if r := c.waitDM(t, rpc.DMReply); r.Text != "Hello." {
		t.Errorf("reply = %+v", r)
	}
	notice := c.waitDM(t, rpc.DMNotice)
	if !strings.Contains(notice.Text, "total_session_tokens") || !strings.Contains(notice.Text, "session ends now") {
		t.Errorf("notice = %q; want the budget and the end", notice.Text)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("session Run = %v; want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the session did not end")
	}
	c.mu.Lock()
	reasons := append([]string(nil), c.terminate...)
	c.mu.Unlock()
	if len(reasons) != 1 || !strings.Contains(reasons[0], "total_session_tokens budget (50) is spent") {
		t.Errorf("TERMINATE_SELF reasons = %q; want the spent budget", reasons)
	}
}
