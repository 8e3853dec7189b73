package evolve

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"choir/choird/approval"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/rpc"
)

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=op", "GIT_AUTHOR_EMAIL=op@example.com",
		"GIT_COMMITTER_NAME=op", "GIT_COMMITTER_EMAIL=op@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

type rig struct {
	a       *Applier
	bare    string
	work    string
	mu      sync.Mutex
	told    []string
	updates int
	outcome string
}

func newRig(t *testing.T) *rig {
	dir := t.TempDir()
	r := &rig{bare: filepath.Join(dir, "agent.git"), work: filepath.Join(dir, "w"), outcome: ctl.UpdateRedeployed}
	git(t, dir, "init", "--quiet", "--bare", "--initial-branch=main", r.bare)
	git(t, dir, "clone", "--quiet", r.bare, r.work)
	git(t, r.work, "checkout", "--quiet", "-B", "main")
	os.MkdirAll(filepath.Join(r.work, "identity"), 0o755)
	os.WriteFile(filepath.Join(r.work, "identity", "SOUL.md"), []byte("soul\n"), 0o644)
	git(t, r.work, "add", "-A")
	git(t, r.work, "commit", "--quiet", "-m", "init")
	git(t, r.work, "push", "--quiet", "origin", "main")
	c := config.Default()
	c.GitIdentities = map[string]config.GitIdentity{"dev": {Name: "Dev Agent", Email: "dev@choir.local"}, "ops": {Name: "Ops Agent", Email: "ops@choir.local"}}
	c.Agents = map[string]config.Agent{"agent-1": {Repo: config.Repo{URL: r.bare, Ref: "main"}, Defaults: config.AgentDefaults{GitIdentity: "ops", DM: "dm1"}}}
	loaded := &config.Loaded{Config: &c}
	r.a = &Applier{
		Config: func() *config.Loaded { return loaded },
		Bindings: func(string) (rpc.ResourceBindings, bool) {
			return rpc.ResourceBindings{GitIdentity: "dev", DM: "dm1"}, true
		},
		Update: func(ctx context.Context, id string, progress func(string)) ctl.UpdateResult {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.updates++
			return ctl.UpdateResult{AgentID: id, Outcome: r.outcome, Image: "choir-agent-agent-1:v2", Detail: "boom"}
		},
		Tell: func(ctx context.Context, id, text string) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.told = append(r.told, text)
		},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	return r
}

func (r *rig) approve(t *testing.T, typ, payload string) string {
	t.Helper()
	r.mu.Lock()
	r.told = nil
	r.mu.Unlock()
	r.a.Apply(context.Background(), approval.Approval{ID: "ap-1", AgentID: "agent-1", SessionID: "s-7", RequestType: typ,
		Payload: json.RawMessage(payload), Status: approval.Approved, ResolvedBy: "choirctl"})
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.told, "\n")
}

const skillSpec = `{"name":"triage","description":"Sort the inbox.","initial_state":"read","states":{"read":{"objective":"Read it.","allowed_tools":["choir.fs.read"],"transitions":[{"on":"complete","to":"done"}]},"done":{"terminal":true}},"max_steps":4}`

func TestApprovedSkillIsCommittedAndRolledOut(t *testing.T) {
	r := newRig(t)
	told := r.approve(t, TypeSkill, `{"spec":`+skillSpec+`,"rationale":"the user asked for triage"}`)
	if !strings.Contains(told, "Approved skill triage: committed") || !strings.Contains(told, "now runs choir-agent-agent-1:v2 with the skill triage") {
		t.Errorf("the DM was told %q", told)
	}
	var spec map[string]any
	if err := json.Unmarshal([]byte(git(t, r.bare, "show", "main:skills/triage.json")), &spec); err != nil || spec["name"] != "triage" {
		t.Errorf("skills/triage.json on main = %v, %v", spec, err)
	}
	if got := git(t, r.bare, "log", "-1", "--format=%an <%ae>|%B", "main"); !strings.HasPrefix(got, "Dev Agent <dev@choir.local>|skill triage") ||
		!strings.Contains(got, "the user asked for triage") || !strings.Contains(got, "approved by choirctl (approval ap-1)") {
		t.Errorf("the commit = %q; want the session's identity, the rationale and the approval", got)
	}
	if r.updates != 1 {
		t.Errorf("the agent was updated %d times; want 1", r.updates)
	}

	// A failed update says the commit stays and what failed.
	r.outcome = ctl.UpdateFailed
	spec2 := strings.Replace(skillSpec, `"triage"`, `"triage2"`, 1)
	if told := r.approve(t, TypeSkill, `{"spec":`+spec2+`,"rationale":"x"}`); !strings.Contains(told, "the commit is in the repo, but the update failed: boom") {
		t.Errorf("after a failed update the DM was told %q", told)
	}
}

