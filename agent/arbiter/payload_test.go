package arbiter

import (
	"encoding/json"
	"testing"
)

// The hand-written encoders write what json.Marshal writes.
func TestPayloadEncoders(t *testing.T) {
	in := json.RawMessage(`{"a":"\u003cb\u003e","z":[1,2]}`) // canonical, as raw members must be
	tests := []struct {
		v   any
		got []byte
	}{}
	add := func(v any, got []byte) {
		tests = append(tests, struct {
			v   any
			got []byte
		}{v, got})
	}
	for _, p := range []CallRequested{
		{ID: "1", Tool: "choir.fs.read"},
		{ID: "edge/3/0", Input: in, Job: "j-1", Tool: "t", ToolCallID: "call_\"x\""},
		{ID: "é<>&\u2028", RawInput: "{\"path\": \n", Tool: "t"},
	} {
		add(p, p.appendJSON(nil))
	}
	for _, p := range []CallCommitted{
		{ID: "1", Tool: "t"},
		{ID: "1", Tool: "t", Locks: []LockHeld{}},
		{ID: "1", Job: "j", Tool: "t", Locks: []LockHeld{{Mode: "X", Resource: "file:a b/<c>.txt"}, {Mode: "S", Resource: "workspace"}}},
	} {
		add(p, p.appendJSON(nil))
	}
	for _, p := range []ResultCommitted{
		{ID: "1", Tool: "t", Status: "success", Output: in},
		{ID: "1", Job: "j", Tool: "t", Status: "error", Output: in, ToolCallID: "c"},
		{DurationMS: 1234, ID: "1", LockWaitMS: 56, Tool: "t", Status: "success", Output: in},
	} {
		add(p, p.appendJSON(nil))
	}
	for _, tt := range tests {
		want, err := json.Marshal(tt.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(tt.got) != string(want) {
			t.Errorf("appendJSON(%+v) =\n%s\nwant\n%s", tt.v, tt.got, want)
		}
		if c, _ := Canonical(tt.got); string(c) != string(tt.got) {
			t.Errorf("appendJSON(%+v) = %s; not canonical", tt.v, tt.got)
		}
	}
}
