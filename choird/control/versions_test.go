package control

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"choir/internal/ctl"
)

// Every new config version is logged with its number, when, and what
// changed (the config loaded, a model set, secrets applied), with counts
// and names but never a secret value (§22.1).
func TestConfigVersionChangesAreLogged(t *testing.T) {
	p, home, _, _ := hostileHome(t)
	if _, err := p.SetModel("agent-1", ctl.ModelChoice{LLM: "m"}); err != nil {
		t.Fatalf("SetModel = %v", err)
	}
	applied, err := p.ApplySecrets()
	if err != nil {
		t.Fatalf("ApplySecrets = %v", err)
	}
	data, err := os.ReadFile(filepath.Join(home.LogsDir(), "choird.log"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("choird.log line %q: %v", line, err)
		}
		if r["msg"] != "config version changed" {
			continue
		}
		if _, ok := r["changed_at"].(string); !ok {
			t.Errorf("record %v has no changed_at", r)
		}
		got = append(got, strings.Join([]string{jsonText(r["config_version"]), jsonText(r["change"]), jsonText(r["secrets"])}, " "))
	}
	want := []string{
		"1 configuration loaded " + jsonText(float64(applied.Secrets)),
		"2 model set <nil>",
		"3 secrets applied " + jsonText(float64(applied.Secrets)),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("config version records:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(string(data), "[REDACTED]") {
		t.Errorf("choird.log tried to log a secret value (the redactor caught it):\n%s", data)
	}
}

func jsonText(v any) string {
	if v == nil {
		return "<nil>"
	}
	b, _ := json.Marshal(v)
	return strings.Trim(string(b), `"`)
}
