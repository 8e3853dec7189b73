package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/agent/redact"
	"choir/internal/rpc"
	"choir/testkit"
)

// sink is a ControlPlane that records what reaches it.
type sink struct {
	mu   sync.Mutex
	sent []any
}

var _ rpc.ControlPlane = (*sink)(nil)

func (s *sink) note(v any) {
	s.mu.Lock()
	s.sent = append(s.sent, v)
	s.mu.Unlock()
}
func (s *sink) InitHello(_ context.Context, r rpc.InitHelloReq) (rpc.InitHelloResp, error) {
	s.note(r)
	return rpc.InitHelloResp{}, nil
}
func (s *sink) GetSecrets(_ context.Context, r rpc.SecretReq) (rpc.SecretResp, error) {
	s.note(r)
	return rpc.SecretResp{}, nil
}
func (s *sink) Heartbeat(_ context.Context, r rpc.HeartbeatReq) (rpc.HeartbeatResp, error) {
	s.note(r)
	return rpc.HeartbeatResp{}, nil
}
func (s *sink) RequestApproval(_ context.Context, r rpc.ApprovalReq) (rpc.ApprovalResp, error) {
	s.note(r)
	return rpc.ApprovalResp{}, nil
}
func (s *sink) ReportStatus(_ context.Context, r rpc.StatusReq) (rpc.StatusResp, error) {
	s.note(r)
	return rpc.StatusResp{}, nil
}
func (s *sink) Terminate(_ context.Context, r rpc.TerminateReq) (rpc.TerminateResp, error) {
	s.note(r)
	return rpc.TerminateResp{}, nil
}
func (s *sink) FetchDynamicConfig(_ context.Context, r rpc.ConfigReq) (rpc.ConfigResp, error) {
	s.note(r)
	return rpc.ConfigResp{}, nil
}
func (s *sink) FetchEvents(_ context.Context, r rpc.FetchEventsReq) (rpc.FetchEventsResp, error) {
	s.note(r)
	return rpc.FetchEventsResp{}, nil
}
func (s *sink) ExecuteHostTool(_ context.Context, r rpc.HostToolReq) (rpc.HostToolResp, error) {
	s.note(r)
	return rpc.HostToolResp{}, nil
}
func (s *sink) Events(context.Context, string) (*rpc.EventStream, error) {
	return nil, errors.New("no push channel in this test")
}

const tok = "tok-9c1d7e3f5a2b4680"

func TestRedactedControlPlaneCleansEveryText(t *testing.T) {
	r := redact.New(map[string]string{"notion-key": tok})
	s := &sink{}
	cp := Redacted(s, r)
	if Redacted(cp, r) != cp {
		t.Error("Redacted wrapped an already redacted control plane twice")
	}
	ctx := context.Background()
	patch := rpc.Event{Rev: 1, Type: "UserMsg", Payload: json.RawMessage(`{"text":"untouched"}`), Hash: "h"}
	cp.Heartbeat(ctx, rpc.HeartbeatReq{Patches: []rpc.Event{patch}, Snapshot: json.RawMessage(`{"summary":"` + tok + `"}`),
		Summary: json.RawMessage(`{"s":"x` + tok + `"}`)})
	cp.RequestApproval(ctx, rpc.ApprovalReq{RequestType: "tool", Payload: json.RawMessage(`{"manifest":{"k":"` + tok + `"}}`)})
	cp.ReportStatus(ctx, rpc.StatusReq{Lane: "core:" + tok, State: "running " + tok, Skill: tok, BudgetRemaining: map[string]int64{tok: 1}})
	cp.Terminate(ctx, rpc.TerminateReq{Reason: "bye " + tok})
	in, _ := json.Marshal(rpc.DMSend{Kind: rpc.DMReply, Text: "the key: " + tok[:8] + "\n" + tok[8:], Files: []string{".choirtmp/send/" + tok}})
	cp.ExecuteHostTool(ctx, rpc.HostToolReq{ToolName: rpc.HostToolDMSend, CallID: "c", Input: in})

	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sent) != 5 {
		t.Fatalf("%d calls reached choird; want 5", len(s.sent))
	}
	for _, v := range s.sent {
		raw, _ := json.Marshal(v)
		if strings.Contains(string(raw), tok) {
			t.Errorf("%T reached choird with the secret: %s", v, raw)
		}
		if !strings.Contains(string(raw), "[secret:notion-key]") {
			t.Errorf("%T lacks the marker: %s", v, raw)
		}
	}
	hb := s.sent[0].(rpc.HeartbeatReq)
	if len(hb.Patches) != 1 || string(hb.Patches[0].Payload) != string(patch.Payload) || hb.Patches[0].Hash != "h" {
		t.Errorf("heartbeat patches = %+v; want them unchanged", hb.Patches)
	}
}

