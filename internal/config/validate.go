package config

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"choir/internal/gitcred"
)

// NamePattern is what every resource and agent name must match: names become
// Postgres schema and role names (choir_<name>), Docker labels and file names.
var NamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,47}$`)

var (
	secretNameRE   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)
	namespaceRE    = regexp.MustCompile(`^[a-z][a-z0-9_]{0,29}$`)
	outputFormatRE = regexp.MustCompile(`^(mp3|opus|pcm|ulaw|alaw)_[0-9]+(_[0-9]+)?$`)
	sslModes       = []string{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}
)

// maxVectorDims is pgvector's limit for an HNSW-indexed vector column.
const maxVectorDims = 2000

// Validate checks what Parse cannot: names, references between resources,
// secrets named in secrets.json, value ranges and tunables. It reports every
// problem, sorted by path.
func Validate(c *Config, secrets Secrets) error {
	v := validator{c: c, secrets: secrets}
	v.names()
	v.repos()
	v.workspaces()
	v.models()
	v.voices()
	v.identities()
	v.email()
	v.searchAndEmbedding()
	v.transcription()
	v.gateways()
	v.postgres()
	v.agents()
	v.tunables()
	v.metrics()
	v.runtime() // runtime.go
	v.spend()
	v.headless()
	v.network() // network.go
	return v.ps.sorted().Err()
}

type validator struct {
	c       *Config
	secrets Secrets
	ps      Problems
}

func (v *validator) add(path, value, format string, args ...any) {
	v.ps.add(ConfigFile, path, value, format, args...)
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (v *validator) names() {
	c := v.c
	check := func(section string, names []string) {
		for _, n := range names {
			if !NamePattern.MatchString(n) {
				v.add(section, quote(n), "a name must be 1-48 characters of a-z, 0-9, '-' and '_', starting with a letter or digit (%s): it becomes a Postgres schema, a Docker label and a file name", NamePattern)
			}
		}
	}
	check("workspaces", sortedKeys(c.Workspaces))
	check("models", sortedKeys(c.Models))
	check("tts", sortedKeys(c.TTS))
	check("voice_profiles", sortedKeys(c.VoiceProfiles))
	check("git_identities", sortedKeys(c.GitIdentities))
	check("notion_integrations", sortedKeys(c.NotionIntegrations))
	check("email_accounts", sortedKeys(c.EmailAccounts))
	check("search", sortedKeys(c.Search))
	check("gateways", sortedKeys(c.Gateways))
	check("dms", sortedKeys(c.DMs))
	check("agents", sortedKeys(c.Agents))
	// Agent names map to SQL identifiers with '-' → '_'; two must not meet.
	seen := map[string]string{}
	for _, n := range sortedKeys(c.Agents) {
		sql := SchemaName(n)
		if other, ok := seen[sql]; ok {
			v.add("agents."+n, "", "agents %q and %q would share the Postgres schema %s; rename one", other, n, sql)
		}
		seen[sql] = n
	}
}

// SchemaName is the Postgres schema and role of an agent (§23.0) in the
// default namespace.
func SchemaName(agent string) string {
	return DefaultNamespace + "_" + strings.ReplaceAll(agent, "-", "_")
}

// SplitCredentials splits a "user:password" secret value.
func SplitCredentials(value string) (user, password string) {
	user, password, _ = strings.Cut(value, ":")
	return user, password
}

func (v *validator) secret(path, name string, required bool) {
	if name == "" {
		if required {
			v.add(path, `""`, "a secret name is required: name an entry of secrets.json (set it with `choirctl secret set <name>`)")
		}
		return
	}
	if _, ok := v.secrets[name]; !ok {
		v.add(path, quote(name), "no secret named %q in secrets.json: run `choirctl secret set %s`", name, name)
	}
}

// ref checks a reference to a named resource of the given kind (singular).
func (v *validator) ref(path, name, kind string, have []string, required bool) {
	if name == "" {
		if required {
			v.add(path, `""`, "required: name a %s (have: %s)", kind, list(have))
		}
		return
	}
	if !slices.Contains(have, name) {
		v.add(path, quote(name), "no %s named %q (have: %s)", kind, name, list(have))
	}
}

func list(names []string) string {
	if len(names) == 0 {
		return "none configured"
	}
	return strings.Join(names, ", ")
}

func (v *validator) url(path, raw string, required bool) {
	if raw == "" {
		if required {
			v.add(path, `""`, "required: an http:// or https:// URL")
		}
		return
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.add(path, quote(raw), "want an absolute http:// or https:// URL")
	}
}

func (v *validator) nonEmpty(path, s, what string) {
	if strings.TrimSpace(s) == "" {
		v.add(path, quote(s), "required: %s", what)
	}
}

func (v *validator) port(path string, p int) {
	if p < 1 || p > 65535 {
		v.add(path, strconv.Itoa(p), "want a TCP port between 1 and 65535")
	}
}

func (v *validator) between(path string, x, lo, hi float64) {
	if x < lo || x > hi {
		v.add(path, strconv.FormatFloat(x, 'g', -1, 64), "want a number between %g and %g", lo, hi)
	}
}

func (v *validator) atLeast(path string, x, lo int, why string) {
	if x < lo {
		v.add(path, strconv.Itoa(x), "want at least %d%s", lo, why)
	}
}

func (v *validator) repos() {
	if len(v.c.Agents) > 0 && v.c.GlobalRepo.URL == "" {
		v.add("global_repo.url", `""`, "required once agents are defined: the git URL or local path of the global repo (tools, skills, identity, Dockerfile.base)")
	}
}

// workspaces checks each workspace's path as text and that no two
// overlap (found by sorting, see overlaps), reporting an overlap on the
// workspace later in name order, once for each earlier one it overlaps.
func (v *validator) workspaces() {
	names := sortedKeys(v.c.Workspaces)
	var paths []string // of the workspaces whose path passes, in name order
	var of []string    // their names
	for _, name := range names {
		if p := v.c.Workspaces[name].Path; workspacePathProblem(p) == "" {
			paths, of = append(paths, p), append(of, name)
		}
	}
	pairs := overlaps(paths)
	k := 0 // index in paths of the next accepted workspace
	for _, name := range names {
		p := v.c.Workspaces[name].Path
		path := "workspaces." + name + ".path"
		if msg := workspacePathProblem(p); msg != "" {
			v.add(path, quote(p), "%s", msg)
			continue
		}
		for len(pairs) > 0 && pairs[0][1] == k {
			o := pairs[0][0]
			v.add(path, quote(p), "%s", overlapProblem(p, paths[o], of[o]))
			pairs = pairs[1:]
		}
		k++
	}
}

func (v *validator) models() {
	for _, name := range sortedKeys(v.c.Models) {
		m, p := v.c.Models[name], "models."+name
		v.nonEmpty(p+".provider", m.Provider, "a provider label such as openrouter, openai, vllm or ollama")
		v.nonEmpty(p+".model", m.Model, "the model id the endpoint expects")
		v.url(p+".endpoint", m.Endpoint, true)
		if t, ok := m.Temperature.Get(); ok {
			v.between(p+".temperature", t, 0, 2)
		}
		if e, ok := m.ReasoningEffort.Get(); ok && strings.TrimSpace(e) == "" {
			v.add(p+".reasoning_effort", `""`, "use null to send no reasoning effort, or a level such as low, medium or high")
		}
		v.atLeast(p+".context_window", m.ContextWindow, 1024, " tokens")
		v.secret(p+".secret", m.Secret, false)
		v.modelExtras(name, m)
	}
	for _, name := range sortedKeys(v.c.TTS) {
		t, p := v.c.TTS[name], "tts."+name
		if t.Provider != "elevenlabs" {
			v.add(p+".provider", quote(t.Provider), "v1 supports only \"elevenlabs\"")
		}
		v.nonEmpty(p+".model_id", t.ModelID, "the ElevenLabs model id, e.g. eleven_multilingual_v2")
		v.url(p+".endpoint", t.Endpoint, true)
		v.secret(p+".secret", t.Secret, true)
	}
}

func (v *validator) voices() {
	tts := sortedKeys(v.c.TTS)
	for _, name := range sortedKeys(v.c.VoiceProfiles) {
		vp, p := v.c.VoiceProfiles[name], "voice_profiles."+name
		v.ref(p+".tts", vp.TTS, "tts provider", tts, true)
		v.nonEmpty(p+".voice_id", vp.VoiceID, "the ElevenLabs voice id")
		if !outputFormatRE.MatchString(vp.OutputFormat) {
			v.add(p+".output_format", quote(vp.OutputFormat), "want an ElevenLabs output format such as mp3_44100_128 or opus_48000_128")
		}
		s := vp.VoiceSettings
		v.between(p+".voice_settings.stability", s.Stability, 0, 1)
		v.between(p+".voice_settings.similarity_boost", s.SimilarityBoost, 0, 1)
		v.between(p+".voice_settings.style", s.Style, 0, 1)
		v.between(p+".voice_settings.speed", s.Speed, 0.5, 2)
	}
}

func (v *validator) identities() {
	for _, name := range sortedKeys(v.c.GitIdentities) {
		g, p := v.c.GitIdentities[name], "git_identities."+name
		v.nonEmpty(p+".name", g.Name, "the commit author name")
		if a, err := mail.ParseAddress(g.Email); err != nil || a.Address != g.Email {
			v.add(p+".email", quote(g.Email), "want a plain email address such as dev@example.com")
		}
		v.secret(p+".secret", g.Secret, true)
		if strings.ContainsFunc(g.Name, unicode.IsControl) {
			v.add(p+".name", quote(g.Name), "a control character (newline, tab, ...) in the author name: write it on one line")
		}
		for i, h := range g.Hosts {
			if _, err := gitcred.ParseHost(h); err != nil {
				v.add(fmt.Sprintf("%s.hosts[%d]", p, i), quote(h), "%v", err)
			}
		}
		if g.Username != "" && (strings.ContainsFunc(g.Username, unicode.IsControl) || strings.Contains(g.Username, ":")) {
			v.add(p+".username", quote(g.Username), "want the account name the token belongs to, without ':' or control characters (or leave it out for %q)", DefaultGitUsername)
		}
	}
	for _, name := range sortedKeys(v.c.NotionIntegrations) {
		v.url("notion_integrations."+name+".endpoint", v.c.NotionIntegrations[name].Endpoint, false)
		v.secret("notion_integrations."+name+".secret", v.c.NotionIntegrations[name].Secret, true)
	}
}

func (v *validator) email() {
	for _, name := range sortedKeys(v.c.EmailAccounts) {
		e, p := v.c.EmailAccounts[name], "email_accounts."+name
		v.nonEmpty(p+".smtp_host", e.SMTPHost, "the SMTP server host")
		v.port(p+".smtp_port", e.SMTPPort)
		v.nonEmpty(p+".imap_host", e.IMAPHost, "the IMAP server host")
		v.port(p+".imap_port", e.IMAPPort)
		if e.Sharing != SharingExclusive && e.Sharing != SharingShared {
			v.add(p+".sharing", quote(e.Sharing), "want \"exclusive\" (leased to one agent) or \"shared\"")
		}
		v.secret(p+".secret", e.Secret, true)
		if e.Address != "" {
			if a, err := mail.ParseAddress(e.Address); err != nil || a.Address != e.Address {
				v.add(p+".address", quote(e.Address), "want a plain email address such as agent@example.com")
			}
		}
		if e.CAPEM != "" {
			if _, err := ParseCAPEM(e.CAPEM); err != nil {
				v.add(p+".ca_pem", "(PEM)", "%v", err)
			}
		}
	}
}

// ParseCAPEM reads an email account's ca_pem: one or more PEM
// CERTIFICATE blocks and nothing else.
func ParseCAPEM(s string) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	rest := []byte(s)
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("a PEM %q block; give only the CA's certificate (BEGIN CERTIFICATE), never a key", b.Type)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d does not parse: %v", len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	if strings.TrimSpace(string(rest)) != "" || len(certs) == 0 {
		return nil, fmt.Errorf("want one or more PEM certificates (-----BEGIN CERTIFICATE-----, newlines written as \\n in JSON); " +
			"put the CA file in with e.g. jq --rawfile ca ca.pem '.email_accounts.NAME.ca_pem = $ca'")
	}
	return certs, nil
}

func (v *validator) searchAndEmbedding() {
	for _, name := range sortedKeys(v.c.Search) {
		s, p := v.c.Search[name], "search."+name
		v.url(p+".endpoint", s.Endpoint, false)
		v.secret(p+".secret", s.Secret, true)
	}
	if e := v.c.Embedding; e != nil {
		v.nonEmpty("embedding.provider", e.Provider, "a provider label such as openrouter, or \""+EmbeddingHashing+"\" for the offline embedder")
		if e.Dimensions < 1 || e.Dimensions > maxVectorDims {
			v.add("embedding.dimensions", strconv.Itoa(e.Dimensions), "want 1 to %d (pgvector indexes at most %d dimensions with HNSW)", maxVectorDims, maxVectorDims)
		}
		if e.Provider == EmbeddingHashing { // offline: model, endpoint and secret unused
			v.secret("embedding.secret", e.Secret, false)
			return
		}
		v.nonEmpty("embedding.model", e.Model, "the embedding model id, e.g. text-embedding-3-small")
		v.url("embedding.endpoint", e.Endpoint, true)
		v.secret("embedding.secret", e.Secret, false)
	}
}

var languageRE = regexp.MustCompile(`^[a-z]{2}$`)

func (v *validator) transcription() {
	t := v.c.Transcription
	if t == nil {
		return
	}
	v.url("transcription.endpoint", t.Endpoint, true)
	v.nonEmpty("transcription.model", t.Model, "the transcription model id, e.g. whisper-1 or gpt-4o-transcribe")
	v.secret("transcription.secret", t.Secret, false)
	if t.Language != "" && !languageRE.MatchString(t.Language) {
		v.add("transcription.language", quote(t.Language), "want an ISO-639-1 code of two lower-case letters, e.g. \"en\", or leave it out to let the model detect the language")
	}
}

func (v *validator) gateways() {
	for _, name := range sortedKeys(v.c.Gateways) {
		g, p := v.c.Gateways[name], "gateways."+name
		switch g.Type {
		case GatewayTelegram:
			v.url(p+".api_base", g.APIBase, false)
			v.secret(p+".secret", g.Secret, true)
		case GatewayConsole:
			if g.Secret != "" {
				v.add(p+".secret", quote(g.Secret), "a console gateway has no bot and takes no secret: remove it")
			}
		default:
			v.add(p+".type", quote(g.Type), "want \"telegram\" (a bot) or \"console\" (choirctl chat)")
		}
	}
	gws := sortedKeys(v.c.Gateways)
	seen := map[string]string{}
	for _, name := range sortedKeys(v.c.DMs) {
		d, p := v.c.DMs[name], "dms."+name
		v.ref(p+".gateway", d.Gateway, "gateway", gws, true)
		if v.c.Gateways[d.Gateway].Type == GatewayConsole {
			continue
		}
		id, err := strconv.ParseInt(d.UserID, 10, 64)
		if err != nil || id <= 0 {
			v.add(p+".user_id", quote(d.UserID), "want the Telegram user id as a decimal string, e.g. \"123456789\"")
			continue
		}
		key := d.Gateway + "/" + d.UserID
		if other, ok := seen[key]; ok {
			v.add(p, "", "DM %q already binds user %s on gateway %q; a user has one DM per bot", other, d.UserID, d.Gateway)
		}
		seen[key] = name
	}
}

func (v *validator) postgres() {
	pg := v.c.Postgres
	v.nonEmpty("postgres.host", pg.Host, "the Postgres host (with pgvector installed)")
	v.port("postgres.port", pg.Port)
	v.nonEmpty("postgres.database", pg.Database, "the database name (create it first; choird creates the schemas)")
	if !slices.Contains(sslModes, pg.SSLMode) {
		v.add("postgres.sslmode", quote(pg.SSLMode), "want one of %s", strings.Join(sslModes, ", "))
	}
	v.atLeast("postgres.pool_size", pg.PoolSize, 1, " connection")
	if !namespaceRE.MatchString(pg.Namespace) {
		v.add("postgres.namespace", quote(pg.Namespace), "want 1-30 characters of a-z, 0-9 and '_', starting with a letter")
	}
	v.secret("postgres.secret", pg.Secret, true)
	if s, ok := v.secrets[pg.Secret]; ok && pg.Secret != "" && !strings.Contains(s, ":") {
		v.add("postgres.secret", quote(pg.Secret), "the secret's value must be \"user:password\" (value not shown)")
	}
}

func (v *validator) agents() {
	c := v.c
	ws, models, voices := sortedKeys(c.Workspaces), sortedKeys(c.Models), sortedKeys(c.VoiceProfiles)
	ids, notion, email, dms := sortedKeys(c.GitIdentities), sortedKeys(c.NotionIntegrations), sortedKeys(c.EmailAccounts), sortedKeys(c.DMs)
	for _, name := range sortedKeys(c.Agents) {
		a, p := c.Agents[name], "agents."+name+".defaults"
		d := a.Defaults
		v.ref(p+".workspace", d.Workspace, "workspace", ws, true)
		v.ref(p+".llm", d.LLM, "model", models, true)
		v.ref(p+".core_llm", d.CoreLLM, "model", models, false)
		v.ref(p+".summary_llm", d.SummaryLLM, "model", models, false)
		v.ref(p+".voice_profile", d.VoiceProfile, "voice profile", voices, false)
		v.ref(p+".git_identity", d.GitIdentity, "git identity", ids, true)
		v.ref(p+".notion", d.Notion, "notion integration", notion, false)
		v.ref(p+".email", d.Email, "email account", email, false)
		v.ref(p+".dm", d.DM, "dm", dms, true)
		v.restart("agents."+name+".restart", a.Restart)
		if a.OutboxMax < 0 || a.OutboxMax > MaxOutboxMax {
			v.add("agents."+name+".outbox_max", strconv.Itoa(a.OutboxMax), "want a number of messages between 0 (the default, 1000) and %d", MaxOutboxMax)
		}
	}
}

func (v *validator) tunables() {
	t := v.c.Tunables
	v.atLeast("heartbeat_interval_ms", t.HeartbeatIntervalMS, 100, " ms")
	if t.CrashDetectionThresholdMS < 2*t.HeartbeatIntervalMS {
		v.add("crash_detection_threshold_ms", strconv.Itoa(t.CrashDetectionThresholdMS),
			"must be at least 2 × heartbeat_interval_ms (%d) to avoid false crash detections", 2*t.HeartbeatIntervalMS)
	}
	v.atLeast("rate_limit_retry_ms", t.RateLimitRetryMS, 0, " ms")
	v.atLeast("log_archive_threshold_lines", t.LogArchiveThresholdLines, 100, " lines")
	if t.LogRetentionDays < 0 || t.LogRetentionDays > MaxLogRetentionDays {
		v.add("log_retention_days", strconv.Itoa(t.LogRetentionDays),
			"want days to keep archived logs between 0 and %d (0 keeps them whatever their age; the default is %d)", MaxLogRetentionDays, DefaultLogRetentionDays)
	}
	if t.LogRetentionMB < 0 || t.LogRetentionMB > MaxLogRetentionMB {
		v.add("log_retention_mb", strconv.Itoa(t.LogRetentionMB),
			"want the most MiB that logs/archive/ may hold, between 0 and %d (0 sets no size limit; the default is %d)", MaxLogRetentionMB, DefaultLogRetentionMB)
	}
	v.atLeast("approval_timeout_ms", t.ApprovalTimeoutMS, 1000, " ms")
	if t.MidTermSessions < 1 || t.MidTermSessions > 1000 {
		v.add("mid_term_sessions", strconv.Itoa(t.MidTermSessions),
			"want 1 to 1000: how many recent sessions stay in mid-term memory before the oldest is promoted to long-term (the default is %d)", DefaultTunables().MidTermSessions)
	}
	v.atLeast("event_window", t.EventWindow, 1, " event")
	if t.SessionSummaryTimeoutMS < 1000 || t.SessionSummaryTimeoutMS > 45000 {
		v.add("session_summary_timeout_ms", strconv.Itoa(t.SessionSummaryTimeoutMS),
			"want 1000 to 45000 ms: an agent stop waits this long for the summary plus 15 s, and choird's own shutdown gives each agent 60 s (the default is %d)", DefaultTunables().SessionSummaryTimeoutMS)
	}
	v.atLeast("snapshot_every_revs", t.SnapshotEveryRevs, 1, " revision")
	v.atLeast("snapshot_interval_ms", t.SnapshotIntervalMS, 1000, " ms")
	if t.CompactionThresholdPercent < 1 || t.CompactionThresholdPercent > 100 {
		v.add("compaction_threshold_percent", strconv.Itoa(t.CompactionThresholdPercent), "want a percentage between 1 and 100")
	}
	if t.Container.CPUs <= 0 || t.Container.CPUs > 1024 {
		v.add("container.cpus", strconv.FormatFloat(t.Container.CPUs, 'g', -1, 64), "want a number of CPUs above 0, e.g. 2 or 0.5")
	}
	v.atLeast("container.memory_mb", t.Container.MemoryMB, 64, " MiB")
	v.atLeast("container.pids", t.Container.Pids, 32, " processes")
	if lb := t.LoopBreaker; lb.Repeats < 2 || lb.Repeats > 100 {
		v.add("loop_breaker.repeats", strconv.Itoa(lb.Repeats),
			"want 2 to 100: how many identical (or unusable) tool calls in a row the loop breaker lets a lane make before it refuses one (the default is %d)", DefaultTunables().LoopBreaker.Repeats)
	}
	if lb := t.LoopBreaker; lb.StaleSteps < 2 || lb.StaleSteps > 1000 {
		v.add("loop_breaker.stale_steps", strconv.Itoa(lb.StaleSteps),
			"want 2 to 1000: how many model steps in a row without a new tool result the loop breaker allows (the default is %d)", DefaultTunables().LoopBreaker.StaleSteps)
	}
	b := t.Budgets
	for _, f := range []struct {
		name string
		val  int
		min  int
	}{
		{"max_core_jobs", b.MaxCoreJobs, 1},
		{"total_session_tokens", b.TotalSessionTokens, 1},
		{"max_tool_calls_per_session", b.MaxToolCallsPerSession, 1},
		{"per_job_max_steps", b.PerJobMaxSteps, 1},
		{"per_job_max_tool_calls", b.PerJobMaxToolCalls, 1},
		{"per_job_wall_time_ms", b.PerJobWallTimeMS, 1000},
		{"per_job_max_injections", b.PerJobMaxInjections, 0},
		{"per_step_skill_retries", b.PerStepSkillRetries, 0},
		{"tool_call_timeout_ms", b.ToolCallTimeoutMS, 100},
		{"llm_call_timeout_ms", b.LLMCallTimeoutMS, 100},
	} {
		v.atLeast("budgets."+f.name, f.val, f.min, "")
	}
	// agent/skill's MaxRetryBudget.
	if b.PerStepSkillRetries > 100 {
		v.add("budgets.per_step_skill_retries", strconv.Itoa(b.PerStepSkillRetries), "want at most 100 invalid proposals in a row")
	}
}

// Counts summarises the loaded resources for status and the ready log line.
func (c *Config) Counts() map[string]int {
	return map[string]int{
		"agents": len(c.Agents), "workspaces": len(c.Workspaces), "models": len(c.Models),
		"tts": len(c.TTS), "voice_profiles": len(c.VoiceProfiles), "git_identities": len(c.GitIdentities),
		"notion_integrations": len(c.NotionIntegrations), "email_accounts": len(c.EmailAccounts),
		"search": len(c.Search), "gateways": len(c.Gateways), "dms": len(c.DMs),
	}
}

// String keeps fmt from printing a config wholesale by accident in logs.
func (s Secrets) String() string { return fmt.Sprintf("secrets(%d names)", len(s)) }

// Names lists the secret names, sorted; values stay where they are.
func (s Secrets) Names() []string { return sortedKeys(s) }

// GoString keeps %#v from printing secret values.
func (s Secrets) GoString() string { return s.String() }

// LogValue keeps slog from printing secret values.
func (s Secrets) LogValue() slog.Value { return slog.StringValue(s.String()) }
