package sandbox

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// The real sandbox needs root in a container with CAP_SETUID, CAP_SETGID
// and CAP_KILL and a binary built without cgo: choirctl's boundary tests
// run it in real containers (TestToolsCannotReachTheLeaseTokenOrSecrets,
// TestToolsCannotStopTheAgent). These test what runs anywhere.

func TestEnvIsAnAllowlist(t *testing.T) {
	t.Setenv("CHOIR_LEASE_TOKEN", "tok-never-inherited")
	t.Setenv("OPENAI_API_KEY", "sk-never-inherited")
	t.Setenv("CHOIR_AGENT_ID", "agent-1")
	t.Setenv("CHOIR_SESSION_ID", "s-1")
	env := Env()
	var names []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
		if strings.Contains(kv, "never-inherited") {
			t.Errorf("Env() holds %q", kv)
		}
	}
	want := []string{"PATH", "HOME", "LANG", "TERM", "CHOIR_AGENT_ID", "CHOIR_SESSION_ID"}
	if !slices.Equal(names, want) {
		t.Errorf("Env() names = %v; want %v", names, want)
	}
}

func TestCommandWithoutSandboxRunsTheToolItself(t *testing.T) {
	if Current() != nil {
		t.Skip("a sandbox is installed")
	}
	t.Setenv("CHOIR_LEASE_TOKEN", "tok-never-inherited")
	cmd := Command(context.Background(), "/bin/true", "a")
	if !slices.Equal(cmd.Env, Env()) {
		t.Errorf("Command's environment = %q; want the allowlist %q", cmd.Env, Env())
	}
	if cmd.Path != "/bin/true" || !slices.Equal(cmd.Args, []string{"/bin/true", "a"}) || cmd.SysProcAttr == nil || cmd.SysProcAttr.Credential != nil {
		t.Errorf("Command = %q %q %+v; want the tool itself, as the agent's user", cmd.Path, cmd.Args, cmd.SysProcAttr)
	}
	end := Begin()
	end()
	end() // idempotent, and no sweep without a sandbox: this test still runs
}

func TestLaunchRefusesBadArguments(t *testing.T) {
	for _, args := range [][]string{nil, {"64"}, {"many", "/bin/true"}} {
		if err := Launch(args); err == nil {
			t.Errorf("Launch(%q) = nil; want a usage error", args)
		}
	}
}
