package tool_test

import (
	"os"
	"path/filepath"
	"testing"

	"choir/agent/skill"
	"choir/agent/tool"
)

// The registry and the skill engine agree on names and on the LLM view.
func TestSkillCompatibility(t *testing.T) {
	if tool.ReservedPrefix != skill.ControlToolPrefix {
		t.Errorf("tool.ReservedPrefix = %q; skill.ControlToolPrefix = %q", tool.ReservedPrefix, skill.ControlToolPrefix)
	}
	// A lane can merge the engine's tools with the registry's.
	_ = skill.ToolDef(tool.LLMTool{})
	_ = tool.LLMTool(skill.ToolDef{})

	// Registry.Has validates allowed_tools: a skill naming an unknown tool
	// fails to load. (The built-in skills name host tools that later issues
	// register, so this only checks that the check runs.)
	reg, err := tool.Load(nil, "", "")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	spec := `{"name": "demo", "description": "d", "initial_state": "s", "max_steps": 3,
	  "states": {"s": {"objective": "o", "allowed_tools": ["acme.unknown"], "transitions": [{"on": "done", "to": "t"}]},
	             "t": {"terminal": true}}}`
	if err := os.WriteFile(filepath.Join(dir, "demo.json"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := skill.LoadDir(dir, reg.Has); err == nil {
		t.Error("skill.LoadDir with an unregistered allowed tool = nil error")
	}
}
