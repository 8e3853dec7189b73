package tool_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"choir/agent/tool"
)

// TestProposeRepoChange: only this session's proposal/<session-id>/
// branches are submitted, as repo_change with the input as given; the
// model is told the prefix it must use.
func TestProposeRepoChange(t *testing.T) {
	var kinds []string
	var payloads []string
	submit := func(ctx context.Context, kind string, payload json.RawMessage) (string, string, error) {
		kinds, payloads = append(kinds, kind), append(payloads, string(payload))
		return "ap-9", "pending", nil
	}
	reg, err := tool.Load([]tool.Tool{tool.ProposeRepoChange(submit, "s-42")}, t.TempDir(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tl, _ := reg.Lookup(tool.ProposeRepoChangeName)
	if !strings.Contains(tl.LLM().Description, "proposal/s-42/<short-name>") {
		t.Errorf("description %q does not give the branch prefix", tl.LLM().Description)
	}
	run := func(input string) tool.Result {
		c, err := reg.Prepare(tool.ProposeRepoChangeName, json.RawMessage(input))
		if err != nil {
			return tool.ErrorResult(err)
		}
		return c.Run(context.Background(), tool.Invocation{Workspace: t.TempDir(), CallID: "c1"})
	}
	ok := `{"branch":"proposal/s-42/calmer-soul","description":"a calmer SOUL.md"}`
	if res := run(ok); res.Status != tool.StatusSuccess || len(kinds) != 1 || kinds[0] != "repo_change" || payloads[0] != ok {
		t.Fatalf("valid branch: result %+v, submitted %v %v", res, kinds, payloads)
	}
	for _, branch := range []string{"main", "proposal/s-41/x", "proposal/s-42/", "proposal/s-42/../../main", "proposal/s-42/a b", "proposal/s-4/x"} {
		kinds = nil
		res := run(`{"branch":"` + branch + `","description":"x"}`)
		if res.Status != tool.StatusError || !strings.Contains(res.Error.Message, "proposal/s-42/<short-name>") || len(kinds) != 0 {
			t.Errorf("branch %q: result %+v, submitted %v; want a refusal naming the prefix, nothing submitted", branch, res, kinds)
		}
	}
}
