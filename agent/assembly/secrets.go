package assembly

import (
	"fmt"
	"strings"

	"choir/agent/tool"
)

// secret resolves a tool's secret resource kind (tool.SecretLLM, ...,
// search:<provider>) to the value of the secret bound to it in this session
// now: through the dynamic config, which names the secret of the current
// model, voice, search providers and of the session's own git identity,
// Notion integration and email account, then through the secrets choird
// granted. It is the arbiter's tool.SecretFunc.
func (rt *Runtime) secret(kind string) (string, error) {
	name, err := rt.secretName(kind)
	if err != nil {
		return "", err
	}
	v, ok := rt.sess.Secrets.Get(name)
	if !ok {
		return "", fmt.Errorf("choird has not granted its secret %q: check that secrets.json holds it, then run choirctl secret apply", name)
	}
	return v, nil
}

// secretName is the secrets.json name bound to kind, or why there is none.
func (rt *Runtime) secretName(kind string) (string, error) {
	d := rt.dynamic()
	b := rt.sess.Bindings
	unbound := func(what, flag string) error {
		return fmt.Errorf("no %s is bound in this session (set %s in the agent's defaults in config.json, or start it with --%s=NAME)", what, flag, strings.ReplaceAll(flag, "_", "-"))
	}
	keyless := func(what, name string) error {
		return fmt.Errorf("the %s %q has no secret in config.json", what, name)
	}
	switch kind {
	case tool.SecretLLM:
		m, ok := d.Models[d.LLM]
		switch {
		case !ok:
			return "", fmt.Errorf("the model %q is not in the config choird sent", d.LLM)
		case m.Secret == "":
			return "", keyless("model", d.LLM)
		}
		return m.Secret, nil
	case tool.SecretTTS:
		vp, ok := d.VoiceProfiles[d.VoiceProfile]
		if d.VoiceProfile == "" || !ok {
			return "", unbound("voice profile", "voice_profile")
		}
		t, ok := d.TTS[vp.TTS]
		switch {
		case !ok:
			return "", fmt.Errorf("the TTS provider %q of voice profile %q is not in the config choird sent", vp.TTS, d.VoiceProfile)
		case t.Secret == "":
			return "", keyless("TTS provider", vp.TTS)
		}
		return t.Secret, nil
	case tool.SecretGitIdentity:
		if d.GitIdentity == nil {
			return "", unbound("git identity", "git_identity")
		}
		if d.GitIdentity.Secret == "" {
			return "", keyless("git identity", b.GitIdentity)
		}
		return d.GitIdentity.Secret, nil
	case tool.SecretNotion:
		if d.Notion == nil {
			return "", unbound("Notion integration", "notion")
		}
		if d.Notion.Secret == "" {
			return "", keyless("Notion integration", b.Notion)
		}
		return d.Notion.Secret, nil
	case tool.SecretEmail:
		if d.Email == nil {
			return "", unbound("email account", "email")
		}
		if d.Email.Secret == "" {
			return "", keyless("email account", b.Email)
		}
		return d.Email.Secret, nil
	}
	if p, ok := strings.CutPrefix(kind, tool.SecretSearchPrefix); ok {
		s, ok := d.Search[p]
		switch {
		case !ok:
			return "", fmt.Errorf("config.json's search section has no provider %q", p)
		case s.Secret == "":
			return "", keyless("search provider", p)
		}
		return s.Secret, nil
	}
	return "", fmt.Errorf("%q is not a secret resource kind", kind)
}
