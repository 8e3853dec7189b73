package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readExample(t testing.TB) ([]byte, Secrets) {
	t.Helper()
	data, err := os.ReadFile("testdata/example.json")
	if err != nil {
		t.Fatal(err)
	}
	sdata, err := os.ReadFile("testdata/example-secrets.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSecrets(sdata)
	if err != nil {
		t.Fatalf("ParseSecrets(example) = %v", err)
	}
	return data, s
}

func TestExampleConfigIsValid(t *testing.T) {
	data, secrets := readExample(t)
	c, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse(example) = %v", err)
	}
	if err := Validate(c, secrets); err != nil {
		t.Fatalf("Validate(example) = %v", err)
	}
	if got := c.HeartbeatIntervalMS; got != 5000 {
		t.Errorf("heartbeat_interval_ms = %d; want 5000", got)
	}
	if got := c.ApprovalTimeoutMS; got != 30*60*1000 {
		t.Errorf("approval_timeout_ms default = %d; want 30 min", got)
	}
	if got := c.Postgres.SSLMode; got != "prefer" {
		t.Errorf("postgres.sslmode default = %q; want prefer", got)
	}
	if temp, ok := c.Models["o3"].EffectiveTemperature(); ok {
		t.Errorf("o3 temperature = %v, sent; want not sent (null)", temp)
	}
	if temp, ok := c.Models["sonnet"].EffectiveTemperature(); !ok || temp != 0.7 {
		t.Errorf("sonnet temperature = %v, %v; want 0.7, sent", temp, ok)
	}
	if e, ok := c.Models["o3"].ReasoningEffort.Get(); !ok || e != "medium" {
		t.Errorf("o3 reasoning_effort = %q, %v; want medium", e, ok)
	}
	if _, ok := c.Models["sonnet"].ReasoningEffort.Get(); ok {
		t.Errorf("sonnet reasoning_effort is set; want null")
	}
	// The issue 23 sections: prices and caps, fallback, request
	// templates, model roles, the loop breaker.
	o3, a1 := c.Models["o3"], c.Agents["agent-1"]
	if o3.Price == nil || o3.Price.Output != 8 || len(o3.Fallback) != 2 || o3.Request == nil || o3.Request.Headers["X-Gateway-Key"].Secret != "gateway-key" {
		t.Errorf("models.o3 = %+v; want its price, fallback and request template", o3)
	}
	if c.Spend == nil || c.Spend.PerDay == nil || *c.Spend.PerDay != 20 || a1.Spend == nil || a1.Spend.PerDayTokens == nil {
		t.Errorf("spend = %+v, agents.agent-1.spend = %+v; want both read", c.Spend, a1.Spend)
	}
	if a1.Defaults.CoreLLM != "o3" || a1.Defaults.SummaryLLM != "gpt4o" || c.LoopBreaker != (LoopBreaker{Repeats: 3, StaleSteps: 6}) {
		t.Errorf("core_llm %q, summary_llm %q, loop_breaker %+v; want o3, gpt4o, 3/6", a1.Defaults.CoreLLM, a1.Defaults.SummaryLLM, c.LoopBreaker)
	}
}

