package assembly

import (
	"encoding/json"
	"testing"

	"choir/agent/builtin"
	"choir/agent/tool"
	"choir/internal/rpc"
)

// choir.net.fetch is offered to an interactive session only when choird
// said the agent is in network policy mode, and to a run only when its
// brief names it.
func TestNetFetchOfferedOnlyWithAPolicy(t *testing.T) {
	full, err := tool.Load(builtin.Tools(builtin.Deps{}), t.TempDir(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !full.Has(rpc.HostToolNetFetch) {
		t.Fatalf("the built-ins have no %s", rpc.HostToolNetFetch)
	}
	offered := func(r *tool.Registry) bool {
		for _, lt := range r.LLMTools(nil) {
			if lt.Name == rpc.HostToolNetFetch {
				return true
			}
		}
		return false
	}
	open := keepNetFetch(full, false)
	if open.Has(rpc.HostToolNetFetch) || offered(open) {
		t.Error("an open-mode session offers choir.net.fetch")
	}
	if _, err := open.Prepare(rpc.HostToolNetFetch, json.RawMessage(`{"url":"https://example.org/"}`)); err == nil {
		t.Error("an open-mode session can call choir.net.fetch")
	}
	if !open.Has("choir.exec") {
		t.Error("dropping choir.net.fetch dropped other tools")
	}
	if p := keepNetFetch(full, true); !offered(p) {
		t.Error("a policy-mode session does not offer choir.net.fetch")
	}
	run := keepRunTools(full, &rpc.RunBrief{ID: "r-000000000001", Tools: []string{rpc.HostToolNetFetch}}, nil)
	if !offered(run) {
		t.Error("a run whose brief names choir.net.fetch is not offered it")
	}
}
