package build

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"choir/internal/config"
)

func writeMCPTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestMCPDeclarationsMergedAndChecked: the agent repo's declaration
// replaces the global one of the same server, both are baked under mcp/,
// their secrets go to version.json, a bad one fails the build naming the
// repo, file and JSON pointer, and config load sees a changed one.
func TestMCPDeclarationsMergedAndChecked(t *testing.T) {
	global := writeMCPTree(t, map[string]string{
		"Dockerfile.base": "FROM x\n", "identity/USER.md": "u\n",
		"mcp/shared.json": `{"transport":"stdio","command":"/global/server"}`,
		"mcp/web.json":    `{"transport":"http","url":"https://mcp.example.com/mcp","headers":{"Authorization":{"secret":"web-token","format":"Bearer %s"}}}`,
	})
	agent := writeMCPTree(t, map[string]string{
		"Dockerfile":      "FROM choir-base\n",
		"mcp/shared.json": `{"transport":"stdio","command":"/agent/server","env":{"K":{"secret":"agent-key"}}}`,
	})
	tree, err := check(loadSource("global repo", global, "g", BaseDockerfile, UserFile), loadSource("agent repo", agent, "a", AgentDockerfile))
	if err != nil {
		t.Fatal(err)
	}
	baked := map[string]string{}
	for _, e := range tree.Entries {
		baked[e.Path] = string(e.Body)
	}
	if !strings.Contains(baked["mcp/shared.json"], "/agent/server") || baked["mcp/web.json"] == "" {
		t.Errorf("baked mcp/ = %v; want the agent's shared.json and the global web.json", baked)
	}
	if got := mcpSecretNames(tree); got != "agent-key,web-token" {
		t.Errorf("mcpSecretNames = %q; want agent-key,web-token", got)
	}

	os.WriteFile(filepath.Join(agent, "mcp", "bad.json"), []byte(`{"transport":"stdio","command":"relative"}`), 0o644)
	_, err = check(loadSource("global repo", global, "g", BaseDockerfile, UserFile), loadSource("agent repo", agent, "a", AgentDockerfile))
	var ie *InvalidError
	if !errors.As(err, &ie) || len(ie.Faults) != 1 || ie.Faults[0].Repo != "agent repo" || ie.Faults[0].File != "mcp/bad.json" || ie.Faults[0].Path != "/command" {
		t.Fatalf("check with a bad declaration = %v; want one fault at agent repo mcp/bad.json /command", err)
	}

	files := map[string]string{}
	if err := fingerprint(agent, "a1", files); err != nil {
		t.Fatal(err)
	}
	if files["a1:mcp/shared.json"] == "" {
		t.Errorf("fingerprint = %v; want mcp/ files, so config load reports their changes", files)
	}
}

// TestSamplingModelMustBeConfigured: a declaration whose sampling.model
// config.json lacks fails the build naming the repo, the file, the pointer
// and the models there are; a global declaration the agent repo replaces
// is not held against the image.
func TestSamplingModelMustBeConfigured(t *testing.T) {
	global := writeMCPTree(t, map[string]string{
		"Dockerfile.base": "FROM x\n", "identity/USER.md": "u\n",
		"mcp/notes.json":  `{"transport":"stdio","command":"/srv/notes","sampling":{"model":"gone","max_tokens":100}}`,
		"mcp/shared.json": `{"transport":"stdio","command":"/srv/shared","sampling":{"model":"gone","max_tokens":100}}`,
	})
	agent := writeMCPTree(t, map[string]string{
		"Dockerfile":      "FROM choir-base\n",
		"mcp/shared.json": `{"transport":"stdio","command":"/srv/shared","sampling":{"model":"fast","max_tokens":100}}`,
		"mcp/plain.json":  `{"transport":"stdio","command":"/srv/plain","sampling":{"max_tokens":100}}`,
	})
	gs := loadSource("global repo", global, "g", BaseDockerfile, UserFile)
	as := loadSource("agent repo", agent, "a", AgentDockerfile)
	if _, err := check(gs, as); err != nil {
		t.Fatal(err)
	}
	models := map[string]config.Model{"fast": {}, "big": {}}
	err := checkSamplingModels(gs, as, models)
	var ie *InvalidError
	if !errors.As(err, &ie) || len(ie.Faults) != 1 {
		t.Fatalf("checkSamplingModels = %v; want exactly one fault (global notes.json)", err)
	}
	f := ie.Faults[0]
	if f.Repo != "global repo" || f.File != "mcp/notes.json" || f.Path != "/sampling/model" || !strings.Contains(f.Message, `"gone"`) || !strings.Contains(f.Message, "big, fast") {
		t.Errorf("fault = %+v; want global repo mcp/notes.json /sampling/model naming \"gone\" and the models there are", f)
	}
	models["gone"] = config.Model{}
	if err := checkSamplingModels(gs, as, models); err != nil {
		t.Errorf("with the model configured: %v", err)
	}
}
