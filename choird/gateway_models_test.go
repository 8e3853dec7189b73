package main

import (
	"testing"

	"choir/internal/ctl"
)

// TestModelsLineNamesEveryRole: /model answers with the model of each
// role, a role without its own model showing the edge's.
func TestModelsLineNamesEveryRole(t *testing.T) {
	for _, c := range []struct {
		m    ctl.ModelChoice
		want string
	}{
		{ctl.ModelChoice{LLM: "fast"}, `model "fast" (core jobs "fast", summary "fast")`},
		{ctl.ModelChoice{LLM: "fast", CoreLLM: "big"}, `model "fast" (core jobs "big", summary "fast")`},
		{ctl.ModelChoice{LLM: "fast", CoreLLM: "big", SummaryLLM: "cheap"}, `model "fast" (core jobs "big", summary "cheap")`},
	} {
		if got := modelsLine(c.m); got != c.want {
			t.Errorf("modelsLine(%+v) = %s; want %s", c.m, got, c.want)
		}
	}
}
