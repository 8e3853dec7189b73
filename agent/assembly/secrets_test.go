package assembly

import (
	"log/slog"
	"strings"
	"testing"

	"choir/agent/lane"
	"choir/agent/session"
	"choir/agent/tool"
	"choir/agent/tool/workspace"
	"choir/internal/config"
	"choir/internal/rpc"
)

// runtimeWith is a runtime whose session runs with the dynamic config d.
func runtimeWith(d config.Dynamic, b rpc.ResourceBindings) *Runtime {
	sess := session.New(nil, session.Identity{AgentID: "a", SessionID: "s"}, rpc.ImageInfo{}, 0, slog.New(slog.DiscardHandler))
	sess.Bindings = b
	return &Runtime{sess: sess, dyn: d, dynOK: true}
}

func TestSecretKindsResolveThroughTheBindings(t *testing.T) {
	full := config.Dynamic{
		LLM: "m", VoiceProfile: "v",
		Models:        map[string]config.Model{"m": {Secret: "llm-key"}, "local": {}},
		VoiceProfiles: map[string]config.VoiceProfile{"v": {TTS: "eleven"}},
		TTS:           map[string]config.TTS{"eleven": {Secret: "tts-key"}},
		Search:        map[string]config.Search{"brave": {Secret: "brave-key"}},
		GitIdentity:   &config.GitIdentity{Secret: "git-dev-token"},
		Notion:        &config.Notion{Secret: "notion-personal-key"},
		Email:         &config.EmailAccount{Secret: "email-primary-creds"},
	}
	rt := runtimeWith(full, rpc.ResourceBindings{LLM: "m", VoiceProfile: "v", GitIdentity: "dev", Notion: "wiki", Email: "primary"})
	for kind, want := range map[string]string{
		tool.SecretLLM: "llm-key", tool.SecretTTS: "tts-key", tool.SecretGitIdentity: "git-dev-token",
		tool.SecretNotion: "notion-personal-key", tool.SecretEmail: "email-primary-creds", "search:brave": "brave-key",
	} {
		if got, err := rt.secretName(kind); err != nil || got != want {
			t.Errorf("secretName(%s) = %q, %v; want %q", kind, got, err, want)
		}
	}
	// Bound, but choird granted nothing yet.
	if _, err := rt.secret(tool.SecretNotion); err == nil || !strings.Contains(err.Error(), `"notion-personal-key"`) {
		t.Errorf("secret(notion) without the value = %v; want an error naming the secret", err)
	}

	bare := runtimeWith(config.Dynamic{LLM: "local", Models: full.Models}, rpc.ResourceBindings{LLM: "local"})
	for kind, want := range map[string]string{
		tool.SecretLLM:         `the model "local" has no secret`,
		tool.SecretTTS:         "no voice profile is bound in this session",
		tool.SecretGitIdentity: "no git identity is bound in this session (set git_identity in the agent's defaults in config.json, or start it with --git-identity=NAME)",
		tool.SecretNotion:      "no Notion integration is bound",
		tool.SecretEmail:       "no email account is bound",
		"search:brave":         `no provider "brave"`,
		"postgres":             "not a secret resource kind",
	} {
		_, err := bare.secret(kind)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("secret(%s) with nothing bound = %v; want it to say %q", kind, err, want)
		}
	}
}

// choir.exec and every other built-in name no secret resource: Call.Run
// gives them nothing.
func TestBuiltinsAreGivenNoSecret(t *testing.T) {
	builtins := append(workspace.Tools(workspace.Options{NoRipgrep: true}), lane.Tools(nil)...)
	builtins = append(builtins, tool.ProposeTools(nil, func(string) bool { return false })...)
	sawExec := false
	for _, b := range builtins {
		sawExec = sawExec || b.Name() == "choir.exec"
		if s := b.Runtime().SecretResources; len(s) > 0 {
			t.Errorf("%s names secret resources %v; a built-in gets none", b.Name(), s)
		}
	}
	if !sawExec {
		t.Error("choir.exec is not among the built-ins")
	}
}
