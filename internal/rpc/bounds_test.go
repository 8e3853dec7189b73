package rpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// callVerb serves one verb on srv in process as session s1 and returns the
// status and body.
func callVerb(t *testing.T, srv *Server, verb Verb, body []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "/rpc/"+string(verb), bytes.NewReader(body))
	req.Header.Set(HeaderSessionID, "s1")
	req.Header.Set(HeaderRequestID, "r1")
	req.Header.Set("Authorization", "Bearer t1")
	rec := newRecorder()
	srv.ServeHTTP(rec, req)
	return rec.status, rec.body.String()
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// statusOfSize is a StatusReq whose JSON is exactly n bytes.
func statusOfSize(n int) StatusReq {
	st := StatusReq{Lane: "edge", State: "EDGE_IDLE"}
	st.Skill = strings.Repeat("s", n-len(mustJSON(st))-len(`,"skill":""`))
	return st
}

func names(n, size int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%0*d", size, i)
	}
	return out
}

func budgets(n int) map[string]int64 {
	m := map[string]int64{}
	for i := range n {
		m[fmt.Sprintf("b%d", i)] = 1
	}
	return m
}

func patches(n int) []Event {
	out := make([]Event, n)
	for i := range out {
		out[i] = Event{Rev: int64(i + 1), Type: "UserMsg", Hash: "h"}
	}
	return out
}

