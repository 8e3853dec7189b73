package control

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"choir/choird/build"
	"choir/choird/repo"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/rpc"
)

// runningAgents is the recording lifecycle with agent-1 running on the
// example's defaults.
type runningAgents struct{ recAgents }

func (a runningAgents) List() []ctl.AgentStatus {
	return []ctl.AgentStatus{{AgentID: "agent-1", State: "running", Image: "choir-agent-agent-1:v1",
		Bindings: &rpc.ResourceBindings{Workspace: "main-ws", LLM: "sonnet", GitIdentity: "dev-identity", DM: "admin-dm"}}}
}

// fakeChecker answers every agent's repos at commit "new" and its image
// at "old", or fails when broken is set.
type fakeChecker struct{ broken error }

func (f fakeChecker) Check(_ context.Context, cfg *config.Config, id string, _ func(string)) (*build.Content, error) {
	if f.broken != nil {
		return nil, f.broken
	}
	return &build.Content{Global: repo.Checkout{Commit: "new", Short: "new"}, Agent: repo.Checkout{Commit: "a", Short: "a"},
		Files: map[string]string{"global:tools/acme.wc.json": "2"}}, nil
}

func (f fakeChecker) ImageContent(_ context.Context, id, image string) (*build.Content, error) {
	return &build.Content{Global: repo.Checkout{Commit: "old", Short: "old"}, Agent: repo.Checkout{Commit: "a", Short: "a"},
		Files: map[string]string{"global:tools/acme.wc.json": "1"}}, nil
}

// stagingHome is hostileHome with agent-1 running and a fake checker;
// edit rewrites config.json (or secrets.json) as an operator would.
func stagingHome(t *testing.T) (*Plane, *recorder, func(file string, edit func(m map[string]any))) {
	p, home, rec, _ := hostileHome(t)
	p.SetAgents(runningAgents{recAgents{rec}})
	p.SetChecker(fakeChecker{})
	edit := func(file string, edit func(m map[string]any)) {
		t.Helper()
		path := home.ConfigPath()
		if file == "secrets" {
			path = home.SecretsPath()
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		data, _ = json.Marshal(m)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return p, rec, edit
}

func lines(d ctl.ConfigDiff) []string {
	var out []string
	for _, c := range d.Changes {
		out = append(out, c.Op+" "+c.Where+" ["+c.Class+"]")
	}
	return out
}

func setModelEndpoint(endpoint string) func(map[string]any) {
	return func(m map[string]any) {
		m["models"].(map[string]any)["sonnet"].(map[string]any)["endpoint"] = endpoint
	}
}

// TestConfigApplyPublishesHotChanges: a model's endpoint and a new secret
// reach the running configuration under a new version, and running
// agents are told to fetch both; the repos' changes stay pending.
func TestConfigApplyPublishesHotChanges(t *testing.T) {
	p, rec, edit := stagingHome(t)
	ctx := context.Background()
	edit("config", setModelEndpoint("https://models.example/v1"))
	edit("secrets", func(m map[string]any) { m["new-key"] = "s3cret-value" })
	_, before := p.Current()

	d, err := p.LoadConfig(ctx)
	if err != nil {
		t.Fatalf("LoadConfig() = %v", err)
	}
	got := lines(d)
	for _, want := range []string{"~ config.json: models.sonnet [hot-reload]", "+ secrets.json: new-key [hot-reload]",
		"~ global repo [restart-required]", "~ global:tools/acme.wc.json [restart-required]"} {
		if !slices.Contains(got, want) {
			t.Errorf("config load diff = %v; want %q", got, want)
		}
	}
	if !d.Applicable {
		t.Errorf("diff says apply would refuse: %v", d.Changes)
	}
	if l, v := p.Current(); v != before || l.Config.Models["sonnet"].Endpoint == "https://models.example/v1" {
		t.Fatal("config load changed the running configuration; only apply may")
	}

	res, err := p.ApplyConfig(ctx)
	if err != nil {
		t.Fatalf("ApplyConfig() = %v", err)
	}
	l, v := p.Current()
	if v != before+1 || res.ConfigVersion != v {
		t.Errorf("config version %d (apply said %d); want %d", v, res.ConfigVersion, before+1)
	}
	if l.Config.Models["sonnet"].Endpoint != "https://models.example/v1" || l.Secrets["new-key"] != "s3cret-value" {
		t.Errorf("running config after apply: endpoint %q, new-key %q", l.Config.Models["sonnet"].Endpoint, l.Secrets["new-key"])
	}
	if res.Published != 2 || len(res.Pending) != 2 {
		t.Errorf("apply published %d, pending %d; want 2 and 2 (the repo lines)", res.Published, len(res.Pending))
	}
	calls := rec.got()
	for _, want := range []string{"broadcast " + rpc.EventConfigChanged, "broadcast " + rpc.EventSecretsChanged} {
		if !slices.Contains(calls, want) {
			t.Errorf("agents were told %v; want %q", calls, want)
		}
	}
	// What remains staged is what runs, but for the repos.
	d, err = p.DiffConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Changes {
		if !repoChange(c) {
			t.Errorf("after apply, diff still lists %s", c)
		}
	}
	// A second apply has nothing to publish and bumps nothing.
	if res, err := p.ApplyConfig(ctx); err != nil || res.Published != 0 {
		t.Errorf("second ApplyConfig() = %+v, %v; want nothing published", res, err)
	}
	if _, v2 := p.Current(); v2 != v {
		t.Errorf("second apply moved the config version to %d", v2)
	}
}

// TestConfigApplyRefuses: changes apply cannot make now leave the running
// configuration and its version as they were, and say what to run.
func TestConfigApplyRefuses(t *testing.T) {
	var elsewhere string // a free directory for the leased workspace to move to
	for _, tc := range []struct {
		name string
		file string
		edit func(m map[string]any)
		want string
	}{
		{"gateway", "config", func(m map[string]any) {
			m["gateways"].(map[string]any)["bot-main"].(map[string]any)["api_base"] = "https://bots.example"
		}, "~ config.json: gateways.bot-main: choird reads it once at its start: restart choird"},
		{"model in use", "config", func(m map[string]any) {
			models := m["models"].(map[string]any)
			models["other"] = models["sonnet"]
			delete(models, "sonnet")
			for _, md := range models { // fallbacks follow the rename
				if fb, ok := md.(map[string]any)["fallback"].([]any); ok {
					for i, n := range fb {
						if n == "sonnet" {
							fb[i] = "other"
						}
					}
				}
			}
			for _, a := range m["agents"].(map[string]any) {
				a.(map[string]any)["defaults"].(map[string]any)["llm"] = "other"
			}
		}, `model "sonnet" is in use by running agent agent-1`},
		{"leased workspace", "config", func(m map[string]any) {
			m["workspaces"].(map[string]any)["main-ws"].(map[string]any)["path"] = elsewhere
		}, `workspace "main-ws" is in use by running agent agent-1: stop it first`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			elsewhere = t.TempDir()
			p, rec, edit := stagingHome(t)
			ctx := context.Background()
			edit("config", setModelEndpoint("https://models.example/v1")) // a hot change beside it
			edit(tc.file, tc.edit)
			l0, v0 := p.Current()
			d, err := p.LoadConfig(ctx)
			if err != nil {
				t.Fatalf("LoadConfig() = %v", err)
			}
			if d.Applicable {
				t.Errorf("diff says apply would publish; want it to refuse: %v", lines(d))
			}
			_, err = p.ApplyConfig(ctx)
			var ce *ctl.Error
			if !errors.As(err, &ce) || ce.Status != http.StatusConflict || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "nothing applied") {
				t.Fatalf("ApplyConfig() = %v; want a 409 naming %q", err, tc.want)
			}
			if l, v := p.Current(); l != l0 || v != v0 {
				t.Error("a refused apply changed the running configuration")
			}
			if slices.Contains(rec.got(), "broadcast "+rpc.EventConfigChanged) {
				t.Error("a refused apply told the agents")
			}
		})
	}
}

