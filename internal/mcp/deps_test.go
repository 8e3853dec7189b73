package mcp_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsOnlyTheStandardLibrary keeps internal/mcp a wire client like
// the others (STYLE.md): no SDK, no other choir package but jsonlimit,
// which every JSON reader of choir calls first.
func TestImportsOnlyTheStandardLibrary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "choir/internal/mcp").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep != "choir/internal/mcp" && dep != "choir/internal/jsonlimit" {
			t.Errorf("internal/mcp depends on %s; it may use the standard library and internal/jsonlimit only", dep)
		}
	}
}
