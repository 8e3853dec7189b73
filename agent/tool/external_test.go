package tool

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"choir/agent/sandbox"
	"choir/testkit"
)

// runExternal loads one external tool from a fresh directory and runs it once
// with input, in a fresh workspace, with the agent's secrets.
func runExternal(t *testing.T, runtimeExtra, script, input string, secrets map[string]string) (Result, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "global")
	writeTool(t, dir, "probe", manifest("acme.probe", runtimeExtra), script, 0o755)
	reg, err := Load(nil, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	call, err := reg.Prepare("acme.probe", json.RawMessage(input))
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	r := call.Run(context.Background(), Invocation{Workspace: ws, CallID: "call-1", Secrets: func(kind string) (string, error) {
		if v, ok := secrets[kind]; ok {
			return v, nil
		}
		return "", fmt.Errorf("no %s is bound", kind)
	}})
	return r, ws
}

func TestExternalOutcomes(t *testing.T) {
	tests := []struct {
		name, runtime, script string
		code                  string // "" for success
		summary               string // substring
		stderr                string // substring of the stderr field
	}{
		{
			name:    "success",
			script:  "#!/bin/sh\ncat >/dev/null\necho '{\"summary\":\"did it\",\"n\":1}'\n",
			summary: "did it",
		},
		{
			name:    "success without summary",
			script:  "#!/bin/sh\ncat >/dev/null\necho '{}'\n",
			summary: "acme.probe finished",
		},
		{
			name:    "tool reports an error",
			script:  "#!/bin/sh\ncat >/dev/null\necho '{\"status\":\"error\",\"error\":{\"code\":\"quota\",\"message\":\"over quota\"}}'\n",
			code:    "quota",
			summary: "over quota",
		},
		{
			name:    "non-zero exit",
			script:  "#!/bin/sh\ncat >/dev/null\necho 'it went wrong' >&2\nexit 3\n",
			code:    CodeExitStatus,
			summary: "exited with status 3",
			stderr:  "it went wrong",
		},
		{
			name:    "crash",
			script:  "#!/bin/sh\nkill -SEGV $$\n",
			code:    CodeExitStatus,
			summary: "killed by signal segmentation fault",
		},
		{
			name:    "garbage stdout",
			script:  "#!/bin/sh\ncat >/dev/null\necho 'Traceback (most recent call last):'\n",
			code:    CodeBadOutput,
			summary: "did not print one JSON result object",
		},
		{
			name:    "two objects",
			script:  "#!/bin/sh\necho '{}'\necho '{}'\n",
			code:    CodeBadOutput,
			summary: "unexpected data after it",
		},
		{
			name:    "oversized stdout",
			script:  "#!/bin/sh\ncat >/dev/null\nhead -c 1100000 /dev/zero | tr '\\0' a\n",
			code:    CodeBadOutput,
			summary: "wrote 1100000 bytes to stdout, more than the 1048576 allowed",
		},
		{
			name:    "oversized stderr is cut to its tail",
			script:  "#!/bin/sh\nhead -c 3000000 /dev/zero | tr '\\0' e >&2\necho THE-END >&2\nexit 1\n",
			code:    CodeExitStatus,
			stderr:  "eeeeTHE-END",
			summary: "exited with status 1",
		},
		{
			name:    "ignores its input",
			script:  "#!/bin/sh\necho '{\"summary\":\"never read stdin\"}'\n",
			summary: "never read stdin",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := runExternal(t, tc.runtime, tc.script, `{"q": "x"}`, nil)
			if tc.code == "" {
				if r.Status != StatusSuccess {
					t.Fatalf("Run = %+v, error %+v; want success", r, r.Error)
				}
			} else if r.Status != StatusError || r.Error == nil || r.Error.Code != tc.code {
				t.Fatalf("Run = %+v, error %+v; want code %s", r, r.Error, tc.code)
			}
			if !strings.Contains(r.Summary, tc.summary) {
				t.Errorf("summary = %q; want it to contain %q", r.Summary, tc.summary)
			}
			if tc.stderr != "" {
				s, _ := r.Fields["stderr"].(string)
				if !strings.Contains(s, tc.stderr) || len(s) > stderrExcerpt+3 {
					t.Errorf("stderr field = %d bytes ending %q; want at most %d bytes containing %q",
						len(s), tailOf(s, 40), stderrExcerpt+3, tc.stderr)
				}
			}
		})
	}
}

