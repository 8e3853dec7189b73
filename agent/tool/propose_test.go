package tool_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"choir/agent/skill"
	"choir/agent/tool"
)

// TestProposeTools: each meta tool checks its proposal, submits it through
// the hook with its request type, takes no lock, and reports the approval
// id; a malformed proposal is refused before anything is submitted.
func TestProposeTools(t *testing.T) {
	type submitted struct {
		kind    string
		payload json.RawMessage
	}
	var got []submitted
	submit := func(ctx context.Context, kind string, payload json.RawMessage) (string, string, error) {
		got = append(got, submitted{kind, payload})
		return "ap-1", "pending", nil
	}
	known := func(name string) bool { return name == "choir.fs.read" || name == "choir.memory.query" }
	builtins := tool.ProposeTools(submit, known)
	reg, err := tool.Load(builtins, t.TempDir(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// tool-builder and skill-builder validate against these names.
	specs, err := skill.Builtins()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		if err := skill.Validate(s, func(n string) bool { return reg.Has(n) || known(n) }); err != nil {
			t.Errorf("built-in skill %s with the propose tools registered: %v", s.Name, err)
		}
	}
	tests := []struct {
		name, tool, input string
		wantKind          string // "" means refused
		wantErr           string
	}{
		{"tool", tool.ProposeToolName, `{"manifest":{"llm":{"name":"notes.add","description":"Add a note.","input_schema":{"type":"object","properties":{"text":{"type":"string"}}}},"runtime":{"side_effect":"write"}},"rationale":"the user asked"}`, "tool", ""},
		{"tool with a bad manifest", tool.ProposeToolName, `{"manifest":{"llm":{"name":"notes.add"}},"rationale":"x"}`, "", "the proposed manifest is not valid"},
		{"skill", tool.ProposeSkillName, `{"spec":{"name":"read-twice","description":"Read a file twice.","initial_state":"read","states":{"read":{"objective":"Read it.","allowed_tools":["choir.fs.read"],"transitions":[{"on":"complete","to":"done"}]},"done":{"terminal":true}},"max_steps":4},"rationale":"testing"}`, "skill", ""},
		{"skill over an unknown tool", tool.ProposeSkillName, `{"spec":{"name":"bad","description":"x","initial_state":"a","states":{"a":{"objective":"x","allowed_tools":["rm.rf"],"transitions":[{"on":"complete","to":"done"}]},"done":{"terminal":true}},"max_steps":4},"rationale":"x"}`, "", "rm.rf"},
		{"config change", tool.ProposeConfigName, `{"change":"use model o3 for core","rationale":"harder tasks"}`, "config_change", ""},
		{"missing rationale", tool.ProposeConfigName, `{"change":"x"}`, "", "rationale"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got = nil
			c, err := reg.Prepare(tc.tool, json.RawMessage(tc.input))
			var res tool.Result
			if err != nil {
				res = tool.ErrorResult(err)
			} else {
				if len(c.Locks) != 0 {
					t.Errorf("%s takes locks %v; meta tools take none", tc.tool, c.Locks)
				}
				res = c.Run(context.Background(), tool.Invocation{Workspace: t.TempDir(), CallID: "c1"})
			}
			if tc.wantKind == "" {
				if res.Status != tool.StatusError || !strings.Contains(res.Summary+res.Error.Message, tc.wantErr) || len(got) != 0 {
					t.Errorf("result = %+v, submitted %d; want refused mentioning %q, nothing submitted", res, len(got), tc.wantErr)
				}
				return
			}
			if res.Status != tool.StatusSuccess || res.Fields["approval_id"] != "ap-1" {
				t.Errorf("result = %+v; want success with the approval id", res)
			}
			if len(got) != 1 || got[0].kind != tc.wantKind {
				t.Errorf("submitted %+v; want one %s proposal", got, tc.wantKind)
			}
		})
	}
}
