package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// bound resolves kinds from a map, as the agent does from its bindings; a
// kind not in it is unbound.
func bound(m map[string]string) SecretFunc {
	return func(kind string) (string, error) {
		if v, ok := m[kind]; ok {
			return v, nil
		}
		return "", fmt.Errorf("no %s resource is bound in this session", kind)
	}
}

func TestSecretResourcesNameKindsOfBoundResources(t *testing.T) {
	for _, ok := range []string{`["llm"]`, `["tts"]`, `["git_identity"]`, `["notion"]`, `["email"]`,
		`["search:brave"]`, `["llm", "search:brave", "search:other-1"]`} {
		if _, err := ParseManifest("ok.json", []byte(manifest("acme.ok", `"secret_resources": `+ok))); err != nil {
			t.Errorf("secret_resources %s refused: %v", ok, err)
		}
	}
	tests := []struct {
		list, path string
		want       []string
	}{
		{`["openrouter-key"]`, "/runtime/secret_resources/0", []string{`unknown secret resource "openrouter-key"`, "llm, tts, git_identity, notion, email", "not secrets.json names"}},
		{`["llm", "git-identity"]`, "/runtime/secret_resources/1", []string{`did you mean "git_identity"?`}},
		{`["voice"]`, "/runtime/secret_resources/0", []string{`did you mean "tts"?`}},
		{`["search"]`, "/runtime/secret_resources/0", []string{`did you mean "search:<provider>"?`}},
		{`["search:"]`, "/runtime/secret_resources/0", []string{"search provider of config.json"}},
		{`["search:Brave Search"]`, "/runtime/secret_resources/0", []string{"search provider of config.json"}},
		{`["LLM"]`, "/runtime/secret_resources/0", []string{`unknown secret resource "LLM"`}},
		{`["notion", "notion"]`, "/runtime/secret_resources/1", []string{`"notion" is listed twice`}},
	}
	for _, tc := range tests {
		_, err := ParseManifest("/choir/tools/agent/bad.json", []byte(manifest("acme.bad", `"secret_resources": `+tc.list)))
		var le *LoadError
		if !errors.As(err, &le) || len(le.Faults) != 1 {
			t.Errorf("secret_resources %s: ParseManifest = %v; want one fault", tc.list, err)
			continue
		}
		f := le.Faults[0]
		if f.File != "/choir/tools/agent/bad.json" || f.Path != tc.path {
			t.Errorf("secret_resources %s: fault at %s %s; want %s", tc.list, f.File, f.Path, tc.path)
		}
		for _, w := range tc.want {
			if !strings.Contains(f.Message, w) {
				t.Errorf("secret_resources %s: fault %q; want it to say %q", tc.list, f.Message, w)
			}
		}
	}
}

func TestLoadRefusesAnUnknownSecretKind(t *testing.T) {
	dir := t.TempDir()
	writeTool(t, dir, "raw", manifest("acme.raw", `"secret_resources": ["git-dev-token"]`), okScript, 0o755)
	_, err := Load(nil, dir, "")
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "raw.json")+": /runtime/secret_resources/0: unknown secret resource") {
		t.Errorf("Load with a secrets.json name in secret_resources = %v; want a fault naming the file and pointer", err)
	}
	_, err = Load([]Tool{&fakeBuiltin{name: "acme.builtin", rt: Runtime{SecretResources: []string{"postgres"}}}}, "", "")
	if err == nil || !strings.Contains(err.Error(), `built-in acme.builtin: unknown secret resource "postgres"`) {
		t.Errorf("Load of a built-in naming postgres = %v; want refused", err)
	}
}