func TestExternalStdinAndWorkingDir(t *testing.T) {
	script := "#!/bin/sh\nin=$(cat)\nprintf '{\"summary\":\"echo\",\"stdin\":%s,\"pwd\":\"%s\"}' \"$in\" \"$(pwd)\"\n"
	r, ws := runExternal(t, "", script, `{"q": "hello"}`, map[string]string{"acme_token": "s3cr3t"})
	if r.Status != StatusSuccess {
		t.Fatalf("Run = %+v, %+v", r, r.Error)
	}
	var stdin map[string]json.RawMessage
	if err := json.Unmarshal(r.Fields["stdin"].(json.RawMessage), &stdin); err != nil {
		t.Fatal(err)
	}
	if string(stdin["input"]) != `{"q":"hello"}` || string(stdin["call_id"]) != `"call-1"` {
		t.Errorf("stdin = %v; want the input and the call id", stdin)
	}
	if _, ok := stdin["secrets"]; ok {
		t.Errorf("stdin has secrets %s without a grant", stdin["secrets"])
	}
	if got := string(r.Fields["pwd"].(json.RawMessage)); got != `"`+ws+`"` {
		t.Errorf("working directory = %s; want the workspace %s", got, ws)
	}
}

func TestExternalSecrets(t *testing.T) {
	t.Setenv("CHOIR_TEST_AGENT_VAR", "agent-env-value")
	// The tool reports its stdin, its environment and its arguments.
	script := "#!/bin/sh\nin=$(cat)\nprintf '{\"stdin\":%s,\"env\":\"%s\",\"args\":\"%s\"}' \"$in\" \"$(env | base64 -w0)\" \"$*\"\n"
	secrets := map[string]string{SecretNotion: "s3cr3t-value", SecretLLM: "other-value"}
	tests := []struct {
		name, runtime string
		wantSecrets   string // the stdin secrets member, "" for absent
	}{
		{"granted", `"secret_resources": ["notion"]`, `{"notion":"s3cr3t-value"}`},
		{"not granted", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := runExternal(t, tc.runtime, script, `{}`, secrets)
			if r.Status != StatusSuccess {
				t.Fatalf("Run = %+v, %+v", r, r.Error)
			}
			var stdin map[string]json.RawMessage
			if err := json.Unmarshal(r.Fields["stdin"].(json.RawMessage), &stdin); err != nil {
				t.Fatal(err)
			}
			if got := string(stdin["secrets"]); got != tc.wantSecrets {
				t.Errorf("stdin secrets = %q; want %q", got, tc.wantSecrets)
			}
			var envB64 string
			if err := json.Unmarshal(r.Fields["env"].(json.RawMessage), &envB64); err != nil {
				t.Fatal(err)
			}
			env, err := base64.StdEncoding.DecodeString(envB64)
			if err != nil {
				t.Fatal(err)
			}
			for _, leak := range []string{"s3cr3t-value", "other-value", "notion", "agent-env-value"} {
				if strings.Contains(string(env), leak) {
					t.Errorf("environment contains %q:\n%s", leak, env)
				}
			}
			if !strings.Contains(string(env), "HOME=/tmp\n") || !strings.Contains(string(env), "PATH="+sandbox.Path+"\n") {
				t.Errorf("environment = \n%s\nwant HOME=/tmp and PATH=%s", env, sandbox.Path)
			}
			if args := string(r.Fields["args"].(json.RawMessage)); args != `""` {
				t.Errorf("arguments = %s; want none", args)
			}
		})
	}
}

func TestExternalTimeoutKillsProcessGroup(t *testing.T) {
	// The tool starts a child, writes both pids into the workspace and
	// hangs; the timeout must kill the leader and the child.
	script := "#!/bin/sh\ncat >/dev/null\nsleep 1000 &\necho $! > child.pid\necho $$ > tool.pid\nwait\n"
	r, ws := runExternal(t, `"timeout_ms": 1000`, script, `{}`, nil)
	if r.Error == nil || r.Error.Code != CodeTimeout {
		t.Fatalf("Run = %+v, %+v; want a timeout", r, r.Error)
	}
	testkit.ProcessGone(t, testkit.ReadPid(t, filepath.Join(ws, "tool.pid")))
	testkit.ProcessGone(t, testkit.ReadPid(t, filepath.Join(ws, "child.pid")))
}

func TestExternalCancelKillsProcessGroup(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "global")
	writeTool(t, dir, "hang", manifest("acme.hang", ""),
		"#!/bin/sh\ncat >/dev/null\necho $$ > tool.pid.tmp && mv tool.pid.tmp tool.pid\nsleep 1000\n", 0o755)
	reg, err := Load(nil, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	call, err := reg.Prepare("acme.hang", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Result)
	go func() { done <- call.Run(ctx, Invocation{Workspace: ws}) }()
	pidFile := filepath.Join(ws, "tool.pid")
	waitFor(t, func() bool { return fileExists(pidFile) })
	cancel()
	r := <-done
	if r.Error == nil || r.Error.Code != CodeCancelled {
		t.Fatalf("Run = %+v, %+v; want cancelled", r, r.Error)
	}
	testkit.ProcessGone(t, testkit.ReadPid(t, pidFile))
}
