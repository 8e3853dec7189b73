package assembly

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"choir/agent/builtin"
	"choir/agent/tool"
	"choir/internal/rpc"
)

// A run session offers its notes and requests as host tools whose schemas
// take what choird validates, and refuses malformed input before it
// leaves the container; they go to choird under their own names.
func TestRunHostToolsReachChoird(t *testing.T) {
	var called []string
	host := func(_ context.Context, name, _ string, input json.RawMessage) (json.RawMessage, error) {
		called = append(called, name)
		return json.RawMessage(`{"status":"success","summary":"recorded as r-000000000001#3"}`), nil
	}
	reg, err := tool.Load(append(builtin.Tools(builtin.Deps{}), runHostTools(host)...), t.TempDir(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	kept := keepRunTools(reg, &rpc.RunBrief{ID: "r-000000000001", Tools: append([]string{"choir.fs.read"}, rpc.RunHostTools...)}, nil)
	if got := kept.Names(); !slices.Equal(got, []string{"choir.fs.read", rpc.HostToolKBSearch, rpc.HostToolRunNote, rpc.HostToolRunSpecChange, rpc.HostToolRunSplit}) {
		t.Fatalf("a run session's tools = %v", got)
	}
	for _, tc := range []struct {
		name, input string
		ok          bool
	}{
		{rpc.HostToolRunNote, `{"type":"HYPOTHESIS","text":"the cache is stale","test":"clear it and rerun","budget":{"tool_calls":3}}`, true},
		{rpc.HostToolRunNote, `{"type":"GOSSIP","text":"x"}`, false},
		{rpc.HostToolRunNote, `{"type":"OBSERVATION","text":"x","run_id":"r-000000000002"}`, false}, // no run from the input
		{rpc.HostToolRunSplit, `{"reason":"too big","children":[{"description":"a","acceptance":["a works"]},{"description":"b","acceptance":["b works"],"after":[0]}]}`, true},
		{rpc.HostToolRunSplit, `{"children":[{"description":"a","acceptance":["a works"]},{"description":"b","acceptance":["b"]}]}`, false},
		{rpc.HostToolRunSpecChange, `{"paths":["SPECS/api.md"],"change":"404 for a missing item","evidence":["r-000000000001#4"]}`, true},
		{rpc.HostToolRunSpecChange, `{"paths":["SPECS/api.md"],"change":"x","evidence":"trust me"}`, false},
		{rpc.HostToolKBSearch, `{"query":"cold start","kind":"conjecture","limit":5}`, true},
		{rpc.HostToolKBSearch, `{"query":"x","agent":"other"}`, false}, // only the run's own agent
		{rpc.HostToolKBSearch, `{"query":"x","kind":"secrets"}`, false},
	} {
		call, err := kept.Prepare(tc.name, json.RawMessage(tc.input))
		if (err == nil) != tc.ok {
			t.Errorf("Prepare(%s, %s) = %v; want ok %v", tc.name, tc.input, err, tc.ok)
			continue
		}
		if err != nil {
			continue
		}
		res, err := call.Tool.Execute(context.Background(), call.Input, tool.Env{CallID: "c1"})
		if err != nil || res.Summary == "" {
			t.Errorf("Execute(%s) = %+v, %v", tc.name, res, err)
		}
	}
	if !slices.Equal(called, []string{rpc.HostToolRunNote, rpc.HostToolRunSplit, rpc.HostToolRunSpecChange, rpc.HostToolKBSearch}) {
		t.Errorf("host calls = %v", called)
	}
}
