package lane

import (
	"fmt"
	"sync"
	"time"

	"choir/agent/tool"
	"choir/internal/config"
)

// Budget names, as config.json spells them (design §7.6).
const (
	BudgetCoreJobs       = "max_core_jobs"
	BudgetSessionTokens  = "total_session_tokens"
	BudgetSessionTools   = "max_tool_calls_per_session"
	BudgetJobSteps       = "per_job_max_steps"
	BudgetJobToolCalls   = "per_job_max_tool_calls"
	BudgetJobWallTime    = "per_job_wall_time_ms"
	BudgetJobInjections  = "per_job_max_injections"
	CodeBudgetExceeded   = "budget_exceeded"
	CodeCoresRunning     = "cores_running"
	CodeUnknownJob       = "unknown_job"
	CodeJobEnded         = "job_ended"
	CodeJobNameInUse     = "job_name_in_use"
	CodeNotAvailable     = "not_available"
	CodeInvalidResult    = "invalid_result"
	CodeCompactionFailed = "compaction_failed"
)

// BudgetError reports a spent budget.
type BudgetError struct {
	Budget string // one of the Budget* names
	Limit  int64
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("the %s budget (%d) is spent", e.Budget, e.Limit)
}

// toolError is the structured error a model receives for e.
func (e *BudgetError) toolError() *tool.Error {
	return tool.Errorf(CodeBudgetExceeded, "%s; it is never reset during the session", e.Error())
}

// budgets fills the zero fields of b with the design's defaults; zero
// Budgets are all defaults. per_job_max_injections and
// per_step_skill_retries may be 0 (no injection; a skill fails at its
// first invalid proposal) when other budgets are set.
func budgets(b config.Budgets) config.Budgets {
	d := config.DefaultTunables().Budgets
	if b == (config.Budgets{}) {
		return d
	}
	fill := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	fill(&b.MaxCoreJobs, d.MaxCoreJobs)
	fill(&b.TotalSessionTokens, d.TotalSessionTokens)
	fill(&b.MaxToolCallsPerSession, d.MaxToolCallsPerSession)
	fill(&b.PerJobMaxSteps, d.PerJobMaxSteps)
	fill(&b.PerJobMaxToolCalls, d.PerJobMaxToolCalls)
	fill(&b.PerJobWallTimeMS, d.PerJobWallTimeMS)
	if b.PerJobMaxInjections < 0 {
		b.PerJobMaxInjections = d.PerJobMaxInjections
	}
	if b.PerStepSkillRetries < 0 {
		b.PerStepSkillRetries = d.PerStepSkillRetries
	}
	return b
}

// session counts what the session-level budgets bound (design §7.6): every
// model call's tokens (edge, cores and compaction), every tool call of
// every lane, and every core job spawned. Nothing resets them.
type session struct {
	lim config.Budgets

	mu     sync.Mutex
	tokens int64
	tools  int64
	jobs   int64
}

// checkTokens refuses a model call once the tokens are spent.
func (s *session) checkTokens() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tokens >= int64(s.lim.TotalSessionTokens) {
		return &BudgetError{BudgetSessionTokens, int64(s.lim.TotalSessionTokens)}
	}
	return nil
}

func (s *session) addTokens(n int64) {
	s.mu.Lock()
	s.tokens += n
	s.mu.Unlock()
}

// takeTool counts one tool call, or refuses it.
func (s *session) takeTool() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tools >= int64(s.lim.MaxToolCallsPerSession) {
		return &BudgetError{BudgetSessionTools, int64(s.lim.MaxToolCallsPerSession)}
	}
	s.tools++
	return nil
}

// takeJob counts one core job, or refuses it.
func (s *session) takeJob() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jobs >= int64(s.lim.MaxCoreJobs) {
		return &BudgetError{BudgetCoreJobs, int64(s.lim.MaxCoreJobs)}
	}
	s.jobs++
	return nil
}

// spent reports the session budget that leaves the session nothing to do,
// or nil: total_session_tokens (no model call is possible) or
// max_tool_calls_per_session (no tool call is). A spent max_core_jobs only
// refuses spawns; the edge goes on without cores.
func (s *session) spent() *BudgetError {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.tokens >= int64(s.lim.TotalSessionTokens):
		return &BudgetError{BudgetSessionTokens, int64(s.lim.TotalSessionTokens)}
	case s.tools >= int64(s.lim.MaxToolCallsPerSession):
		return &BudgetError{BudgetSessionTools, int64(s.lim.MaxToolCallsPerSession)}
	}
	return nil
}

// remaining is the session's budget_remaining for REPORT_STATUS.
func (s *session) remaining() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return map[string]int64{
		BudgetSessionTokens: max(0, int64(s.lim.TotalSessionTokens)-s.tokens),
		BudgetSessionTools:  max(0, int64(s.lim.MaxToolCallsPerSession)-s.tools),
		BudgetCoreJobs:      max(0, int64(s.lim.MaxCoreJobs)-s.jobs),
	}
}

// jobLimits are one job's budgets, fixed when it initialises.
type jobLimits struct {
	steps, tools, injections int
	wall                     time.Duration
}

func limitsFor(b config.Budgets, start CoreJobStart) jobLimits {
	l := jobLimits{
		steps:      b.PerJobMaxSteps,
		tools:      b.PerJobMaxToolCalls,
		injections: b.PerJobMaxInjections,
		wall:       time.Duration(b.PerJobWallTimeMS) * time.Millisecond,
	}
	if tb := time.Duration(start.ToolConstraints.TimeBudgetMS) * time.Millisecond; tb > 0 && tb < l.wall {
		l.wall = tb
	}
	return l
}
