// Package config is choir's static resource configuration: the typed model of
// .choir.d/config.json and .choir.d/secrets.json, their strict loading, and a
// validation that reports every problem at once with its JSON path and value.
//
// Every resource is named, and names are stable identifiers used everywhere
// else (commands, the gateway, Postgres schema and role names, Docker labels,
// file names), so they must match NamePattern. Secret values never live in
// config.json: a resource that needs one names an entry of secrets.json in its
// "secret" field.
//
// Loading is two passes. The first parses the raw JSON into a tree (catching
// syntax errors with line and column, and duplicate keys) and checks it against
// the Go types by reflection (catching unknown fields and wrong JSON types, all
// at once). Only a structurally sound file is decoded into Config, over the
// defaults. The second pass, Validate, checks meaning: references resolve,
// secrets exist, tunables are sane.
package config

// Config is config.json. Field order follows the design's example (§6.3).
type Config struct {
	GlobalRepo         Repo                    `json:"global_repo"`
	Workspaces         map[string]Workspace    `json:"workspaces"`
	Models             map[string]Model        `json:"models"`
	TTS                map[string]TTS          `json:"tts"`
	VoiceProfiles      map[string]VoiceProfile `json:"voice_profiles"`
	GitIdentities      map[string]GitIdentity  `json:"git_identities"`
	NotionIntegrations map[string]Notion       `json:"notion_integrations"`
	EmailAccounts      map[string]EmailAccount `json:"email_accounts"`
	Search             map[string]Search       `json:"search"`
	Embedding          *Embedding              `json:"embedding,omitempty"`
	Transcription      *Transcription          `json:"transcription,omitempty"`
	Gateways           map[string]Gateway      `json:"gateways"`
	DMs                map[string]DM           `json:"dms"`
	Postgres           Postgres                `json:"postgres"`
	Agents             map[string]Agent        `json:"agents"`
	// Metrics says where choird serves /metrics (metrics.go); nil means off.
	Metrics *Metrics `json:"metrics,omitempty"`
	// Spend is the installation's currency and caps (spend.go).
	Spend *Spend `json:"spend,omitempty"`
	// Headless is the operator's mood overrides for headless runs
	// (headless.go).
	Headless *Headless `json:"headless,omitempty"`
	// Runtime says where agents run (runtime.go); nil means the local
	// engine.
	Runtime *Runtime `json:"runtime,omitempty"`

	Tunables
}

// Repo is a git repository choird clones under .choir.d/repos/.
// URL may be a local path, file://, ssh (git@host:path) or https.
type Repo struct {
	URL string `json:"url"`
	Ref string `json:"ref,omitempty"`
}

// Workspace is a host directory leased to one agent at a time (§15.4).
type Workspace struct {
	Path string `json:"path"`
	// Node, with the swarm runtime, is the choir.node label of the Swarm
	// node that holds Path: an agent leasing the workspace runs there.
	Node string `json:"node,omitempty"`
}

// Model is a named OpenAI-compatible chat model (§21.2).
type Model struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Endpoint string `json:"endpoint"`
	// Temperature: absent means DefaultTemperature, null means "do not send"
	// (reasoning models reject it).
	Temperature Nullable[float64] `json:"temperature,omitzero"`
	// ReasoningEffort is passed as-is when set; absent or null is not sent.
	ReasoningEffort Nullable[string] `json:"reasoning_effort,omitzero"`
	// ContextWindow is the model's context size in tokens, used to decide
	// when working memory compacts. Absent means DefaultContextWindow.
	ContextWindow int `json:"context_window,omitempty"`
	// Secret names the API key in secrets.json; empty for keyless local servers.
	Secret string `json:"secret,omitempty"`
	// Fallback names the models tried in order when this one answers a
	// 5xx, times out, or is rate-limited again after §7.7's one retry;
	// one level deep (a fallback's own list is not followed). Empty: the
	// error ends the call as §7.7 says.
	Fallback []string `json:"fallback,omitempty"`
	// Request is the request template (§6.3): body fields and headers sent
	// with every call; nil sends none.
	Request *ModelRequest `json:"request,omitempty"`
	// Price per million tokens in spend.currency; nil counts tokens only.
	Price *Price `json:"price,omitempty"`
}

