package staging

import (
	"choir/internal/ctl"
	"choir/internal/rpc"
)

// rule says how a change of one top-level member of config.json applies.
type rule struct {
	class string
	// why completes the line of a next-start or restart-required change:
	// what it waits for.
	why string
	// held names the members of the section a running session holds
	// (its workspace, model, voice, identity...). removeHeld blocks the
	// removal of a held member; changeHeld blocks any change of one.
	held       func(agentID string, b rpc.ResourceBindings) []string
	removeHeld bool
	changeHeld bool
	// noun names a member in a blocking message ("workspace").
	noun string
}

const (
	restartChoird = "choird reads it once at its start: restart choird to apply it"
	nextBuild     = "takes effect at the next build: choirctl agent build, update or update-all"
	nextStart     = "takes effect when an agent next starts"
)

// rules classifies every member of config.json by its JSON name. A member
// missing here (a new setting) is restart-required until someone says
// otherwise: TestEveryConfigMemberIsClassified fails until then.
var rules = map[string]rule{
	"global_repo": {class: ctl.ClassNextStart, why: nextBuild},
	"workspaces": {class: ctl.ClassNextStart, why: nextStart, noun: "workspace",
		held: func(_ string, b rpc.ResourceBindings) []string { return []string{b.Workspace} }, removeHeld: true, changeHeld: true},
	"models": {class: ctl.ClassHot, noun: "model",
		held: func(_ string, b rpc.ResourceBindings) []string { return []string{b.LLM, b.CoreLLM, b.SummaryLLM} }, removeHeld: true},
	"tts": {class: ctl.ClassHot},
	"voice_profiles": {class: ctl.ClassHot, noun: "voice profile",
		held: func(_ string, b rpc.ResourceBindings) []string { return []string{b.VoiceProfile} }, removeHeld: true},
	"git_identities": {class: ctl.ClassHot, noun: "git identity",
		held: func(_ string, b rpc.ResourceBindings) []string { return []string{b.GitIdentity} }, removeHeld: true},
	"notion_integrations": {class: ctl.ClassHot, noun: "Notion integration",
		held: func(_ string, b rpc.ResourceBindings) []string { return []string{b.Notion} }, removeHeld: true},
	"email_accounts": {class: ctl.ClassHot, noun: "email account",
		held: func(_ string, b rpc.ResourceBindings) []string { return []string{b.Email} }, removeHeld: true},
	"search":        {class: ctl.ClassHot},
	"spend":         {class: ctl.ClassHot},
	"embedding":     {class: ctl.ClassRestart, why: restartChoird},
	"transcription": {class: ctl.ClassRestart, why: restartChoird},
	"gateways":      {class: ctl.ClassRestart, why: restartChoird},
	"dms":           {class: ctl.ClassRestart, why: restartChoird},
	"postgres":      {class: ctl.ClassRestart, why: restartChoird},
	"metrics":       {class: ctl.ClassRestart, why: restartChoird},
	"runtime":       {class: ctl.ClassRestart, why: restartChoird},
	"agents": {class: ctl.ClassNextStart, why: nextStart, noun: "agent",
		held: func(id string, _ rpc.ResourceBindings) []string { return []string{id} }, removeHeld: true},

	// Tunables: hot where the agent or choird reads them at each use.
	"heartbeat_interval_ms":        {class: ctl.ClassNextStart, why: nextStart},
	"crash_detection_threshold_ms": {class: ctl.ClassHot},
	"rate_limit_retry_ms":          {class: ctl.ClassHot},
	"log_archive_threshold_lines":  {class: ctl.ClassHot},
	"log_retention_days":           {class: ctl.ClassHot},
	"log_retention_mb":             {class: ctl.ClassHot},
	"approval_timeout_ms":          {class: ctl.ClassRestart, why: restartChoird},
	"mid_term_sessions":            {class: ctl.ClassHot},
	"event_window":                 {class: ctl.ClassNextStart, why: nextStart},
	"session_summary_timeout_ms":   {class: ctl.ClassHot},
	"compaction_threshold_percent": {class: ctl.ClassNextStart, why: nextStart},
	"budgets":                      {class: ctl.ClassNextStart, why: nextStart},
	"container":                    {class: ctl.ClassNextStart, why: "takes effect when an agent, a headless run or a verifier next starts"},
	"snapshot_every_revs":          {class: ctl.ClassHot},
	"snapshot_interval_ms":         {class: ctl.ClassHot},
	"loop_breaker":                 {class: ctl.ClassHot},
}

// ruleFor is the rule of a top-level member; unknown ones need a restart.
func ruleFor(key string) rule {
	if r, ok := rules[key]; ok {
		return r
	}
	return rule{class: ctl.ClassRestart, why: restartChoird}
}

// use is the Use text of a config.json or secrets.json change.
func (r rule) use() string {
	switch r.class {
	case ctl.ClassHot:
		return "included in: choirctl config apply"
	case ctl.ClassNextStart:
		return "included in: choirctl config apply; " + r.why
	}
	return r.why
}