func TestDefaultsWhenOmitted(t *testing.T) {
	c, err := Parse([]byte(`{"models":{"m":{"provider":"p","model":"x","endpoint":"http://localhost:1/v1"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultTunables()
	if c.Tunables != want {
		t.Errorf("tunables = %+v; want defaults %+v", c.Tunables, want)
	}
	if temp, ok := c.Models["m"].EffectiveTemperature(); !ok || temp != DefaultTemperature {
		t.Errorf("absent temperature = %v, %v; want default %v, sent", temp, ok, DefaultTemperature)
	}
	if got := c.Models["m"].ContextWindow; got != DefaultContextWindow {
		t.Errorf("context_window = %d; want %d", got, DefaultContextWindow)
	}
}

// mutate applies f to the example config decoded as generic JSON.
func mutate(t *testing.T, data []byte, f func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func obj(m map[string]any, path ...string) map[string]any {
	for _, p := range path {
		m = m[p].(map[string]any)
	}
	return m
}

func TestBrokenConfigs(t *testing.T) {
	example, secrets := readExample(t)
	tests := []struct {
		name     string
		mutate   func(m map[string]any)
		path     string // the JSON path the problem must name
		contains string // a distinctive part of the message
	}{
		{"unknown top-level field", func(m map[string]any) { m["heartbeat_interval"] = 5 }, "heartbeat_interval", `did you mean "heartbeat_interval_ms"`},
		{"unknown nested field", func(m map[string]any) { obj(m, "models", "o3")["temprature"] = 1 }, "models.o3.temprature", `did you mean "temperature"`},
		{"wrong type", func(m map[string]any) { obj(m, "postgres")["port"] = "5432" }, "postgres.port", "want a whole number, got a string"},
		{"fractional int", func(m map[string]any) { m["heartbeat_interval_ms"] = 5000.5 }, "heartbeat_interval_ms", "want a whole number"},
		{"null for a string", func(m map[string]any) { obj(m, "workspaces", "main-ws")["path"] = nil }, "workspaces.main-ws.path", "want a string, got null"},
		{"agent default workspace unknown", func(m map[string]any) { obj(m, "agents", "agent-1", "defaults")["workspace"] = "nope" }, "agents.agent-1.defaults.workspace", `no workspace named "nope" (have: main-ws, scratch)`},
		{"agent default llm unknown", func(m map[string]any) { obj(m, "agents", "agent-1", "defaults")["llm"] = "gpt5" }, "agents.agent-1.defaults.llm", `no model named "gpt5"`},
		{"agent default llm empty", func(m map[string]any) { obj(m, "agents", "agent-1", "defaults")["llm"] = "" }, "agents.agent-1.defaults.llm", "required: name a model"},
		{"agent voice profile unknown", func(m map[string]any) { obj(m, "agents", "agent-1", "defaults")["voice_profile"] = "x" }, "agents.agent-1.defaults.voice_profile", `no voice profile named "x"`},
		{"agent git identity unknown", func(m map[string]any) { obj(m, "agents", "agent-1", "defaults")["git_identity"] = "x" }, "agents.agent-1.defaults.git_identity", `no git identity named "x"`},
		{"agent notion unknown", func(m map[string]any) { obj(m, "agents", "agent-1", "defaults")["notion"] = "x" }, "agents.agent-1.defaults.notion", `no notion integration named "x"`},
		{"agent email unknown", func(m map[string]any) { obj(m, "agents", "agent-1", "defaults")["email"] = "x" }, "agents.agent-1.defaults.email", `no email account named "x"`},
		{"agent dm unknown", func(m map[string]any) { obj(m, "agents", "agent-1", "defaults")["dm"] = "x" }, "agents.agent-1.defaults.dm", `no dm named "x"`},
		{"dm gateway unknown", func(m map[string]any) { obj(m, "dms", "user-dm")["gateway"] = "bot-x" }, "dms.user-dm.gateway", `no gateway named "bot-x"`},
		{"dm user id not a number", func(m map[string]any) { obj(m, "dms", "user-dm")["user_id"] = "@bob" }, "dms.user-dm.user_id", "Telegram user id as a decimal string"},
		{"dm duplicate user on a bot", func(m map[string]any) { obj(m, "dms", "user-dm")["user_id"] = "123456789" }, "dms.user-dm", `already binds user 123456789 on gateway "bot-main"`},
		{"voice profile tts unknown", func(m map[string]any) { obj(m, "voice_profiles", "narrator")["tts"] = "polly" }, "voice_profiles.narrator.tts", `no tts provider named "polly"`},
		{"notion endpoint not a URL", func(m map[string]any) { obj(m, "notion_integrations", "work-wiki")["endpoint"] = "api.notion.com/v1" }, "notion_integrations.work-wiki.endpoint", "absolute http:// or https:// URL"},
		{"voice speed out of range", func(m map[string]any) { obj(m, "voice_profiles", "narrator", "voice_settings")["speed"] = 3 }, "voice_profiles.narrator.voice_settings.speed", "between 0.5 and 2"},
		{"secret missing", func(m map[string]any) { obj(m, "models", "o3")["secret"] = "other-key" }, "models.o3.secret", "choirctl secret set other-key"},
		{"gateway without secret", func(m map[string]any) { delete(obj(m, "gateways", "bot-work"), "secret") }, "gateways.bot-work.secret", "a secret name is required"},
		{"crash threshold too small", func(m map[string]any) { m["crash_detection_threshold_ms"] = 9000 }, "crash_detection_threshold_ms", "at least 2 × heartbeat_interval_ms (10000)"},
		{"bad agent name", func(m map[string]any) { obj(m, "agents")["Agent One"] = obj(m, "agents", "agent-1") }, "agents", "a name must be 1-48 characters"},
		{"agents sharing a schema", func(m map[string]any) { obj(m, "agents")["agent_1"] = obj(m, "agents", "agent-1") }, "agents.agent_1", "would share the Postgres schema choir_agent_1"},
		{"relative workspace path", func(m map[string]any) { obj(m, "workspaces", "scratch")["path"] = "work/scratch" }, "workspaces.scratch.path", "want an absolute path"},
		{"two workspaces one directory", func(m map[string]any) { obj(m, "workspaces", "scratch")["path"] = "/var/lib/choir/workspaces/main" }, "workspaces.scratch.path", `workspace "main-ws" already uses this directory`},
		{"workspace path with a trailing slash", func(m map[string]any) { obj(m, "workspaces", "scratch")["path"] = "/var/lib/choir/scratch/" }, "workspaces.scratch.path", `not in canonical form: write it as "/var/lib/choir/scratch"`},
		{"email sharing mode", func(m map[string]any) { obj(m, "email_accounts", "notifications")["sharing"] = "public" }, "email_accounts.notifications.sharing", `want "exclusive"`},
		{"email port", func(m map[string]any) { obj(m, "email_accounts", "notifications")["imap_port"] = 70000 }, "email_accounts.notifications.imap_port", "between 1 and 65535"},
		{"email address", func(m map[string]any) { obj(m, "email_accounts", "notifications")["address"] = "Ops <ops@x.org>" }, "email_accounts.notifications.address", "plain email address"},
		{"email ca_pem not PEM", func(m map[string]any) { obj(m, "email_accounts", "notifications")["ca_pem"] = "/etc/ssl/ca.pem" }, "email_accounts.notifications.ca_pem", "jq --rawfile"},
		{"email ca_pem with a key", func(m map[string]any) {
			obj(m, "email_accounts", "notifications")["ca_pem"] = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
		}, "email_accounts.notifications.ca_pem", "never a key"},
		{"email ca_pem garbage certificate", func(m map[string]any) {
			obj(m, "email_accounts", "notifications")["ca_pem"] = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
		}, "email_accounts.notifications.ca_pem", "certificate 1 does not parse"},
		{"model endpoint not a URL", func(m map[string]any) { obj(m, "models", "gpt4o")["endpoint"] = "openrouter.ai/api" }, "models.gpt4o.endpoint", "absolute http:// or https:// URL"},
		{"temperature out of range", func(m map[string]any) { obj(m, "models", "gpt4o")["temperature"] = 3 }, "models.gpt4o.temperature", "between 0 and 2"},
		{"embedding dims beyond hnsw", func(m map[string]any) { obj(m, "embedding")["dimensions"] = 3072 }, "embedding.dimensions", "pgvector indexes at most 2000"},
		{"gateway type", func(m map[string]any) { obj(m, "gateways", "bot-work")["type"] = "slack" }, "gateways.bot-work.type", `want "telegram" (a bot) or "console"`},
		{"console gateway with a secret", func(m map[string]any) { obj(m, "gateways", "bot-work")["type"] = "console" }, "gateways.bot-work.secret", "a console gateway has no bot"},
		{"postgres sslmode", func(m map[string]any) { obj(m, "postgres")["sslmode"] = "on" }, "postgres.sslmode", "want one of disable, allow, prefer"},
		{"git identity email", func(m map[string]any) { obj(m, "git_identities", "ops-identity")["email"] = "ops at choir" }, "git_identities.ops-identity.email", "plain email address"},
		{"git identity host with scheme", func(m map[string]any) {
			obj(m, "git_identities", "ops-identity")["hosts"] = []any{"github.com", "https://gitlab.com"}
		}, "git_identities.ops-identity.hosts[1]", "without scheme, user or path"},
		{"git identity host port", func(m map[string]any) {
			obj(m, "git_identities", "ops-identity")["hosts"] = []any{"git.example.com:99999"}
		}, "git_identities.ops-identity.hosts[0]", "want 1-65535"},
		{"git identity username", func(m map[string]any) { obj(m, "git_identities", "ops-identity")["username"] = "a:b" }, "git_identities.ops-identity.username", "without ':'"},
		{"git identity name on two lines", func(m map[string]any) { obj(m, "git_identities", "ops-identity")["name"] = "Ops\n[core]" }, "git_identities.ops-identity.name", "control character"},
		{"global repo missing with agents", func(m map[string]any) { delete(m, "global_repo") }, "global_repo.url", "required once agents are defined"},
		{"budget zero", func(m map[string]any) { m["budgets"] = map[string]any{"max_core_jobs": 0} }, "budgets.max_core_jobs", "want at least 1"},
		{"tts provider", func(m map[string]any) { obj(m, "tts", "eleven")["provider"] = "polly" }, "tts.eleven.provider", `only "elevenlabs"`},
		{"agent core llm unknown", func(m map[string]any) { obj(m, "agents", "agent-1", "defaults")["core_llm"] = "gpt5" }, "agents.agent-1.defaults.core_llm", `no model named "gpt5"`},
		{"mid_term_sessions zero", func(m map[string]any) { m["mid_term_sessions"] = 0 }, "mid_term_sessions", "want 1 to 1000: how many recent sessions stay in mid-term memory"},
		{"mid_term_sessions huge", func(m map[string]any) { m["mid_term_sessions"] = 1001 }, "mid_term_sessions", "want 1 to 1000"},
		{"session summary timeout beyond the stop", func(m map[string]any) { m["session_summary_timeout_ms"] = 600000 }, "session_summary_timeout_ms", "want 1000 to 45000 ms"},
		{"skill retries beyond the engine's bound", func(m map[string]any) { m["budgets"] = map[string]any{"per_step_skill_retries": 101} }, "budgets.per_step_skill_retries", "want at most 100"},
		{"log retention days negative", func(m map[string]any) { m["log_retention_days"] = -1 }, "log_retention_days", "between 0 and 36500 (0 keeps them whatever their age"},
		{"log retention days beyond a century", func(m map[string]any) { m["log_retention_days"] = 36501 }, "log_retention_days", "between 0 and 36500"},
		{"log retention size negative", func(m map[string]any) { m["log_retention_mb"] = -5 }, "log_retention_mb", "between 0 and 16777216 (0 sets no size limit"},
		{"log retention size overflowing", func(m map[string]any) { m["log_retention_mb"] = 1 << 40 }, "log_retention_mb", "between 0 and 16777216"},
		{"log retention size a string", func(m map[string]any) { m["log_retention_mb"] = "1G" }, "log_retention_mb", "want a whole number, got a string"},
		{"skill retries negative", func(m map[string]any) { m["budgets"] = map[string]any{"per_step_skill_retries": -1} }, "budgets.per_step_skill_retries", "want at least 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := mutate(t, example, tc.mutate)
			c, err := Parse(data)
			if err == nil {
				err = Validate(c, secrets)
			}
			ps, ok := err.(Problems)
			if !ok {
				t.Fatalf("Parse+Validate = %v (%T); want Problems", err, err)
			}
			for _, p := range ps {
				if p.Path == tc.path && strings.Contains(p.Message, tc.contains) {
					if p.File != ConfigFile {
						t.Errorf("problem file = %q; want %q", p.File, ConfigFile)
					}
					return
				}
			}
			t.Errorf("Parse+Validate problems = %v; want one at %q containing %q", err, tc.path, tc.contains)
		})
	}
}

func TestEveryProblemReportedAtOnce(t *testing.T) {
	example, secrets := readExample(t)
	data := mutate(t, example, func(m map[string]any) {
		obj(m, "agents", "agent-1", "defaults")["llm"] = "nope"
		obj(m, "dms", "user-dm")["gateway"] = "nope"
		m["crash_detection_threshold_ms"] = 1
		obj(m, "workspaces", "scratch")["path"] = "rel"
	})
	c, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := Validate(c, secrets).(Problems)
	if len(ps) != 4 {
		t.Fatalf("Validate found %d problems: %v; want 4", len(ps), ps)
	}
	for i := 1; i < len(ps); i++ {
		if ps[i-1].Path > ps[i].Path {
			t.Errorf("problems not sorted by path: %q before %q", ps[i-1].Path, ps[i].Path)
		}
	}
	// Structural problems are all reported too.
	_, err = Parse([]byte(`{"a": 1, "models": {"m": {"modle": "x", "endpoint": 3}}, "agents": []}`))
	ps, _ = err.(Problems)
	if len(ps) != 4 {
		t.Errorf("Parse found %d problems: %v; want 4 (a, modle, endpoint, agents)", len(ps), err)
	}
}

func TestSyntaxErrorsHavePositions(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"{\n  \"workspaces\": {,}\n}", "line 2:"},
		{`{"workspaces": {}`, "ends in the middle of a value"},
		{`{"workspaces": {}} {}`, "unexpected data after the top-level value"},
		{`{"gateways": {"a": {"type":"telegram"}, "a": {"type":"telegram"}}}`, "appears more than once"},
		{`[]`, "want an object"},
	}
	for _, tc := range tests {
		_, err := Parse([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v; want error containing %q", tc.in, err, tc.want)
		}
	}
}

func TestSecretsParsing(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{`{"a": "x", "a": "y"}`, "appears more than once"},
		{`{"a": 42}`, "want a string value, got a number (value not shown)"},
		{`{"bad name": "x"}`, "a secret name must match"},
		{`["x"]`, "want a JSON object"},
		{`{"a": "x",}`, "line 1:"},
	}
	for _, tc := range tests {
		_, err := ParseSecrets([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSecrets(%q) = %v; want error containing %q", tc.in, err, tc.want)
		}
	}
	// A problem never quotes a secret's value.
	_, err := ParseSecrets([]byte(`{"bad name": "hunter2-value"}`))
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("ParseSecrets error %v leaks the value", err)
	}
	s, err := ParseSecrets([]byte(`{"k": "hunter2"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		if out := fmtSprintf(format, s); strings.Contains(out, "hunter2") {
			t.Errorf("fmt %s of Secrets = %q; leaks the value", format, out)
		}
	}
}

func TestLoadRefusesOpenSecretsFile(t *testing.T) {
	example, secrets := readExample(t)
	home := Home{Dir: t.TempDir()}
	if err := os.WriteFile(home.ConfigPath(), example, 0o644); err != nil {
		t.Fatal(err)
	}
	sdata, _ := json.Marshal(map[string]string(secrets))
	if err := os.WriteFile(home.SecretsPath(), sdata, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(home.SecretsPath(), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(home)
	if err == nil || !strings.Contains(err.Error(), "chmod 600 "+home.SecretsPath()) {
		t.Fatalf("Load with a 0644 secrets.json = %v; want a chmod 600 hint", err)
	}
	if err := os.Chmod(home.SecretsPath(), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Load(home)
	if err != nil {
		t.Fatalf("Load = %v", err)
	}
	if l.Version == "" || l.Config.Agents["agent-1"].Defaults.DM != "admin-dm" {
		t.Errorf("Load = %+v; want the example loaded with a version", l)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "secrets.json")
	if err := WriteFileAtomic(path, []byte(`{"a":"1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(path, []byte(`{"a":"2"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v; want 0600", fi.Mode().Perm())
	}
	got, _ := os.ReadFile(path)
	if string(got) != `{"a":"2"}` {
		t.Errorf("content = %s; want the second write", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries; want only the file (no temp files left)", len(entries))
	}
	// A write into a missing directory fails and leaves nothing behind.
	if err := WriteFileAtomic(filepath.Join(dir, "no", "x"), []byte("x"), 0o600); err == nil {
		t.Error("WriteFileAtomic into a missing directory succeeded")
	}
}

func FuzzParse(f *testing.F) {
	data, _ := os.ReadFile("testdata/example.json")
	f.Add(data)
	f.Add([]byte(`{"models":{"m":{"temperature":null}}}`))
	f.Add([]byte(`{"a":{"b":[1,2,{"c":null}]}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := Parse(in)
		if err == nil {
			_ = Validate(c, Secrets{})
		} else if _, ok := err.(Problems); !ok {
			t.Fatalf("Parse error %T is not Problems", err)
		}
		_, _ = ParseSecrets(in)
	})
}

func TestLogRetentionZeroMeansNoLimit(t *testing.T) {
	example, secrets := readExample(t)
	c, err := Parse(mutate(t, example, func(m map[string]any) { m["log_retention_days"], m["log_retention_mb"] = 0, 0 }))
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(c, secrets); err != nil {
		t.Fatalf("Validate(retention 0, 0) = %v; want valid (0 is no limit)", err)
	}
	if c.LogRetentionDays != 0 || c.LogRetentionMB != 0 {
		t.Errorf("retention = %d days, %d MiB; want 0, 0 kept (not replaced by defaults)", c.LogRetentionDays, c.LogRetentionMB)
	}
	c, err = Parse([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.LogRetentionDays != 30 || c.LogRetentionMB != 1024 {
		t.Errorf("retention when omitted = %d days, %d MiB; want 30, 1024", c.LogRetentionDays, c.LogRetentionMB)
	}
}

// mid_term_sessions works now that memory tiers 2-4 are built: any value
// from 1 to 1000 is taken as written.
func TestMidTermSessionsTakesAnyValueInRange(t *testing.T) {
	for _, n := range []int{1, 5, 1000} {
		c := Default()
		c.MidTermSessions = n
		if err := Validate(&c, Secrets{}); err != nil && strings.Contains(err.Error(), "mid_term_sessions") {
			t.Errorf("mid_term_sessions %d refused: %v", n, err)
		}
	}
}
