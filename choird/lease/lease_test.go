package lease

import (
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"choir/internal/config"
)

func TestAllOrNothing(t *testing.T) {
	tb := NewTable()
	if err := tb.Acquire("a1", []Resource{{Workspace, "main"}, {DM, "admin-dm"}}); err != nil {
		t.Fatal(err)
	}
	err := tb.Acquire("a2", []Resource{{Workspace, "scratch"}, {DM, "admin-dm"}})
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Holder != "a1" || ce.Resource != (Resource{DM, "admin-dm"}) {
		t.Fatalf("Acquire(a2) = %v; want a conflict on the DM naming a1", err)
	}
	if !strings.Contains(err.Error(), `dm "admin-dm" is leased to agent "a1"`) {
		t.Errorf("conflict message = %q", err)
	}
	if h, ok := tb.Holder(Resource{Workspace, "scratch"}); ok {
		t.Errorf("scratch is held by %s after a refused start; want free (no partial lease)", h)
	}
	if err := tb.Acquire("a1", nil); !errors.Is(err, ErrAlreadyRunning) {
		t.Errorf("second start of a1 = %v; want ErrAlreadyRunning", err)
	}
	if got := tb.Release("a1"); len(got) != 2 {
		t.Errorf("Release(a1) = %v; want 2 resources", got)
	}
	tb.Release("a1")
	if err := tb.Acquire("a2", []Resource{{Workspace, "scratch"}, {DM, "admin-dm"}}); err != nil {
		t.Errorf("Acquire(a2) after release = %v", err)
	}
}

func TestConcurrentStartsNeverShareAResource(t *testing.T) {
	tb := NewTable()
	var wg sync.WaitGroup
	var mu sync.Mutex
	winners := 0
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			agent := string(rune('a' + i))
			if tb.Acquire(agent, []Resource{{Workspace, "w"}, {DM, agent}}) == nil {
				mu.Lock()
				winners++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if winners != 1 {
		t.Errorf("%d agents leased the same workspace; want 1", winners)
	}
}

func exampleConfig(t *testing.T) *config.Config {
	t.Helper()
	data, err := os.ReadFile("../../internal/config/testdata/example.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestResolve(t *testing.T) {
	c := exampleConfig(t)
	b, rs, err := Resolve(c, "agent-1", Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Workspace != "main-ws" || b.LLM != "sonnet" || b.DM != "admin-dm" || b.Email != "primary-email" {
		t.Errorf("bindings = %+v; want the defaults", b)
	}
	want := []Resource{{Browser, "agent-1"}, {DM, "admin-dm"}, {Email, "primary-email"}, {GitIdentity, "dev-identity"}, {Notion, "personal-wiki"}, {Workspace, "main-ws"}}
	if len(rs) != len(want) {
		t.Fatalf("resources = %v; want %v", rs, want)
	}
	for i := range want {
		if rs[i] != want[i] {
			t.Errorf("resources[%d] = %v; want %v", i, rs[i], want[i])
		}
	}
	// A shared email account is not leased; overrides replace defaults.
	b, rs, err = Resolve(c, "agent-1", Overrides{Email: "notifications", Workspace: "scratch", LLM: "o3"})
	if err != nil {
		t.Fatal(err)
	}
	if b.Workspace != "scratch" || b.LLM != "o3" {
		t.Errorf("bindings with overrides = %+v", b)
	}
	for _, r := range rs {
		if r.Kind == Email {
			t.Errorf("a shared email account was leased: %v", r)
		}
	}
	// Unknown names are refused, all of them at once.
	_, _, err = Resolve(c, "agent-1", Overrides{Workspace: "nope", DM: "nobody"})
	if err == nil || !strings.Contains(err.Error(), "--workspace=nope") || !strings.Contains(err.Error(), "--dm=nobody") {
		t.Errorf("Resolve with unknown overrides = %v", err)
	}
	if _, _, err := Resolve(c, "ghost", Overrides{}); err == nil || !strings.Contains(err.Error(), `no agent named "ghost"`) {
		t.Errorf("Resolve(ghost) = %v", err)
	}
	// The core jobs' model is bound from the agent's defaults, and leases
	// nothing (models are shared).
	a := c.Agents["agent-1"]
	a.Defaults.CoreLLM = "o3"
	c.Agents["agent-1"] = a
	if b, _, err := Resolve(c, "agent-1", Overrides{LLM: "gpt4o"}); err != nil || b.LLM != "gpt4o" || b.CoreLLM != "o3" {
		t.Errorf("Resolve with core_llm o3 = %+v, %v; want llm gpt4o, core_llm o3", b, err)
	}
}

// Each model role (§7.1, issue 23) is bound from the agent's defaults
// unless agent start overrides it, and an unknown model is refused at its
// flag.
func TestResolveModelRoles(t *testing.T) {
	c := exampleConfig(t)
	a := c.Agents["agent-1"]
	a.Defaults.CoreLLM, a.Defaults.SummaryLLM = "o3", "gpt4o"
	c.Agents["agent-1"] = a
	if b, _, err := Resolve(c, "agent-1", Overrides{}); err != nil || b.CoreLLM != "o3" || b.SummaryLLM != "gpt4o" {
		t.Errorf("Resolve(defaults) = %+v, %v; want core_llm o3, summary_llm gpt4o", b, err)
	}
	if b, _, err := Resolve(c, "agent-1", Overrides{CoreLLM: "sonnet", SummaryLLM: "o3"}); err != nil || b.CoreLLM != "sonnet" || b.SummaryLLM != "o3" {
		t.Errorf("Resolve(--core-llm=sonnet --summary-llm=o3) = %+v, %v", b, err)
	}
	_, _, err := Resolve(c, "agent-1", Overrides{CoreLLM: "gpt9", SummaryLLM: "tiny"})
	if err == nil || !strings.Contains(err.Error(), "--core-llm=gpt9") || !strings.Contains(err.Error(), "--summary-llm=tiny") {
		t.Errorf("Resolve with unknown role models = %v; want both flags named", err)
	}
}
