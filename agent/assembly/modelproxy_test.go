package assembly

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
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

// proxyChoird opens the session with ModelProxy and carries the model
// calls itself, as choird/modelproxy.go does: to the model's endpoint it
// alone knows, with the key it alone holds.
type proxyChoird struct {
	*lanesChoird
	endpoint, key string

	mu    sync.Mutex
	calls []rpc.ModelCall
	auth  []string // the Authorization header each carried call arrived with
}

func (c *proxyChoird) HandleInitHello(ctx context.Context, r rpc.InitHelloReq) (rpc.InitHelloResp, error) {
	resp, err := c.lanesChoird.HandleInitHello(ctx, r)
	resp.ModelProxy = true
	return resp, err
}

func (c *proxyChoird) ProxyModel(ctx context.Context, call rpc.ModelCall) (*rpc.ModelAnswer, error) {
	c.mu.Lock()
	c.calls = append(c.calls, call)
	c.mu.Unlock()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint+"/"+call.Op, bytes.NewReader(call.Body))
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return &rpc.ModelAnswer{Status: resp.StatusCode, Header: resp.Header, Body: body}, nil
}

// recordAuth wraps the rpc server to see what the agent's model calls
// arrive with.
func (c *proxyChoird) recordAuth(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, rpc.ModelPathPrefix) {
			c.mu.Lock()
			c.auth = append(c.auth, r.Header.Get("Authorization"))
			c.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})
}

// With ModelProxy the agent's model calls go to choird on its control
// socket with the lease token, never to the model's endpoint, and it
// holds no key: the request template's headers are choird's to add, its
// body fields still the agent's.
func TestModelCallsGoThroughChoird(t *testing.T) {
	model := openaitest.New(t)
	model.Expect(openaitest.Chat().ReplyText("Hello through choird."))
	c := &proxyChoird{
		lanesChoird: newLanesChoird(map[string]config.Model{
			// The endpoint the agent is told is unreachable: only choird
			// knows where the model is.
			"fast": {Provider: "openai", Model: "fast-model", Endpoint: "http://127.0.0.1:1/v1", Secret: "fast-key",
				Request: &config.ModelRequest{Body: map[string]json.RawMessage{"top_k": json.RawMessage("5")},
					Headers: map[string]config.HeaderValue{"X-Org": {Secret: "org-key", Format: "org %s"}}}},
		}, "fast", "", nil), // choird grants no key
		endpoint: model.URL(), key: "sk-held-by-choird",
	}
	srv, sess := proxyRuntime(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sess.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	srv.Publish("s-1", rpc.EventUserMessage, rpc.UserMessage{ID: "m1", From: "console", Text: "hi"})
	if r := c.waitDM(t, rpc.DMReply); r.Text != "Hello through choird." {
		t.Fatalf("reply = %+v; want the model's answer, carried by choird", r)
	}
	if !sess.ModelProxy {
		t.Error("session.ModelProxy = false after an INIT_HELLO that said true")
	}
	reqs := model.Requests()
	if len(reqs) != 1 || reqs[0].Model() != "fast-model" || reqs[0].Header.Get("Authorization") != "Bearer sk-held-by-choird" {
		t.Fatalf("the model received %d requests (%+v); want 1 for fast-model with choird's key", len(reqs), reqs)
	}
	if !reqs[0].Has("top_k") {
		t.Error("the request template's body field top_k is missing: the agent merges it")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.calls) != 1 || c.calls[0].Model != "fast" || c.calls[0].Op != "chat/completions" {
		t.Errorf("choird carried %+v; want one chat/completions call for model fast", c.calls)
	}
	if len(c.auth) != 1 || c.auth[0] != "Bearer tok" {
		t.Errorf("the agent's model calls arrived with Authorization %q; want its lease token", c.auth)
	}
	if v, ok := sess.Secrets.Get("fast-key"); ok {
		t.Errorf("the agent holds the model key %q; want none", v)
	}
}

// proxyRuntime is runtimeFor with c as the whole of choird: its verbs and
// its model calls.
func proxyRuntime(t *testing.T, c *proxyChoird) (*rpc.Server, *session.Session) {
	t.Helper()
	srv := rpc.NewServer(c, rpc.DefaultLimits(), slog.New(slog.DiscardHandler))
	srv.Models = c
	srv.Open("s-1", "agent-1", "tok")
	sock := filepath.Join(t.TempDir(), "choird.sock")
	l, err := rpc.ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: c.recordAuth(srv)}
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
	New(cp, sess, Config{ChoirDir: choir, Workspace: t.TempDir(), Log: log}).Attach()
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	return srv, sess
}