// TestRequestBounds: every bounded field at its limit is served, and one
// over it is a 400 naming the field and the limit that never reaches the
// handler.
func TestRequestBounds(t *testing.T) {
	id := strings.Repeat("i", MaxIDBytes)
	id1 := id + "i"
	job := strings.Repeat("j", MaxJobNameBytes)
	cases := []struct {
		field    string
		verb     Verb
		at, over any
		want     string // in the refusal
	}{
		{"agent_id", VerbInitHello, InitHelloReq{AgentID: id}, InitHelloReq{AgentID: id1}, "agent_id is 129 bytes; the limit is 128 bytes"},
		{"session_id", VerbInitHello, InitHelloReq{SessionID: id}, InitHelloReq{SessionID: id1}, "session_id is 129 bytes"},
		{"image_version", VerbInitHello, InitHelloReq{ImageVersion: id}, InitHelloReq{ImageVersion: id1}, "image_version is 129 bytes"},
		{"global_repo_commit", VerbInitHello, InitHelloReq{GlobalRepoCommit: id}, InitHelloReq{GlobalRepoCommit: id1}, "global_repo_commit is 129"},
		{"agent_repo_commit", VerbInitHello, InitHelloReq{AgentRepoCommit: id}, InitHelloReq{AgentRepoCommit: id1}, "agent_repo_commit is 129"},
		{"tool_manifest_hash", VerbInitHello, InitHelloReq{ToolManifestHash: id}, InitHelloReq{ToolManifestHash: id1}, "tool_manifest_hash is 129"},
		{"skill_manifest_hash", VerbInitHello, InitHelloReq{SkillManifestHash: id}, InitHelloReq{SkillManifestHash: id1}, "skill_manifest_hash is 129"},
		{"resources (count)", VerbGetSecrets, SecretReq{Resources: names(MaxSecretNames, 3)}, SecretReq{Resources: names(MaxSecretNames+1, 3)}, "resources is 65 names; the limit is 64 names"},
		{"resources[i]", VerbGetSecrets, SecretReq{Resources: []string{id}}, SecretReq{Resources: []string{"ok", id1}}, "resources[1] is 129 bytes"},
		{"patches (count)", VerbHeartbeat, HeartbeatReq{Patches: patches(MaxPatches)}, HeartbeatReq{Patches: patches(MaxPatches + 1)}, "patches is 1025 events; the limit is 1024 events"},
		{"patches[i].type", VerbHeartbeat, HeartbeatReq{Patches: []Event{{Type: id}}}, HeartbeatReq{Patches: []Event{{Type: id1}}}, "patches[0].type is 129 bytes"},
		{"patches[i].lane", VerbHeartbeat, HeartbeatReq{Patches: []Event{{Lane: id}}}, HeartbeatReq{Patches: []Event{{Lane: id1}}}, "patches[0].lane is 129 bytes"},
		{"patches[i].hash", VerbHeartbeat, HeartbeatReq{Patches: []Event{{Hash: id}}}, HeartbeatReq{Patches: []Event{{Hash: id1}}}, "patches[0].hash is 129 bytes"},
		{"hash_prev", VerbHeartbeat, HeartbeatReq{HashPrev: id}, HeartbeatReq{HashPrev: id1}, "hash_prev is 129 bytes"},
		{"hash_new", VerbHeartbeat, HeartbeatReq{HashNew: id}, HeartbeatReq{HashNew: id1}, "hash_new is 129 bytes"},
		{"request_type", VerbRequestApproval, ApprovalReq{RequestType: id}, ApprovalReq{RequestType: id1}, "request_type is 129 bytes"},
		{"approval payload", VerbRequestApproval,
			ApprovalReq{RequestType: "t", Payload: json.RawMessage(`"` + strings.Repeat("p", MaxApprovalPayload-2) + `"`)},
			ApprovalReq{RequestType: "t", Payload: json.RawMessage(`"` + strings.Repeat("p", MaxApprovalPayload-1) + `"`)},
			"payload is 65537 bytes; the limit is 65536 bytes"},
		{"lane (job name)", VerbReportStatus, StatusReq{Lane: "core:" + job}, StatusReq{Lane: "core:" + job + "j"}, `is not a lane`},
		{"budget_remaining", VerbReportStatus, StatusReq{Lane: "edge", BudgetRemaining: budgets(MaxStatusBudgets)}, StatusReq{Lane: "edge", BudgetRemaining: budgets(MaxStatusBudgets + 1)}, "budget_remaining is 17 entries; the limit is 16 entries"},
		{"tokens_used", VerbReportStatus, StatusReq{Lane: "edge", TokensUsed: 1 << 62, ToolCalls: 1 << 62}, StatusReq{Lane: "edge", TokensUsed: -1}, "counts -1 tokens and 0 tool calls: want counts of 0 or more"},
		{"tool_calls", VerbReportStatus, StatusReq{Lane: "core:j", ToolCalls: 1}, StatusReq{Lane: "core:j", ToolCalls: -5}, "counts 0 tokens and -5 tool calls"},
		{"status size", VerbReportStatus, statusOfSize(MaxStatusBytes), statusOfSize(MaxStatusBytes + 1), "status of lane edge is 4097 bytes; the limit is 4096 bytes"},
		{"reason", VerbTerminateSelf, TerminateReq{Reason: strings.Repeat("r", MaxReasonBytes)}, TerminateReq{Reason: strings.Repeat("r", MaxReasonBytes+1)}, "reason is 1025 bytes; the limit is 1024 bytes"},
		{"tool_name", VerbExecuteHostTool, HostToolReq{ToolName: id}, HostToolReq{ToolName: id1}, "tool_name is 129 bytes"},
		{"call_id", VerbExecuteHostTool, HostToolReq{CallID: id}, HostToolReq{CallID: id1}, "call_id is 129 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.field, func(t *testing.T) {
			h := &fakeHandler{}
			limits := DefaultLimits()
			limits.Rate, limits.Burst = 1e9, 1e9
			srv := NewServer(h, limits, quietLogger())
			srv.Open("s1", "a1", "t1")
			if st, body := callVerb(t, srv, tc.verb, mustJSON(tc.at)); st != http.StatusOK {
				t.Errorf("%s at its limit: %d %s; want 200", tc.field, st, body)
			}
			h.mu.Lock()
			served := len(h.calls)
			h.mu.Unlock()
			st, body := callVerb(t, srv, tc.verb, mustJSON(tc.over))
			if st != http.StatusBadRequest || !strings.Contains(body, tc.want) {
				t.Errorf("%s over its limit: %d %s; want 400 containing %q", tc.field, st, body, tc.want)
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			if len(h.calls) != served {
				t.Errorf("%s over its limit reached the handler", tc.field)
			}
		})
	}
}

func TestValidLane(t *testing.T) {
	for name, want := range map[string]bool{
		"edge": true, "core:refactor-auth": true, "core:a.b_c-1": true, "core:" + strings.Repeat("x", 64): true,
		"": false, "Edge": false, "core:": false, "core:" + strings.Repeat("x", 65): false, "core:a b": false,
		"core:é": false, "coreX": false, "core:a/b": false, "lane:edge": false,
	} {
		if got := ValidLane(name); got != want {
			t.Errorf("ValidLane(%q) = %v; want %v", name, got, want)
		}
	}
}
