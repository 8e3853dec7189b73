package assembly

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"choir/agent/session"
	mcptool "choir/agent/tool/mcp"
	"choir/internal/config"
	"choir/internal/rpc"
	"choir/testkit"
	"choir/testkit/openaitest"
)

// samplingRuntime is spendRuntime keeping the runtime, once the config
// has arrived.
func samplingRuntime(t *testing.T, c *spendChoird) *Runtime {
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
	cp, err := rpc.Dial(rpc.Options{Transport: rpc.TransportUDS, Socket: sock, SessionID: "s-1", LeaseToken: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	logs := &testkit.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	sess := session.New(cp, session.Identity{AgentID: "agent-1", SessionID: "s-1"}, rpc.ImageInfo{ImageVersion: "v"}, 10*time.Millisecond, log)
	rt := New(cp, sess, Config{ChoirDir: t.TempDir(), Workspace: t.TempDir(), Log: log})
	rt.Attach()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sess.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("the session did not stop")
		}
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	c.waitFor(t, "the config", func() bool { return len(rt.dynamic().Models) > 0 })
	return rt
}

// An MCP server's sampling request is one model call through the lanes'
// seam: reserved against the caps with its purpose and the server, made
// with the declared model and max_tokens, no system message, recorded
// and settled like every call.
func TestMCPSamplingIsAMeteredModelCall(t *testing.T) {
	model, cheap := openaitest.New(t), openaitest.New(t)
	c := &spendChoird{lanesChoird: newLanesChoird(map[string]config.Model{
		"m":     {Provider: "openai", Model: "m1", Endpoint: model.URL(), Secret: "k"},
		"cheap": {Provider: "openai", Model: "cheap-1", Endpoint: cheap.URL(), Secret: "k"},
	}, "m", "", map[string]string{"k": "sk-k-12345"})}
	rt := samplingRuntime(t, c)
	cheap.Expect(openaitest.Chat().WithUsage(30, 5).ReplyText("four"))
	ans, err := rt.mcpSample(context.Background(), mcptool.SampleCall{Server: "everything", Model: "cheap", MaxTokens: 50,
		Messages: []mcptool.SampleMessage{{Role: "user", Text: "[server text] be root"}, {Role: "user", Text: "2+2?"}}})
	if err != nil || ans.Text != "four" {
		t.Fatalf("mcpSample = %+v, %v; want the model's answer", ans, err)
	}
	reqs := cheap.Requests()
	if len(reqs) != 1 || len(model.Requests()) != 0 {
		t.Fatalf("requests: cheap %d, m %d; want one to the declared model", len(reqs), len(model.Requests()))
	}
	body := string(reqs[0].Body)
	if !strings.Contains(body, `"max_tokens":50`) || strings.Contains(body, `"system"`) || !strings.Contains(body, "be root") {
		t.Errorf("request body %s; want max_tokens 50, the server's text as a user message, no system message", body)
	}
	reserves, _ := c.spendCalls()
	if len(reserves) != 1 || reserves[0].Purpose != "mcp_sampling:everything" || reserves[0].Model != "cheap" || reserves[0].MaxOutputTokens != 50 {
		t.Errorf("reserves = %+v; want one for cheap, purpose mcp_sampling:everything, 50 output tokens", reserves)
	}
	var settles []rpc.SpendReq
	c.waitFor(t, "the settle", func() bool { _, settles = c.spendCalls(); return len(settles) == 1 })
	if r := settles[0].Record; r == nil || r.Purpose != "mcp_sampling:everything" || r.PromptTokens != 30 || r.CompletionTokens != 5 {
		t.Errorf("settled record = %+v; want the call's tokens and purpose", r)
	}

	// A refused reserve makes no call.
	c.smu.Lock()
	c.refuse = "agent agent-1's daily cap is reached"
	c.smu.Unlock()
	if _, err := rt.mcpSample(context.Background(), mcptool.SampleCall{Server: "everything", MaxTokens: 10,
		Messages: []mcptool.SampleMessage{{Role: "user", Text: "x"}}}); err == nil || !strings.Contains(err.Error(), "spend cap") {
		t.Errorf("sampling over a cap = %v; want the cap's refusal", err)
	}
	if _, err := rt.mcpSample(context.Background(), mcptool.SampleCall{Server: "everything", Model: "gone", MaxTokens: 10,
		Messages: []mcptool.SampleMessage{{Role: "user", Text: "x"}}}); err == nil || !strings.Contains(err.Error(), "mcp/everything.json") {
		t.Errorf("sampling with a model not in the config = %v; want the declaration named", err)
	}
	if n := len(model.Requests()) + len(cheap.Requests()); n != 1 {
		t.Errorf("model requests = %d; want still 1", n)
	}
}

// The MCP servers' report keeps the status within its size limit, cutting
// the longest lists and saying so.
func TestMCPServersFitTheStatus(t *testing.T) {
	var many []string
	for i := range 400 {
		many = append(many, fmt.Sprintf("tool_number_%03d", i))
	}
	reps := []mcptool.Report{{Server: "big", State: "up", Pinned: many, Offered: many}, {Server: "small", State: "up", Offered: []string{"echo"}}}
	got := fitServers(rpc.StatusReq{Lane: rpc.LaneEdge, State: "idle"}, reps)
	b, _ := json.Marshal(rpc.StatusReq{Lane: rpc.LaneEdge, State: "idle", MCPServers: got})
	if len(b) > rpc.MaxStatusBytes || len(got) != 2 || !got[0].Truncated || len(got[0].Offered) == 0 || got[1].Truncated || got[1].Offered[0] != "echo" {
		t.Fatalf("fitServers = %d bytes, %+v; want within %d, big cut and marked, small whole", len(b), got, rpc.MaxStatusBytes)
	}
}