// TestConfigLoadStagesNothingOnAProblem: a broken config.json or a broken
// repo stages nothing, and drops what an earlier load staged.
func TestConfigLoadStagesNothingOnAProblem(t *testing.T) {
	p, _, edit := stagingHome(t)
	ctx := context.Background()
	edit("config", setModelEndpoint("https://models.example/v1"))
	if _, err := p.LoadConfig(ctx); err != nil {
		t.Fatalf("LoadConfig() = %v", err)
	}
	edit("config", func(m map[string]any) {
		m["agents"].(map[string]any)["agent-1"].(map[string]any)["defaults"].(map[string]any)["llm"] = "nope"
	})
	_, err := p.LoadConfig(ctx)
	if err == nil || !strings.Contains(err.Error(), "nothing is staged") || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("LoadConfig(bad llm) = %v; want the problem and 'nothing is staged'", err)
	}
	if d, _ := p.DiffConfig(ctx); d.Staged {
		t.Error("a failed load left the earlier snapshot staged")
	}
	if _, err := p.ApplyConfig(ctx); err == nil || !strings.Contains(err.Error(), "run choirctl config load first") {
		t.Errorf("ApplyConfig() after a failed load = %v; want nothing staged", err)
	}

	edit("config", func(m map[string]any) {
		m["agents"].(map[string]any)["agent-1"].(map[string]any)["defaults"].(map[string]any)["llm"] = "sonnet"
	})
	p.SetChecker(fakeChecker{broken: &build.InvalidError{Faults: []build.Fault{{File: "skills/x.json", Message: "bad"}}}})
	if _, err := p.LoadConfig(ctx); err == nil || !strings.Contains(err.Error(), "agent agent-1") || !strings.Contains(err.Error(), "skills/x.json") {
		t.Errorf("LoadConfig(broken repo) = %v; want the agent and the file", err)
	}
}

// TestConfigApplyRefusesAStaleSnapshot: a secret apply after config load
// must not be undone by config apply.
func TestConfigApplyRefusesAStaleSnapshot(t *testing.T) {
	p, _, edit := stagingHome(t)
	ctx := context.Background()
	edit("config", setModelEndpoint("https://models.example/v1"))
	if _, err := p.LoadConfig(ctx); err != nil {
		t.Fatal(err)
	}
	edit("secrets", func(m map[string]any) { m["brave-api-key"] = "rotated" })
	if _, err := p.ApplySecrets(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ApplyConfig(ctx); err == nil || !strings.Contains(err.Error(), "run choirctl config load again") {
		t.Fatalf("ApplyConfig() after secret apply = %v; want it refused as stale", err)
	}
	if p.Config().Secrets["brave-api-key"] != "rotated" {
		t.Error("the rotated secret was undone")
	}
}
