package staging

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"choir/choird/build"
	"choir/choird/repo"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/rpc"
)

// TestEveryConfigMemberIsClassified fails when config.json gains a member
// nobody has classified: it would otherwise need a restart silently.
func TestEveryConfigMemberIsClassified(t *testing.T) {
	c := config.Default()
	c.Embedding = &config.Embedding{}
	c.Metrics = &config.Metrics{}
	c.Spend = &config.Spend{}
	c.Runtime = &config.Runtime{}
	for key := range members(&c) {
		if _, ok := rules[key]; !ok {
			t.Errorf("config.json member %q has no rule in staging.rules: say whether a change of it is hot-reload, next-start or restart-required", key)
		}
	}
}

func baseConfig() *config.Config {
	c := config.Default()
	c.Workspaces = map[string]config.Workspace{"w1": {Path: "/srv/w1"}, "w2": {Path: "/srv/w2"}}
	c.Models = map[string]config.Model{"fast": {Provider: "openai", Model: "m1", Endpoint: "http://a"}, "big": {Provider: "openai", Model: "m2", Endpoint: "http://b"}}
	c.Gateways = map[string]config.Gateway{"bot": {Type: config.GatewayTelegram, Secret: "tok"}}
	c.Agents = map[string]config.Agent{"a1": {Repo: config.Repo{URL: "/r/a1"}, Defaults: config.AgentDefaults{Workspace: "w1", LLM: "fast"}}}
	return &c
}

func TestConfigChanges(t *testing.T) {
	running := []Holder{{AgentID: "a1", Bindings: rpc.ResourceBindings{Workspace: "w1", LLM: "fast", DM: "dm1"}}}
	tests := []struct {
		name   string
		edit   func(c *config.Config)
		want   string // the change's line, without Use
		class  string
		blocks string // substring of Blocks; "" means none
	}{
		{"model endpoint", func(c *config.Config) { m := c.Models["fast"]; m.Endpoint = "http://c"; c.Models["fast"] = m },
			"~ config.json: models.fast", ctl.ClassHot, ""},
		{"new model", func(c *config.Config) {
			c.Models["new"] = config.Model{Provider: "openai", Model: "x", Endpoint: "http://x"}
		},
			"+ config.json: models.new", ctl.ClassHot, ""},
		{"model in use removed", func(c *config.Config) { delete(c.Models, "fast") },
			"- config.json: models.fast", ctl.ClassHot, `model "fast" is in use by running agent a1: switch it first (choirctl model set a1 OTHER)`},
		{"unused model removed", func(c *config.Config) { delete(c.Models, "big") },
			"- config.json: models.big", ctl.ClassHot, ""},
		{"leased workspace moved", func(c *config.Config) { c.Workspaces["w1"] = config.Workspace{Path: "/srv/elsewhere"} },
			"~ config.json: workspaces.w1", ctl.ClassNextStart, `workspace "w1" is in use by running agent a1: stop it first`},
		{"free workspace moved", func(c *config.Config) { c.Workspaces["w2"] = config.Workspace{Path: "/srv/elsewhere"} },
			"~ config.json: workspaces.w2", ctl.ClassNextStart, ""},
		{"running agent removed", func(c *config.Config) { delete(c.Agents, "a1") },
			"- config.json: agents.a1", ctl.ClassNextStart, "agent \"a1\" is in use by running agent a1"},
		{"gateway", func(c *config.Config) {
			c.Gateways["bot"] = config.Gateway{Type: config.GatewayTelegram, Secret: "other"}
		},
			"~ config.json: gateways.bot", ctl.ClassRestart, "restart choird"},
		{"budget", func(c *config.Config) { c.Budgets.MaxCoreJobs++ },
			"~ config.json: budgets.max_core_jobs", ctl.ClassNextStart, ""},
		{"snapshot cadence", func(c *config.Config) { c.SnapshotEveryRevs++ },
			"~ config.json: snapshot_every_revs", ctl.ClassHot, ""},
		{"embedding added", func(c *config.Config) { c.Embedding = &config.Embedding{Provider: "hashing"} },
			"+ config.json: embedding.provider", ctl.ClassRestart, "restart choird"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			staged := baseConfig()
			tt.edit(staged)
			got := ConfigChanges(baseConfig(), staged, running)
			var lines []string
			for _, c := range got {
				lines = append(lines, c.Op+" "+c.Where)
			}
			i := slices.Index(lines, tt.want)
			if i < 0 {
				t.Fatalf("ConfigChanges() = %v; want a line %q", lines, tt.want)
			}
			c := got[i]
			if c.Class != tt.class {
				t.Errorf("%s: class %q; want %q", tt.want, c.Class, tt.class)
			}
			switch {
			case tt.blocks == "" && c.Blocks != "":
				t.Errorf("%s: blocks %q; want it to apply", tt.want, c.Blocks)
			case !strings.Contains(c.Blocks, tt.blocks):
				t.Errorf("%s: blocks %q; want it to contain %q", tt.want, c.Blocks, tt.blocks)
			}
		})
	}
	if got := ConfigChanges(baseConfig(), baseConfig(), running); len(got) != 0 {
		t.Errorf("ConfigChanges(same, same) = %v; want none", got)
	}
}