// TTS is a named text-to-speech provider (§21.3). v1 knows ElevenLabs only.
type TTS struct {
	Provider string `json:"provider"`
	ModelID  string `json:"model_id"`
	Endpoint string `json:"endpoint"`
	Secret   string `json:"secret"`
}

// VoiceProfile is a named voice on a TTS provider (§21.3).
type VoiceProfile struct {
	TTS           string        `json:"tts"`
	VoiceID       string        `json:"voice_id"`
	OutputFormat  string        `json:"output_format,omitempty"`
	VoiceSettings VoiceSettings `json:"voice_settings"`
}

// VoiceSettings are ElevenLabs' voice_settings.
type VoiceSettings struct {
	Stability       float64 `json:"stability"`
	SimilarityBoost float64 `json:"similarity_boost"`
	Style           float64 `json:"style"`
	UseSpeakerBoost bool    `json:"use_speaker_boost"`
	Speed           float64 `json:"speed"`
}

// GitIdentity is an author identity an agent leases exclusively (§14.4).
// Secret names its credential: an access token, or an SSH private key
// (PEM, "-----BEGIN ... PRIVATE KEY-----").
type GitIdentity struct {
	Name   string `json:"name"`
	Email  string `json:"email"`
	Secret string `json:"secret"`
	// Hosts are the only hosts the credential is given to ("github.com",
	// "git.example.com:8443"; without a port, any port of that host);
	// empty means DefaultGitHosts.
	Hosts []string `json:"hosts,omitempty"`
	// Username goes with a token over HTTPS; empty means
	// DefaultGitUsername, which GitHub accepts with any token.
	Username string `json:"username,omitempty"`
}

// The defaults of a git identity's hosts and HTTPS username.
var (
	DefaultGitHosts    = []string{"github.com"}
	DefaultGitUsername = "x-access-token"
)

// AllowedHosts is Hosts, or DefaultGitHosts when none is set.
func (g GitIdentity) AllowedHosts() []string {
	if len(g.Hosts) == 0 {
		return DefaultGitHosts
	}
	return g.Hosts
}

// HTTPSUsername is Username, or DefaultGitUsername.
func (g GitIdentity) HTTPSUsername() string {
	if g.Username == "" {
		return DefaultGitUsername
	}
	return g.Username
}

// Notion is a Notion integration, leased exclusively.
type Notion struct {
	// Endpoint is the Notion API base; absent means DefaultNotionAPI.
	Endpoint string `json:"endpoint,omitempty"`
	Secret   string `json:"secret"`
}

// EmailAccount is an SMTP+IMAP account; Sharing says whether it is leased.
type EmailAccount struct {
	SMTPHost string `json:"smtp_host"`
	SMTPPort int    `json:"smtp_port"`
	IMAPHost string `json:"imap_host"`
	IMAPPort int    `json:"imap_port"`
	Sharing  string `json:"sharing"`
	// Secret holds "user:password".
	Secret string `json:"secret"`
	// Address is the From address of sent mail; empty means the secret's
	// user name, which must then be an address.
	Address string `json:"address,omitempty"`
	// CAPEM is the PEM certificate of the CA that signed a self-hosted
	// server's certificate, trusted besides the container's system roots.
	// Certificates are always verified; there is no switch to skip it.
	CAPEM string `json:"ca_pem,omitempty"`
}

// Email sharing modes.
const (
	SharingExclusive = "exclusive"
	SharingShared    = "shared"
)

// Search is a web search provider (Brave in v1), keyed by provider name.
type Search struct {
	Endpoint string `json:"endpoint,omitempty"`
	Secret   string `json:"secret"`
}

// Embedding is the embedding model for memory (§11.9).
type Embedding struct {
	Provider   string `json:"provider"`
	Model      string `json:"model"`
	Dimensions int    `json:"dimensions"`
	Endpoint   string `json:"endpoint"`
	Secret     string `json:"secret,omitempty"`
}

// EmbeddingHashing is the embedding provider that needs no endpoint, key or
// model: choir's offline hashing embedder (not semantic; for tests, demos and
// installations without an embeddings endpoint).
const EmbeddingHashing = "hashing"

