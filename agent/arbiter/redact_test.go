package arbiter

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"choir/agent/lock"
	"choir/agent/redact"
	"choir/agent/skill"
	"choir/agent/tool"
)

const leakKey = "sk-live-7d3f9a2b8c1e4d6f"

// leaky is a tool that puts the secret wherever its tag says.
var leaky = &fakeTool{name: "test.leak", run: func(_ context.Context, in fakeInput, _ tool.Env) (tool.Result, error) {
	switch in.Tag {
	case "summary":
		return tool.Success("the key is "+leakKey, nil), nil
	case "field-name":
		return tool.Success("ok", map[string]any{leakKey: 1, "nested": map[string]any{"list": []any{"x", leakKey[:9] + "\n" + leakKey[9:]}}}), nil
	case "error":
		return tool.Result{}, tool.Errorf(tool.CodeToolError, "auth failed with %s", leakKey)
	case "go-error":
		return tool.Result{}, errors.New("dial: token=" + leakKey)
	case "panic":
		panic("holding " + leakKey)
	}
	return tool.Success("clean", nil), nil
}}

func redactedHarness(t *testing.T, r *redact.Redactor, extra ...tool.Tool) *harness {
	t.Helper()
	return newHarness(t, Config{Redactor: r}, append([]tool.Tool{leaky}, extra...)...)
}

// checkLog fails if any committed event holds the key, if the chain does not
// verify, or if a payload is not canonical.
func checkLog(t *testing.T, h *harness) {
	t.Helper()
	evs := h.a.Events(0)
	if err := Verify("", evs); err != nil {
		t.Errorf("the chain does not verify after redaction: %v", err)
	}
	for _, e := range evs {
		if strings.Contains(string(e.Payload), leakKey) {
			t.Errorf("event %d %s holds the secret: %s", e.Rev, e.Type, e.Payload)
		}
		if c, err := Canonical(e.Payload); err != nil || string(c) != string(e.Payload) {
			t.Errorf("event %d %s payload is not canonical after redaction: %s", e.Rev, e.Type, e.Payload)
		}
	}
}

func TestToolOutputRedactedBeforeCommitAndModel(t *testing.T) {
	h := redactedHarness(t, redact.New(map[string]string{"llm-key": leakKey}))
	ctx := context.Background()
	for _, tag := range []string{"summary", "field-name", "error", "go-error", "panic"} {
		out := h.submit(ctx, Proposal{ID: tag, Lane: lock.Edge, ToolCallID: "c-" + tag, Tool: "test.leak",
			Input: json.RawMessage(`{"path":"p","tag":"` + tag + `"}`)})
		if strings.Contains(string(out.Output), leakKey) || !strings.Contains(string(out.Output), "[secret:llm-key]") {
			t.Errorf("%s: the outcome the model receives = %s; want the marker, not the key", tag, out.Output)
		}
		if !json.Valid(out.Output) {
			t.Errorf("%s: outcome is not JSON: %s", tag, out.Output)
		}
		committed := h.waitEvent("the result of "+tag, isEvent(ToolResultCommitted, tag))
		var p ResultCommitted
		json.Unmarshal(committed.Payload, &p)
		if c, _ := Canonical(out.Output); string(p.Output) != string(c) {
			t.Errorf("%s: committed output %s differs from the outcome %s", tag, p.Output, out.Output)
		}
		// A resubmission replays the redacted result.
		again := h.submit(ctx, Proposal{ID: tag, Lane: lock.Edge, Tool: "test.leak", Input: json.RawMessage(`{"path":"p","tag":"` + tag + `"}`)})
		if !again.Replayed || string(again.Output) != string(out.Output) {
			t.Errorf("%s: replay = %s; want the same redacted output", tag, again.Output)
		}
	}
	checkLog(t, h)
}

