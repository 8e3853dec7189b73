package lifecycle

import (
	"strings"
	"testing"

	"choir/internal/config"
	"choir/internal/ctl"
)

// TestSetModelIsAllOrNothing: `model set --llm good --core-llm typo`
// changes nothing and names the bad model; a good choice sets every role
// it names and leaves the others.
func TestSetModelIsAllOrNothing(t *testing.T) {
	m, r, _ := handlerManager(t, 2)
	l, _ := m.Config()
	l.Config.Models = map[string]config.Model{"fast": {}, "big": {}, "cheap": {}}
	r.Bindings.LLM, r.Bindings.CoreLLM = "fast", "big"

	bad := []ctl.ModelChoice{
		{LLM: "cheap", CoreLLM: "typo"},
		{LLM: "cheap", SummaryLLM: "typo"},
		{CoreLLM: "cheap", VoiceProfile: "typo"},
	}
	for _, c := range bad {
		err := m.SetModel("a-1", c)
		if err == nil || !strings.Contains(err.Error(), `"typo"`) || !strings.Contains(err.Error(), "big, cheap, fast") && !strings.Contains(err.Error(), "voice profile") {
			t.Errorf("SetModel(%+v) = %v; want a refusal naming \"typo\" and what there is", c, err)
		}
		if r.Bindings.LLM != "fast" || r.Bindings.CoreLLM != "big" || r.Bindings.SummaryLLM != "" {
			t.Fatalf("after the refused %+v the bindings are %+v; want them unchanged", c, r.Bindings)
		}
	}

	if err := m.SetModel("a-1", ctl.ModelChoice{SummaryLLM: "cheap", CoreLLM: "fast"}); err != nil {
		t.Fatalf("SetModel = %v", err)
	}
	if r.Bindings.LLM != "fast" || r.Bindings.CoreLLM != "fast" || r.Bindings.SummaryLLM != "cheap" {
		t.Errorf("bindings = %+v; want llm fast (untouched), core fast, summary cheap", r.Bindings)
	}
	if err := m.SetModel("nobody", ctl.ModelChoice{LLM: "fast"}); err == nil {
		t.Error("SetModel of an agent that is not running succeeded")
	}
}
