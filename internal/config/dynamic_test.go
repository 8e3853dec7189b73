package config

import (
	"encoding/json"
	"slices"
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
	d := c.DynamicFor(3, "sonnet", "", "", "", "dev-identity", "personal-wiki", "")
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

// The core jobs' model (defaults.core_llm) travels in the dynamic config,
// and its key is granted with the edge's; without one, only the edge's is.
func TestCoreModelIsBound(t *testing.T) {
	data, _ := readExample(t)
	c, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	c.Models["flagship"] = Model{Provider: "p", Model: "big", Endpoint: "https://x.example/v1", Secret: "flagship-key"}
	if d := c.DynamicFor(3, "sonnet", "flagship", "", "", "", "", ""); d.LLM != "sonnet" || d.CoreLLM != "flagship" {
		t.Errorf("DynamicFor(sonnet, flagship) = llm %q, core_llm %q", d.LLM, d.CoreLLM)
	}
	with := c.BoundSecrets("sonnet", "flagship", "", "", "", "", "")
	without := c.BoundSecrets("sonnet", "", "", "", "", "", "")
	if !slices.Contains(with, "flagship-key") || !slices.Contains(with, "openrouter-key") {
		t.Errorf("BoundSecrets with a core model = %v; want both models' keys", with)
	}
	if slices.Contains(without, "flagship-key") {
		t.Errorf("BoundSecrets without a core model = %v; want no flagship-key", without)
	}
}
