package tool

import (
	"fmt"
	"regexp"
	"strings"
)

// The resource kinds a tool's secret_resources may name (design §6.4,
// §14.3). A manifest never names a secret of secrets.json: it names the kind
// of bound resource whose credential it needs, and the agent resolves the
// kind through the session's bindings to the secret bound to it now. The
// tool receives the value under the kind's name ({"secrets": {"notion":
// "..."}}), so one manifest works whatever the operator called the secret.
const (
	// SecretLLM is the API key of the model the session uses now (it
	// follows `model set`).
	SecretLLM = "llm"
	// SecretTTS is the key of the TTS provider of the session's voice
	// profile.
	SecretTTS = "tts"
	// SecretGitIdentity is the credential of the bound git identity.
	SecretGitIdentity = "git_identity"
	// SecretNotion is the key of the bound Notion integration.
	SecretNotion = "notion"
	// SecretEmail is the bound email account's "user:password".
	SecretEmail = "email"
	// SecretSearchPrefix begins search:<provider>, the key of a search
	// provider of config.json's search section (search:brave).
	SecretSearchPrefix = "search:"
)

// SecretKinds lists the fixed kinds; search:<provider> completes them.
var SecretKinds = []string{SecretLLM, SecretTTS, SecretGitIdentity, SecretNotion, SecretEmail}

// providerRE is config.json's syntax for names.
var providerRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,47}$`)

// secretKindHints maps likely mistakes to the kind meant.
var secretKindHints = map[string]string{
	"model": SecretLLM, "models": SecretLLM, "openai": SecretLLM, "openrouter": SecretLLM, "llm_key": SecretLLM,
	"voice": SecretTTS, "voice_profile": SecretTTS, "elevenlabs": SecretTTS,
	"git": SecretGitIdentity, "git-identity": SecretGitIdentity, "github": SecretGitIdentity, "git_token": SecretGitIdentity,
	"smtp": SecretEmail, "imap": SecretEmail, "email_account": SecretEmail,
	"notion_integration": SecretNotion, "search": SecretSearchPrefix + "<provider>", "brave": SecretSearchPrefix + "brave",
}

// secretKindProblem says what is wrong with one secret_resources entry, or
// "".
func secretKindProblem(kind string) string {
	for _, k := range SecretKinds {
		if kind == k {
			return ""
		}
	}
	if p, ok := strings.CutPrefix(kind, SecretSearchPrefix); ok {
		if providerRE.MatchString(p) {
			return ""
		}
		return fmt.Sprintf("%q: after %q give the name of a search provider of config.json (e.g. search:brave)", kind, SecretSearchPrefix)
	}
	msg := fmt.Sprintf("unknown secret resource %q: want one of %s or search:<provider>; "+
		"secret_resources names kinds of bound resources, not secrets.json names, and the agent "+
		"passes the secret bound to each in this session", kind, strings.Join(SecretKinds, ", "))
	if hint, ok := secretKindHints[strings.ToLower(kind)]; ok {
		msg += fmt.Sprintf(" (did you mean %q?)", hint)
	}
	return msg
}