// Transcription is the speech-to-text endpoint that turns a Telegram voice
// note or audio file into the user's message (§19.5): an OpenAI-compatible
// POST <endpoint>/audio/transcriptions. choird calls it; no agent holds its
// key. Absent, voice notes arrive as files only.
type Transcription struct {
	// Endpoint is the API base with its version segment, as for models:
	// "https://api.openai.com/v1", "http://127.0.0.1:8080/v1".
	Endpoint string `json:"endpoint"`
	// Model is the transcription model id: whisper-1, gpt-4o-transcribe…
	Model string `json:"model"`
	// Secret names the API key in secrets.json; empty for a keyless local
	// server.
	Secret string `json:"secret,omitempty"`
	// Language, when set, is the ISO-639-1 code of what users speak ("en");
	// empty lets the model detect it.
	Language string `json:"language,omitempty"`
}

// Gateway is a Telegram bot instance (§19.1), or the console: the
// operator's DMs through `choirctl chat`, which need no bot.
type Gateway struct {
	Type string `json:"type"`
	// APIBase is the Bot API server; empty means DefaultTelegramAPI.
	APIBase string `json:"api_base,omitempty"`
	Secret  string `json:"secret"`
}

// Gateway types.
const (
	GatewayTelegram = "telegram"
	GatewayConsole  = "console"
)

// DM binds a Telegram user on one bot; the DMs of a bot are its allowlist.
// A DM on the console gateway is the operator's, through choirctl chat.
type DM struct {
	Gateway string `json:"gateway"`
	// UserID is the Telegram user id, as a decimal string (ids need 64
	// bits); a console DM has none.
	UserID string `json:"user_id,omitempty"`
	Admin  bool   `json:"admin"`
}

// Postgres is where choird keeps sessions, events and memory (§23).
type Postgres struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	Database string `json:"database"`
	SSLMode  string `json:"sslmode,omitempty"`
	PoolSize int    `json:"pool_size,omitempty"`
	// Namespace prefixes choird's schemas and roles: <namespace>_control and
	// <namespace>_<agent>. Default "choir", the names of the design; another
	// lets two installations (or tests) share one database.
	Namespace string `json:"namespace,omitempty"`
	// Secret holds "user:password" of the admin role.
	Secret string `json:"secret"`
}

// Agent is one agent definition: its repo and the resources it uses by default.
type Agent struct {
	Repo     Repo          `json:"repo"`
	Defaults AgentDefaults `json:"defaults"`
	// Restart is what choird does when a session of the agent crashes;
	// absent means off (see RestartPolicy).
	Restart RestartPolicy `json:"restart,omitzero"`
	// OutboxMax caps the agent's messages waiting for Telegram in its DM's
	// outbox; past it choir.dm.send is refused with what to do. 0 is the
	// gateway's default (1000).
	OutboxMax int `json:"outbox_max,omitempty"`
	// Spend is the agent's own caps (spend.go); nil means only the
	// installation's.
	Spend *Spend `json:"spend,omitempty"`
	// Schedules enqueue the agent's headless runs (headless.go).
	Schedules []Schedule `json:"schedules,omitempty"`
	// ModelProxy sends the agent's model calls through choird, which adds
	// the model's endpoint, key and request template headers: the model
	// keys never enter the agent's container (issue 25 item 1). It takes
	// effect when the agent next starts.
	ModelProxy bool `json:"model_proxy,omitempty"`
	// Network is how the agent reaches the network: open (§18.1, the
	// default) or only through choir.net.fetch's allowlist (network.go).
	Network Network `json:"network,omitzero"`
}

// MaxOutboxMax bounds agents.<id>.outbox_max: at Telegram's pace a day
// and a half of one chat's messages.
const MaxOutboxMax = 100000

// AgentDefaults names the resources an agent binds when started without
// overrides (§6.4). Workspace, LLM, git identity and DM are required; the
// others may be empty.
type AgentDefaults struct {
	Workspace string `json:"workspace"`
	LLM       string `json:"llm"`
	// CoreLLM is the model of the core jobs (design §7.1: the flagship);
	// empty means they use LLM, the edge's, whatever it is at each call.
	CoreLLM string `json:"core_llm,omitempty"`
	// SummaryLLM is the model of the session summary and of working-memory
	// compaction; empty means LLM, the edge's, whatever it is at each call.
	SummaryLLM   string `json:"summary_llm,omitempty"`
	VoiceProfile string `json:"voice_profile"`
	GitIdentity  string `json:"git_identity"`
	Notion       string `json:"notion"`
	Email        string `json:"email"`
	DM           string `json:"dm"`
}
