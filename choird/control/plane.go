// Package control is choird's control plane: it holds the running
// configuration and secrets, records how startup went, and implements the
// operator commands that choirctl reaches through the admin socket (and,
// later, the gateway through the same methods: one implementation per
// command).
package control

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"sync"
	"time"

	"choir/choird/headless"
	"choir/choird/staging"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/logs"
)

// Plane is the control plane's state. It is safe for concurrent use.
type Plane struct {
	home      config.Home
	log       *slog.Logger
	logs      *logs.Manager
	startedAt time.Time

	mu            sync.RWMutex
	loaded        *config.Loaded
	configVersion int64
	steps         []ctl.Step
	transport     string
	agentSocket   string
	listen        string
	agents        Agents
	messages      Messenger
	builder       Builder
	approvals     Approvals
	sessionLog    SessionLog
	running       Sessions
	memory        Memory
	kb            KnowledgeBase
	runContexts   RunContexts // run_context_api.go
	usage         Usage       // usage_api.go
	gateways      func() []ctl.GatewayStatus
	outbox        func(ctx context.Context, agentID string) []ctl.DMOutbox // chat_api.go
	probes        []Probe
	health        map[string]probeState // by probe name

	// The director of headless runs (headless_api.go).
	director *headless.Director
	// runDecider decides runs that wait for a human through their
	// approval (headless_api.go); nil decides them on the director.
	runDecider RunDecider

	// The staged snapshot of config load (§17.6), the running
	// configuration it was staged over, and what checks repos; applyMu
	// keeps load, diff and apply one at a time.
	applyMu    sync.Mutex
	staged     *staging.Snapshot
	stagedOver *config.Loaded
	checker    staging.Checker

	// Console receives what agents send to their DMs, for choirctl chat.
	Console Console
}

// New returns a control plane for home, logging through lm.
func New(home config.Home, lm *logs.Manager) *Plane {
	return &Plane{home: home, logs: lm, log: lm.Choird().With(logs.KeySystem, "control"), startedAt: time.Now()}
}

// SetConfig installs a validated configuration as the running one and bumps
// the config version; secrets are handed to the log redactor at once.
func (p *Plane) SetConfig(l *config.Loaded) {
	version := p.install(l)
	p.versionChanged(version, "configuration loaded", "agents", len(l.Config.Agents), "secrets", len(l.Secrets))
}

// install makes l the running configuration under a new version, which it
// returns; the secrets go to the log redactor first, so no log line can
// carry a new secret unredacted.
func (p *Plane) install(l *config.Loaded) int64 {
	p.logs.Redactor.Set(secretValues(l.Secrets))
	p.logs.SetThreshold(l.Config.LogArchiveThresholdLines)
	p.logs.SetRetention(logs.Retention{MaxAge: time.Duration(l.Config.LogRetentionDays) * 24 * time.Hour, MaxBytes: int64(l.Config.LogRetentionMB) << 20})
	p.mu.Lock()
	defer p.mu.Unlock()
	p.loaded = l
	p.configVersion++
	return p.configVersion
}

func secretValues(s config.Secrets) []string {
	vals := make([]string, 0, len(s))
	for _, v := range s {
		vals = append(vals, v)
	}
	return vals
}

// Current returns the running configuration and its version, together.
func (p *Plane) Current() (*config.Loaded, int64) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.loaded, p.configVersion
}

// Config returns the running configuration.
func (p *Plane) Config() *config.Loaded {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.loaded
}

// SetEndpoint records where agents reach choird.
func (p *Plane) SetEndpoint(transport, agentSocket, listen string) {
	p.mu.Lock()
	p.transport, p.agentSocket, p.listen = transport, agentSocket, listen
	p.mu.Unlock()
}

// Step records and logs one startup step.
func (p *Plane) Step(name, status, detail string) {
	p.mu.Lock()
	n := len(p.steps) + 1
	p.steps = append(p.steps, ctl.Step{N: n, Name: name, Status: status, Detail: detail})
	p.mu.Unlock()
	level := slog.LevelInfo
	if status == ctl.StepFailed {
		level = slog.LevelError
	}
	attrs := []any{logs.KeyStep, n, "status", status}
	if detail != "" {
		attrs = append(attrs, "detail", detail)
	}
	p.log.Log(context.Background(), level, "startup step "+name, attrs...)
}

// Status is `choirctl status`.
func (p *Plane) Status() ctl.Status {
	var archive ctl.LogArchive // listed before taking the lock
	archive.Files, archive.Bytes, _ = p.logs.ArchiveUsage()
	p.mu.RLock()
	defer p.mu.RUnlock()
	s := ctl.Status{
		Healthy: p.loaded != nil, PID: os.Getpid(), Home: p.home.Dir, StartedAt: p.startedAt,
		ConfigVersion: p.configVersion, Transport: p.transport, AgentSocket: p.agentSocket, Listen: p.listen,
		Steps: append([]ctl.Step(nil), p.steps...), LogArchive: archive,
	}
	if p.loaded != nil {
		s.ConfigHash = p.loaded.Version
		s.Resources = p.loaded.Config.Counts()
	}
	if p.agents != nil {
		s.AgentsRunning = p.agents.Running()
	}
	if p.gateways != nil {
		s.Gateways = p.gateways()
	}
	s.Degraded = p.degraded()
	s.Healthy = s.Healthy && len(s.Degraded) == 0
	return s
}

// ConfigJSON is `choirctl config show`: the running config.json as loaded,
// defaults filled in. It holds secret names, never values.
func (p *Plane) ConfigJSON() (json.RawMessage, error) {
	l := p.Config()
	if l == nil {
		return nil, ctl.Errorf(503, "unavailable", "no configuration loaded yet")
	}
	return json.MarshalIndent(l.Config, "", "  ")
}

// LogPath returns the active log file of a source: "choird" or an agent id
// from the running config.
func (p *Plane) LogPath(source string) (string, error) {
	if source != logs.SourceChoird {
		l := p.Config()
		if l == nil {
			return "", ctl.Errorf(503, "unavailable", "no configuration loaded yet")
		}
		if _, ok := l.Config.Agents[source]; !ok {
			return "", ctl.Errorf(404, "not_found", "no log source %q: use choird or an agent id from config.json", source)
		}
	}
	path := p.logs.Path(source)
	if _, err := os.Stat(path); err != nil {
		return "", ctl.Errorf(404, "not_found", "%s has no log yet (%s)", source, path)
	}
	return path, nil
}

// SetGateways connects the gateway's status report.
func (p *Plane) SetGateways(status func() []ctl.GatewayStatus) {
	p.mu.Lock()
	p.gateways = status
	p.mu.Unlock()
}