func TestSecretChangesNameNoValue(t *testing.T) {
	got := SecretChanges(config.Secrets{"kept": "v", "gone": "v", "rotated": "old-value"},
		config.Secrets{"kept": "v", "new": "v", "rotated": "new-value"})
	var lines []string
	for _, c := range got {
		lines = append(lines, c.String())
		if strings.Contains(c.String(), "value") {
			t.Errorf("%q shows a secret value", c.String())
		}
	}
	want := []string{
		"- secrets.json: gone [hot-reload] → included in: choirctl config apply",
		"+ secrets.json: new [hot-reload] → included in: choirctl config apply",
		"~ secrets.json: rotated [hot-reload] → included in: choirctl config apply",
	}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("SecretChanges() =\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func content(global, agent string, files map[string]string) *build.Content {
	return &build.Content{Global: repo.Checkout{Commit: global + "0000000000", Short: global},
		Agent: repo.Checkout{Commit: agent + "0000000000", Short: agent}, Files: files}
}

func TestRepoChanges(t *testing.T) {
	old := map[string]string{"global:tools/acme.wc.json": "1", "global:Dockerfile.base": "2"}
	now := map[string]string{"global:tools/acme.wc.json": "9", "global:Dockerfile.base": "2", "global:skills/s.json": "3"}
	withAgent := func(m map[string]string, id, h string) map[string]string {
		out := map[string]string{id + ":identity/SOUL.md": h}
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	images := []Image{
		{AgentID: "a1", Running: true, Content: content("g1", "a1old", withAgent(old, "a1", "x"))},
		{AgentID: "a2", Content: content("g1", "a2", withAgent(old, "a2", "y"))},
		{AgentID: "a3"}, // never built
	}
	staged := map[string]*build.Content{
		"a1": content("g2", "a1new", withAgent(now, "a1", "x2")),
		"a2": content("g2", "a2", withAgent(now, "a2", "y")),
		"a3": content("g2", "a3", withAgent(now, "a3", "z")),
	}
	var lines []string
	for _, c := range RepoChanges(images, staged) {
		if c.Class != ctl.ClassRestart {
			t.Errorf("%s: class %q; want restart-required", c.Where, c.Class)
		}
		lines = append(lines, c.String())
	}
	want := []string{
		"~ global repo: g1 -> g2 [restart-required] → use: choirctl agent update a1; choirctl agent build a2",
		"~ a1 repo: a1old -> a1new [restart-required] → use: choirctl agent update a1",
		"~ a1:identity/SOUL.md [restart-required] → use: choirctl agent update a1",
		"+ global:skills/s.json [restart-required] → use: choirctl agent update a1; choirctl agent build a2",
		"~ global:tools/acme.wc.json [restart-required] → use: choirctl agent update a1; choirctl agent build a2",
		"+ a3 image: (none) -> a3 [restart-required] → use: choirctl agent build a3",
	}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("RepoChanges() =\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