func TestApprovedToolGoesToAProposalBranchOnly(t *testing.T) {
	r := newRig(t)
	main := git(t, r.bare, "rev-parse", "main")
	told := r.approve(t, TypeTool, `{"manifest":{"llm":{"name":"acme.wc","description":"Count words.","input_schema":{"type":"object","properties":{}}},"runtime":{"side_effect":"read"}},"rationale":"count"}`)
	if !strings.Contains(told, "on branch proposal/s-7/acme.wc") || !strings.Contains(told, "a person has written and reviewed its implementation") {
		t.Errorf("the DM was told %q", told)
	}
	if git(t, r.bare, "rev-parse", "main") != main {
		t.Error("an approved tool proposal moved main: the model's tool must not run before a person writes it")
	}
	if got := git(t, r.bare, "show", "proposal/s-7/acme.wc:tools/acme.wc.json"); !strings.Contains(got, `"acme.wc"`) {
		t.Errorf("the proposal branch holds %q", got)
	}
	if r.updates != 0 {
		t.Error("an approved tool proposal updated the agent")
	}
}

func TestApprovedRepoChange(t *testing.T) {
	r := newRig(t)
	push := func(branch, soul string) {
		git(t, r.work, "checkout", "--quiet", "-B", branch, "origin/main")
		os.WriteFile(filepath.Join(r.work, "identity", "SOUL.md"), []byte(soul), 0o644)
		git(t, r.work, "commit", "--quiet", "-am", "change")
		git(t, r.work, "push", "--quiet", "--force", "origin", branch)
		git(t, r.work, "fetch", "--quiet", "origin")
	}
	push("proposal/s-7/calmer", "calmer soul\n")
	told := r.approve(t, TypeRepoChange, `{"branch":"proposal/s-7/calmer","description":"calmer"}`)
	if !strings.Contains(told, "merged as") || git(t, r.bare, "show", "main:identity/SOUL.md") != "calmer soul" || r.updates != 1 {
		t.Errorf("merge: told %q, SOUL.md %q, updates %d", told, git(t, r.bare, "show", "main:identity/SOUL.md"), r.updates)
	}

	// Another session's branch, or none: refused, nothing merged.
	push("proposal/s-6/other", "other soul\n")
	main := git(t, r.bare, "rev-parse", "main")
	for _, branch := range []string{"proposal/s-6/other", "main", "proposal/s-7/"} {
		if told := r.approve(t, TypeRepoChange, `{"branch":"`+branch+`","description":"x"}`); !strings.Contains(told, "is not one of this session's proposal branches") {
			t.Errorf("branch %q: told %q", branch, told)
		}
	}
	// A conflict: nothing merged, the branch left.
	push("proposal/s-7/clash", "clashing soul\n")
	git(t, r.work, "checkout", "--quiet", "-B", "main", "origin/main")
	os.WriteFile(filepath.Join(r.work, "identity", "SOUL.md"), []byte("newer soul\n"), 0o644)
	git(t, r.work, "commit", "--quiet", "-am", "newer")
	git(t, r.work, "push", "--quiet", "origin", "main")
	main = git(t, r.bare, "rev-parse", "main")
	if told := r.approve(t, TypeRepoChange, `{"branch":"proposal/s-7/clash","description":"x"}`); !strings.Contains(told, "identity/SOUL.md") || !strings.Contains(told, "nothing was merged") {
		t.Errorf("conflict: told %q", told)
	}
	if git(t, r.bare, "rev-parse", "main") != main || r.updates != 1 {
		t.Error("a refused or conflicting repo change moved main or updated the agent")
	}
}

func TestApprovedConfigChangeTellsTheOperator(t *testing.T) {
	r := newRig(t)
	if told := r.approve(t, TypeConfigChange, `{"change":"use o3 for core jobs","rationale":"x"}`); !strings.Contains(told, "use o3 for core jobs") || !strings.Contains(told, "choirctl config load") {
		t.Errorf("told %q", told)
	}
}