func TestUnboundKindFailsTheCallAndSaysWhy(t *testing.T) {
	ran := false
	reg, err := Load([]Tool{&fakeBuiltin{name: "acme.mail", rt: Runtime{SecretResources: []string{SecretLLM, SecretEmail}},
		run: func(context.Context, json.RawMessage, Env) (Result, error) {
			ran = true
			return Success("sent", nil), nil
		}}}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	call, err := reg.Prepare("acme.mail", json.RawMessage(`{"path":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	r := call.Run(context.Background(), Invocation{Workspace: t.TempDir(), Secrets: bound(map[string]string{SecretLLM: "sk-1"})})
	if ran || r.Status != StatusError || r.Error.Code != CodeSecretUnavailable {
		t.Fatalf("Run with email unbound = %+v (ran %v); want secret_unavailable before the tool runs", r, ran)
	}
	for _, w := range []string{"acme.mail", "email", "no email resource is bound"} {
		if !strings.Contains(r.Error.Message, w) {
			t.Errorf("error %q; want it to say %q", r.Error.Message, w)
		}
	}
	r = call.Run(context.Background(), Invocation{Workspace: t.TempDir()})
	if r.Error == nil || r.Error.Code != CodeSecretUnavailable {
		t.Errorf("Run with no resolver = %+v; want secret_unavailable", r)
	}
}

func TestToolNamingNoSecretIsNeverGivenOne(t *testing.T) {
	asked := 0
	var seen map[string]string
	reg, err := Load([]Tool{&fakeBuiltin{name: "acme.plain", run: func(_ context.Context, _ json.RawMessage, env Env) (Result, error) {
		seen = env.Secrets
		return Success("ok", nil), nil
	}}}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	call, _ := reg.Prepare("acme.plain", json.RawMessage(`{"path":"x"}`))
	r := call.Run(context.Background(), Invocation{Workspace: t.TempDir(), Secrets: func(string) (string, error) { asked++; return "v", nil }})
	if r.Status != StatusSuccess || seen != nil || asked != 0 {
		t.Errorf("Run = %v; the tool saw %v and the resolver was asked %d times; want nothing", r.Status, seen, asked)
	}
}

func TestExternalToolReceivesExactlyItsSecretsOnStdin(t *testing.T) {
	dir := t.TempDir()
	// The tool keeps its stdin in the workspace.
	script := "#!/bin/sh\ncat > stdin.json\necho '{\"summary\":\"ok\"}'\n"
	writeTool(t, dir, "git", manifest("acme.git", `"secret_resources": ["git_identity", "search:brave"]`), script, 0o755)
	writeTool(t, dir, "none", manifest("acme.none", ""), script, 0o755)
	reg, err := Load(nil, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	all := bound(map[string]string{SecretLLM: "sk-llm-value", SecretGitIdentity: "ghp-git-value",
		SecretNotion: "notion-value", "search:brave": "brave-value", "search:other": "other-value"})
	for _, tc := range []struct {
		tool string
		want map[string]string
	}{
		{"acme.git", map[string]string{"git_identity": "ghp-git-value", "search:brave": "brave-value"}},
		{"acme.none", nil},
	} {
		ws := t.TempDir()
		call, err := reg.Prepare(tc.tool, json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		if r := call.Run(context.Background(), Invocation{Workspace: ws, CallID: "c1", Secrets: all}); r.Status != StatusSuccess {
			t.Fatalf("%s: Run = %+v %+v", tc.tool, r, r.Error)
		}
		stdin, err := os.ReadFile(filepath.Join(ws, "stdin.json"))
		if err != nil {
			t.Fatal(err)
		}
		var env struct {
			Secrets map[string]string `json:"secrets"`
		}
		if err := json.Unmarshal(stdin, &env); err != nil {
			t.Fatalf("%s: stdin %s: %v", tc.tool, stdin, err)
		}
		if !reflect.DeepEqual(env.Secrets, tc.want) {
			t.Errorf("%s: stdin secrets = %v; want exactly %v", tc.tool, env.Secrets, tc.want)
		}
		for _, other := range []string{"sk-llm-value", "notion-value", "other-value"} {
			if strings.Contains(string(stdin), other) {
				t.Errorf("%s: stdin holds %q, a secret it does not name: %s", tc.tool, other, stdin)
			}
		}
	}
}
