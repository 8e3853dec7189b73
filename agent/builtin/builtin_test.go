package builtin

import (
	"slices"
	"testing"

	"choir/agent/tool"
)

// TestBuiltinsLoad checks that every built-in passes the registry's own
// checks (names, schemas, runtime views) and that Names is what an agent
// registers.
func TestBuiltinsLoad(t *testing.T) {
	dir := t.TempDir()
	reg, err := tool.Load(Tools(Deps{}), dir, dir)
	if err != nil {
		t.Fatalf("tool.Load(built-ins) = %v", err)
	}
	if got, want := Names(), reg.Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %v;\nthe registry has %v", got, want)
	}
	for _, name := range []string{"choir.exec", "choir.core.report", "choir.memory.upsert"} {
		if !Has(name) {
			t.Errorf("Has(%q) = false; want true", name)
		}
	}
	if Has("choir.core") || Has("acme.echo") {
		t.Error("Has answers true for a tool that is not built in")
	}
}
