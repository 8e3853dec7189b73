package config

import (
	"os"
	"strings"
	"sync"
	"testing"
)

func TestSkeletonParses(t *testing.T) {
	c, err := Parse(Skeleton())
	if err != nil {
		t.Fatalf("Parse(Skeleton()) = %v", err)
	}
	err = Validate(c, Secrets{})
	if err == nil || !strings.Contains(err.Error(), "choirctl secret set postgres") {
		t.Errorf("Validate(skeleton, no secrets) = %v; want only the postgres secret asked for", err)
	}
	if ps := err.(Problems); len(ps) != 1 {
		t.Errorf("skeleton problems = %v; want exactly one", ps)
	}
	if err := Validate(c, Secrets{"postgres": "choir:pw"}); err != nil {
		t.Errorf("Validate(skeleton with the postgres secret) = %v", err)
	}
}

func TestAddAgentKeepsOrderAndRefusesDuplicates(t *testing.T) {
	in := []byte(`{"zeta": {"b": 1, "a": [true, null, 2.50]}, "agents": {"old": {"repo": {"url": "x"}}}}`)
	out, err := AddAgent(in, "agent-2", "/srv/git/agent-2.git")
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if strings.Index(s, `"zeta"`) > strings.Index(s, `"agents"`) || strings.Index(s, `"b"`) > strings.Index(s, `"a"`) {
		t.Errorf("key order changed:\n%s", s)
	}
	if !strings.Contains(s, `2.50`) || !strings.Contains(s, `"url": "/srv/git/agent-2.git"`) || !strings.Contains(s, `"dm": ""`) {
		t.Errorf("AddAgent output lacks the values:\n%s", s)
	}
	if _, err := AddAgent(out, "agent-2", ""); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second AddAgent = %v; want already exists", err)
	}
	if _, err := AddAgent(out, "Bad Name", ""); err == nil {
		t.Error("AddAgent accepted an invalid id")
	}
	// The placeholder makes the config say what to fill in.
	full, _ := AddAgent(Skeleton(), "a1", "")
	c, err := Parse(full)
	if err != nil {
		t.Fatal(err)
	}
	err = Validate(c, Secrets{"postgres": "u:p"})
	for _, want := range []string{"agents.a1.defaults.workspace", "agents.a1.defaults.llm", "agents.a1.defaults.dm", "global_repo.url"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate(config with a placeholder agent) = %v; want it to name %s", err, want)
		}
	}
}

func TestEditSecretsSerialisesEditors(t *testing.T) {
	home := Home{Dir: t.TempDir()}
	if err := WriteFileAtomic(home.SecretsPath(), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := EditSecrets(home, func(s Secrets) error {
				s["k"+string(rune('a'+i))] = "v"
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	s, err := LoadSecrets(home)
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 20 {
		t.Errorf("secrets after 20 concurrent edits = %d; want 20 (none lost)", len(s))
	}
	fi, _ := os.Stat(home.SecretsPath())
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v; want 0600", fi.Mode().Perm())
	}
}
