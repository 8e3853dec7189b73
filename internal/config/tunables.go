package config

// Tunables are the top-level knobs of config.json. Every field has the
// design's default (see Default); a file that omits one keeps the default.
type Tunables struct {
	HeartbeatIntervalMS       int `json:"heartbeat_interval_ms"`
	CrashDetectionThresholdMS int `json:"crash_detection_threshold_ms"`
	RateLimitRetryMS          int `json:"rate_limit_retry_ms"`
	LogArchiveThresholdLines  int `json:"log_archive_threshold_lines"`
	// Archived logs (logs/archive/) older than LogRetentionDays, or beyond
	// LogRetentionMB in total, are deleted oldest first; 0 means no limit.
	LogRetentionDays        int `json:"log_retention_days"`
	LogRetentionMB          int `json:"log_retention_mb"`
	ApprovalTimeoutMS       int `json:"approval_timeout_ms"`
	MidTermSessions         int `json:"mid_term_sessions"`
	EventWindow             int `json:"event_window"`
	SessionSummaryTimeoutMS int `json:"session_summary_timeout_ms"`
	// CompactionThresholdPercent of a model's context window (minus the
	// never-compacted content) that triggers working-memory compaction.
	CompactionThresholdPercent int             `json:"compaction_threshold_percent"`
	Budgets                    Budgets         `json:"budgets"`
	Container                  ContainerLimits `json:"container"`
	LoopBreaker                LoopBreaker     `json:"loop_breaker"`

	// A working-memory snapshot (§13.4) rides the heartbeat every
	// SnapshotEveryRevs committed revisions, or after SnapshotIntervalMS
	// when anything was committed since the last one, and at a graceful
	// stop: recovery replays at most about that many events.
	SnapshotEveryRevs  int `json:"snapshot_every_revs"`
	SnapshotIntervalMS int `json:"snapshot_interval_ms"`
}

// ContainerLimits are the cgroup limits of every agent container (§15.3).
type ContainerLimits struct {
	CPUs     float64 `json:"cpus"`
	MemoryMB int     `json:"memory_mb"`
	Pids     int     `json:"pids"`
}

// LoopBreaker stops a lane that goes round in circles (agent/arbiter's
// loop.go): Repeats identical tool calls (or unusable ones) in a row, or
// StaleSteps model steps in a row without a new tool result, get the call
// refused with loop_detected; the next repeat ends the turn or the job,
// reported to the DM.
type LoopBreaker struct {
	Repeats    int `json:"repeats"`
	StaleSteps int `json:"stale_steps"`
}

// Budgets bound a session and each core job (§7.6). Injection never resets them.
type Budgets struct {
	MaxCoreJobs            int `json:"max_core_jobs"`
	TotalSessionTokens     int `json:"total_session_tokens"`
	MaxToolCallsPerSession int `json:"max_tool_calls_per_session"`
	PerJobMaxSteps         int `json:"per_job_max_steps"`
	PerJobMaxToolCalls     int `json:"per_job_max_tool_calls"`
	PerJobWallTimeMS       int `json:"per_job_wall_time_ms"`
	PerJobMaxInjections    int `json:"per_job_max_injections"`
	PerStepSkillRetries    int `json:"per_step_skill_retries"`
	ToolCallTimeoutMS      int `json:"tool_call_timeout_ms"`
	LLMCallTimeoutMS       int `json:"llm_call_timeout_ms"`
}

// Defaults that are not tunables.
const (
	DefaultRef           = "main"
	DefaultTemperature   = 0.7
	DefaultContextWindow = 128000
	DefaultSSLMode       = "prefer"
	DefaultPoolSize      = 4
	DefaultNamespace     = "choir"
	// DefaultOutputFormat is Opus in Ogg, what Telegram plays as a voice
	// message (§19.5, §21.3), not ElevenLabs' own default (MP3).
	DefaultOutputFormat = "opus_48000_64"
	DefaultTelegramAPI  = "https://api.telegram.org"
	DefaultNotionAPI    = "https://api.notion.com/v1"
)

// Log retention defaults and bounds (log_retention_days, log_retention_mb).
const (
	DefaultLogRetentionDays = 30
	DefaultLogRetentionMB   = 1024
	MaxLogRetentionDays     = 36500   // a century: far from overflowing a time.Duration
	MaxLogRetentionMB       = 1 << 24 // 16 TiB
)

// DefaultTunables are the design's defaults (§6.3, §7.6, §11, §13.1, §19.6, §22.2).
func DefaultTunables() Tunables {
	return Tunables{
		HeartbeatIntervalMS:        5000,
		CrashDetectionThresholdMS:  10000,
		RateLimitRetryMS:           1000,
		LogArchiveThresholdLines:   100000,
		LogRetentionDays:           DefaultLogRetentionDays,
		LogRetentionMB:             DefaultLogRetentionMB,
		ApprovalTimeoutMS:          30 * 60 * 1000,
		MidTermSessions:            10,
		EventWindow:                50,
		SessionSummaryTimeoutMS:    30000,
		CompactionThresholdPercent: 80,
		SnapshotEveryRevs:          500,
		SnapshotIntervalMS:         60000,
		Budgets: Budgets{
			MaxCoreJobs:            4,
			TotalSessionTokens:     2000000,
			MaxToolCallsPerSession: 500,
			PerJobMaxSteps:         50,
			PerJobMaxToolCalls:     100,
			PerJobWallTimeMS:       30 * 60 * 1000,
			PerJobMaxInjections:    10,
			PerStepSkillRetries:    2,
			ToolCallTimeoutMS:      120000,
			LLMCallTimeoutMS:       120000,
		},
		Container:   ContainerLimits{CPUs: 2, MemoryMB: 2048, Pids: 512},
		LoopBreaker: LoopBreaker{Repeats: 3, StaleSteps: 6},
	}
}

// Default is an empty configuration carrying every default.
func Default() Config {
	return Config{Tunables: DefaultTunables()}
}

// applyDefaults fills defaults that live inside named resources.
func (c *Config) applyDefaults() {
	if c.GlobalRepo.Ref == "" {
		c.GlobalRepo.Ref = DefaultRef
	}
	for name, a := range c.Agents {
		if a.Repo.Ref == "" {
			a.Repo.Ref = DefaultRef
		}
		if a.Restart == (RestartPolicy{}) {
			a.Restart = DefaultRestartPolicy()
		}
		c.Agents[name] = a
	}
	if c.Postgres.SSLMode == "" {
		c.Postgres.SSLMode = DefaultSSLMode
	}
	if c.Postgres.Namespace == "" {
		c.Postgres.Namespace = DefaultNamespace
	}
	if c.Postgres.PoolSize == 0 {
		c.Postgres.PoolSize = DefaultPoolSize
	}
	for name, m := range c.Models {
		if m.ContextWindow == 0 {
			m.ContextWindow = DefaultContextWindow
			c.Models[name] = m
		}
	}
	for name, v := range c.VoiceProfiles {
		if v.OutputFormat == "" {
			v.OutputFormat = DefaultOutputFormat
		}
		if v.VoiceSettings.Speed == 0 {
			v.VoiceSettings.Speed = 1.0 // 0 is never valid; absent means normal speed
		}
		c.VoiceProfiles[name] = v
	}
	for name, n := range c.NotionIntegrations {
		if n.Endpoint == "" {
			n.Endpoint = DefaultNotionAPI
			c.NotionIntegrations[name] = n
		}
	}
	for name, g := range c.Gateways {
		if g.APIBase == "" && g.Type == GatewayTelegram {
			g.APIBase = DefaultTelegramAPI
			c.Gateways[name] = g
		}
	}
}
