package config

import (
	"encoding/json"
	"strings"
	"testing"
)

// An agent receives its own git identity, Notion integration and email
// account (the names of their secrets, to resolve tools' secret_resources),
// never another agent's, and never a secret value.
func TestDynamicForCarriesOnlyTheBoundResources(t *testing.T) {
	data, secrets := readExample(t)
	c, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	d := c.DynamicFor(3, "sonnet", "", "dev-identity", "personal-wiki", "")
	if d.GitIdentity == nil || d.GitIdentity.Secret != "git-dev-token" || d.GitIdentity.Email != "dev@choir.local" {
		t.Errorf("DynamicFor(dev-identity).GitIdentity = %+v; want dev-identity's entry", d.GitIdentity)
	}
	if d.Notion == nil || d.Notion.Secret != "notion-personal-key" {
		t.Errorf("DynamicFor(personal-wiki).Notion = %+v", d.Notion)
	}
	if d.Email != nil {
		t.Errorf("DynamicFor with no email bound: Email = %+v; want nil", d.Email)
	}
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, other := range []string{"ops@choir.local", "git-ops-token", "notion-work-key", "email-primary-creds"} {
		if strings.Contains(string(raw), other) {
			t.Errorf("the dynamic config names %q, which is not bound to this agent", other)
		}
	}
	for name, v := range secrets {
		if len(v) >= 4 && strings.Contains(string(raw), v) {
			t.Errorf("the dynamic config holds the value of secret %s", name)
		}
	}
}