func TestModelTextRedactedInEveryEvent(t *testing.T) {
	h := redactedHarness(t, redact.New(map[string]string{"llm-key": leakKey}))
	ctx := context.Background()
	if _, err := h.a.Record(ctx, lock.Edge, UserMsg, UserMsgPayload{Text: "my key is " + leakKey}); err != nil {
		t.Fatal(err)
	}
	e, err := h.a.Record(ctx, lock.Edge, ModelOutput, ModelOutputPayload{Text: "echo " + leakKey,
		ToolCalls: []ModelToolCall{{ID: "c", Name: "choir_fs_read", Arguments: `{"path":"` + leakKey + `"}`}}})
	if err != nil || strings.Contains(string(e.Payload), leakKey) {
		t.Errorf("Record returned %s, %v; want the redacted event", e.Payload, err)
	}
	// A tool name, arguments that are not JSON, a path: all quoted back.
	for _, p := range []Proposal{
		{ID: "name", Lane: lock.Edge, Tool: "acme." + leakKey, Input: json.RawMessage(`{}`)},
		{ID: "raw", Lane: lock.Edge, Tool: "choir.fs.read", Input: json.RawMessage(`{"path": "` + leakKey)},
		{ID: "path", Lane: lock.Edge, Tool: "choir.fs.read", Input: json.RawMessage(`{"path":"../` + leakKey + `"}`)},
	} {
		out := h.submit(ctx, p)
		if out.Status != tool.StatusError || strings.Contains(string(out.Output), leakKey) {
			t.Errorf("%s: outcome %s; want a refusal without the key", p.ID, out.Output)
		}
	}
	checkLog(t, h)
}

func TestSkillViolationRedacted(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "s.json"), []byte(`{"name":"s","description":"d","initial_state":"a","max_steps":5,
		"states":{"a":{"objective":"o","allowed_tools":["choir.fs.read"],"transitions":[{"on":"go","to":"b"}]},"b":{"terminal":true}}}`), 0o644)
	h := redactedHarness(t, redact.New(map[string]string{"git-token": leakKey}))
	// The built-in skills name host tools this harness does not register.
	skills, err := skill.LoadDir(dir, func(n string) bool {
		return h.a.cfg.Tools.Has(n) || strings.HasPrefix(n, "choir.memory.") || strings.HasPrefix(n, "choir.propose.")
	})
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := skills.Lookup("s")
	run, err := skill.NewRun(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, p := range []Proposal{
		{ID: "t1", Lane: lock.Edge, Tool: skill.TransitionTool, Input: json.RawMessage(`{"on":"` + leakKey + `"}`), Skill: run},
		{ID: "t2", Lane: lock.Edge, Tool: "test.leak", Input: json.RawMessage(`{"path":"x"}`), Skill: run},
	} {
		out := h.submit(ctx, p)
		if out.Status != tool.StatusError || strings.Contains(string(out.Output), leakKey) {
			t.Errorf("%s: violation %s; want it without the key", p.ID, out.Output)
		}
		if p.ID == "t1" && !strings.Contains(string(out.Output), "[secret:git-token]") {
			t.Errorf("violation %s; want the marker where the event was quoted", out.Output)
		}
	}
	checkLog(t, h)
}

func TestRedactionFollowsRefresh(t *testing.T) {
	r := redact.New(nil)
	h := redactedHarness(t, r)
	ctx := context.Background()
	before := h.submit(ctx, Proposal{ID: "before", Lane: lock.Edge, Tool: "test.leak", Input: json.RawMessage(`{"path":"p","tag":"summary"}`)})
	if !strings.Contains(string(before.Output), leakKey) {
		t.Fatalf("before the secret is known the output is %s; want it unchanged", before.Output)
	}
	r.Set(map[string]string{"llm-key": leakKey})
	after := h.submit(ctx, Proposal{ID: "after", Lane: lock.Edge, Tool: "test.leak", Input: json.RawMessage(`{"path":"p","tag":"summary"}`)})
	if strings.Contains(string(after.Output), leakKey) {
		t.Errorf("after Set the output is %s; want the key redacted", after.Output)
	}
	if err := Verify("", h.a.Events(0)); err != nil {
		t.Errorf("Verify = %v", err)
	}
}