// secretsChoird serves secrets it can change, and records statuses.
type secretsChoird struct {
	*choird
	secrets  map[string]string
	statuses []rpc.StatusReq
}

func (c *secretsChoird) HandleSecrets(context.Context, rpc.SecretReq) (rpc.SecretResp, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]string{}
	for k, v := range c.secrets {
		out[k] = v
	}
	return rpc.SecretResp{Secrets: out}, nil
}

func (c *secretsChoird) HandleStatus(_ context.Context, r rpc.StatusReq) (rpc.StatusResp, error) {
	c.mu.Lock()
	c.statuses = append(c.statuses, r)
	c.mu.Unlock()
	c.note(rpc.VerbReportStatus)
	return rpc.StatusResp{Ack: true}, nil
}

// After secrets_changed the new value is redacted from status reports and
// logs, and the old one still is.
func TestRedactionFollowsSecretsChanged(t *testing.T) {
	const old, rotated = "sk-old-aaaa1111bbbb", "sk-new-cccc2222dddd"
	cd := &secretsChoird{choird: &choird{latest: 1, changed: make(chan struct{}, 1)}, secrets: map[string]string{"llm-key": old}}
	srv, cp := serveChoird(t, cd, "agent-1", slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)))
	logs := &testkit.Buffer{}
	s := New(cp, Identity{AgentID: "agent-1", SessionID: "s-1"}, rpc.ImageInfo{}, 5*time.Millisecond, slog.New(slog.NewJSONHandler(logs, nil)))
	var state sync.Mutex
	shown := "thinking about " + old
	s.Hooks.Status = func() []rpc.StatusReq {
		state.Lock()
		defer state.Unlock()
		return []rpc.StatusReq{{Lane: "edge", State: shown}}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()

	cd.waitFor(t, "a status report", func() bool { return cd.count(rpc.VerbReportStatus) >= 1 })
	cd.mu.Lock()
	cd.secrets = map[string]string{"llm-key": rotated}
	cd.mu.Unlock()
	srv.Publish("s-1", rpc.EventSecretsChanged, map[string]string{})
	cd.waitFor(t, "the rotated secret", func() bool { v, _ := s.Secrets.Get("llm-key"); return v == rotated })
	state.Lock()
	shown = "now " + rotated + " and " + old
	state.Unlock()
	s.Log().Info("tool said " + rotated)
	cd.waitFor(t, "a second status report", func() bool { return cd.count(rpc.VerbReportStatus) >= 2 })

	cd.mu.Lock()
	statuses := append([]rpc.StatusReq(nil), cd.statuses...)
	cd.mu.Unlock()
	for _, st := range statuses {
		if strings.Contains(st.State, old) || strings.Contains(st.State, rotated) {
			t.Errorf("REPORT_STATUS state %q holds a secret", st.State)
		}
	}
	if last := statuses[len(statuses)-1].State; last != "now [secret:llm-key] and [secret:llm-key]" {
		t.Errorf("last status = %q; want both values redacted", last)
	}
	if out := logs.String(); strings.Contains(out, rotated) || !strings.Contains(out, "tool said [secret:llm-key]") {
		t.Errorf("agent log = %s; want the rotated value redacted", out)
	}
}
