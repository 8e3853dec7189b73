package session

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/internal/rpc"
)

// choird is a recording control plane.
type choird struct {
	mu         sync.Mutex
	verbs      []rpc.Verb
	hello      rpc.InitHelloReq
	heartbeats []rpc.HeartbeatReq
	terminate  string
	latest     int64
	changed    chan struct{}

	// recovery, when set, resumes the session from stored (§13.2).
	recovery *rpc.Recovery
	stored   []rpc.Event
	fetches  int
}

func (c *choird) note(v rpc.Verb) {
	c.mu.Lock()
	c.verbs = append(c.verbs, v)
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

func (c *choird) count(v rpc.Verb) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, x := range c.verbs {
		if x == v {
			n++
		}
	}
	return n
}

func (c *choird) HandleInitHello(_ context.Context, r rpc.InitHelloReq) (rpc.InitHelloResp, error) {
	c.mu.Lock()
	c.hello = r
	c.mu.Unlock()
	c.note(rpc.VerbInitHello)
	resp := rpc.InitHelloResp{Status: rpc.InitFresh, ConfigVersion: 1, ResourceBindings: rpc.ResourceBindings{Workspace: "ws", LLM: "m", DM: "dm"}}
	c.mu.Lock()
	if c.recovery != nil {
		resp.Status, resp.Recovery = rpc.InitRecover, c.recovery
	}
	c.mu.Unlock()
	return resp, nil
}
func (c *choird) HandleSecrets(context.Context, rpc.SecretReq) (rpc.SecretResp, error) {
	c.note(rpc.VerbGetSecrets)
	return rpc.SecretResp{Secrets: map[string]string{"openrouter-key": "sk-1"}}, nil
}
func (c *choird) HandleHeartbeat(_ context.Context, r rpc.HeartbeatReq) (rpc.HeartbeatResp, error) {
	c.mu.Lock()
	c.heartbeats = append(c.heartbeats, r)
	latest := c.latest
	c.mu.Unlock()
	c.note(rpc.VerbHeartbeat)
	return rpc.HeartbeatResp{AckRev: r.NewRev, ConfigVersionLatest: latest}, nil
}
func (c *choird) HandleApproval(context.Context, rpc.ApprovalReq) (rpc.ApprovalResp, error) {
	return rpc.ApprovalResp{}, nil
}
func (c *choird) HandleStatus(context.Context, rpc.StatusReq) (rpc.StatusResp, error) {
	return rpc.StatusResp{}, nil
}
func (c *choird) HandleTerminate(_ context.Context, r rpc.TerminateReq) (rpc.TerminateResp, error) {
	c.mu.Lock()
	c.terminate = r.Reason
	c.mu.Unlock()
	c.note(rpc.VerbTerminateSelf)
	return rpc.TerminateResp{Ack: true}, nil
}
func (c *choird) HandleFetchConfig(_ context.Context, r rpc.ConfigReq) (rpc.ConfigResp, error) {
	c.mu.Lock()
	latest := c.latest
	c.mu.Unlock()
	c.note(rpc.VerbFetchDynamicConfig)
	if r.CurrentConfigVersion >= latest {
		return rpc.ConfigResp{ConfigVersion: latest}, nil
	}
	return rpc.ConfigResp{ConfigVersion: latest, Config: json.RawMessage(`{"v":` + strings.Repeat("1", 1) + `}`)}, nil
}
func (c *choird) HandleFetchEvents(_ context.Context, r rpc.FetchEventsReq) (rpc.FetchEventsResp, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fetches++
	var out rpc.FetchEventsResp
	if r.AfterRev > int64(len(c.stored)) {
		return out, rpc.Errorf(404, rpc.CodeBadRequest, "no revision %d", r.AfterRev)
	}
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
func (c *choird) HandleHostTool(context.Context, rpc.HostToolReq) (rpc.HostToolResp, error) {
	return rpc.HostToolResp{}, nil
}

func (c *choird) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for !cond() {
		select {
		case <-c.changed:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// serveChoird serves h as choird on a fresh socket with session s-1 of
// agentID open under the token "tok", and returns the server and the
// agent's client.
func serveChoird(t *testing.T, h rpc.ControlPlaneHandler, agentID string, log *slog.Logger) (*rpc.Server, *rpc.Client) {
	t.Helper()
	srv := rpc.NewServer(h, rpc.DefaultLimits(), log)
	srv.Open("s-1", agentID, "tok")
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
	return srv, cp
}

func TestSessionLifecycle(t *testing.T) {
	cd := &choird{latest: 1, changed: make(chan struct{}, 1)}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, cp := serveChoird(t, cd, "a-1", log)
	s := New(cp, Identity{AgentID: "agent-1", SessionID: "s-1"}, rpc.ImageInfo{ImageVersion: "abc1234", ToolManifestHash: "t", SkillManifestHash: "k"}, 5*time.Millisecond, log)
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()

	cd.waitFor(t, "two heartbeats", func() bool { return cd.count(rpc.VerbHeartbeat) >= 2 })
	cd.mu.Lock()
	hello := cd.hello
	cd.mu.Unlock()
	if hello.AgentID != "agent-1" || hello.ImageVersion != "abc1234" || hello.ToolManifestHash != "t" {
		t.Errorf("INIT_HELLO = %+v; want the identity and image version", hello)
	}
	if v, ok := s.Secrets.Get("openrouter-key"); !ok || v != "sk-1" {
		t.Errorf("secret after open = %q, %v", v, ok)
	}
	if s.Bindings.Workspace != "ws" {
		t.Errorf("bindings = %+v", s.Bindings)
	}
	// A config change announced by heartbeat is fetched and swapped in.
	cd.mu.Lock()
	cd.latest = 2
	cd.mu.Unlock()
	cd.waitFor(t, "config version 2", func() bool { return s.ConfigVersion() == 2 })
	// A shutdown pushed by choird ends the session with a final heartbeat and
	// TERMINATE_SELF.
	srv.Publish("s-1", rpc.EventShutdown, map[string]string{"reason": "agent stop"})
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v; want nil after a requested shutdown", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not end after the shutdown event")
	}
	cd.mu.Lock()
	defer cd.mu.Unlock()
	if !strings.Contains(cd.terminate, "agent stop") {
		t.Errorf("TERMINATE_SELF reason = %q; want the shutdown reason", cd.terminate)
	}
	if last := cd.heartbeats[len(cd.heartbeats)-1]; !last.Final {
		t.Errorf("last heartbeat = %+v; want Final", last)
	}
}

func TestSessionEndsWhenChoirdRevokesIt(t *testing.T) {
	cd := &choird{latest: 1, changed: make(chan struct{}, 1)}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, cp := serveChoird(t, cd, "a-1", log)
	s := New(cp, Identity{AgentID: "a", SessionID: "s-1"}, rpc.ImageInfo{}, 5*time.Millisecond, log)
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	cd.waitFor(t, "a heartbeat", func() bool { return cd.count(rpc.VerbHeartbeat) >= 1 })
	srv.Close("s-1")
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "choird ended this session") {
			t.Errorf("Run after revocation = %v; want 'choird ended this session'", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not end after its session was revoked")
	}
}
