package config

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"choir/internal/cron"
)

// Headless is config.json's "headless": the operator's overrides of the
// moods of headless runs (seed 002 §4; choird/headless/mood owns the
// built-in profiles and applies these over them).
type Headless struct {
	Moods map[string]MoodOverride `json:"moods,omitempty"`
	// Verifiers are the commands a work item's or a mood's verifier names
	// stand for, run in their own container from the agent's image with
	// the run's worktree read-only at /workspace and no network.
	Verifiers map[string]VerifierDef `json:"verifiers,omitempty"`
	// MaxRuns bounds the runs performed at once on this host (default
	// DefaultMaxRuns).
	MaxRuns int `json:"max_runs,omitempty"`
	// MaxSplits is how many times a work item may be split along its
	// ancestry on its runs' requests before a further SPLIT_REQUEST goes
	// to the DM (default DefaultMaxSplits).
	MaxSplits int `json:"max_splits,omitempty"`
	// ContextTokens is the budget of a run's context pack, its one prompt
	// (estimated as bytes/4; 0: the runner's default, 8000).
	ContextTokens int `json:"context_tokens,omitempty"`
}

// VerifierDef is one entry of headless.verifiers: a command exec'd in the
// worktree (["sh", "-c", "…"] for a shell), passing when it exits 0 within
// TimeoutS seconds (default 600).
type VerifierDef struct {
	Command  []string `json:"command"`
	TimeoutS int      `json:"timeout_s,omitempty"`
}

// Timeout is the verifier's timeout.
func (d VerifierDef) Timeout() time.Duration {
	if d.TimeoutS == 0 {
		return 10 * time.Minute
	}
	return time.Duration(d.TimeoutS) * time.Second
}

// DefaultMaxRuns is how many runs a host performs at once unless
// headless.max_runs says otherwise.
const DefaultMaxRuns = 2

// MaxRunsOrDefault is headless.max_runs or its default.
func (h *Headless) MaxRunsOrDefault() int {
	if h == nil || h.MaxRuns == 0 {
		return DefaultMaxRuns
	}
	return h.MaxRuns
}

// PackTokens is headless.context_tokens (0 when unset: the runner's
// default applies).
func (h *Headless) PackTokens() int {
	if h == nil {
		return 0
	}
	return h.ContextTokens
}

// DefaultMaxSplits is headless.max_splits's default.
const DefaultMaxSplits = 3

// MaxSplitsOrDefault is headless.max_splits or its default.
func (h *Headless) MaxSplitsOrDefault() int {
	if h == nil || h.MaxSplits == 0 {
		return DefaultMaxSplits
	}
	return h.MaxSplits
}

// MoodNames are the moods an override or a schedule may name, in
// choird/headless/mood's order (a test there keeps the two lists equal).
var MoodNames = []string{"CALM", "CURIOUS", "SKEPTICAL", "PARANOID", "CONTRITE", "DEFERENTIAL"}

// MoodOverride changes a mood's built-in profile; an absent field keeps
// the built-in value. Tools and Verifiers, when present, replace the
// built-in lists ([] empties them).
//
// The zone fields (network, private_data, credentials) are set all three
// or none: an override that moves a mood to another zone says the whole
// zone, so it cannot put private data, network and credentials together
// by changing one field of a profile it did not read. The three may
// never all be true (the zone invariant, seed 002 §3).
type MoodOverride struct {
	Tools             []string     `json:"tools,omitempty"`
	Network           *bool        `json:"network,omitempty"`
	PrivateData       *bool        `json:"private_data,omitempty"`
	Credentials       *bool        `json:"credentials,omitempty"`
	WorkspaceWritable *bool        `json:"workspace_writable,omitempty"`
	MayCommit         *bool        `json:"may_commit,omitempty"`
	WorkItemVerifiers *bool        `json:"work_item_verifiers,omitempty"`
	Verifiers         []string     `json:"verifiers,omitempty"`
	Budgets           *MoodBudgets `json:"budgets,omitempty"`
	// Allow is the allowlist of choir.net.fetch for runs in this mood
	// (network.go); a mood with network and no allowlist admits nothing.
	Allow []AllowEntry `json:"allow,omitempty"`
}

// MoodBudgets override a mood's budgets; absent fields keep the built-in.
type MoodBudgets struct {
	Tokens    *int64 `json:"tokens,omitempty"`
	ToolCalls *int   `json:"tool_calls,omitempty"`
	WallTimeS *int64 `json:"wall_time_s,omitempty"`
}

// Schedule is one entry of agents.<id>.schedules: when the director
// enqueues a run of the agent, on which work item, in which mood.
//
// Exactly one of Cron (a five-field expression or a macro, internal/cron,
// in time zone TZ, default UTC) and On (an event: "work_item_ready",
// "verifier_regressed", "run_failed") says when. With Cron, exactly one of
// WorkItem (an id, w-<12 hex>) and Query (the oldest ready work item of the
// agent that matches) says what; with On, they are optional filters on the
// event's work item. Mood defaults to CALM.
type Schedule struct {
	ID       string     `json:"id"`
	Cron     string     `json:"cron,omitempty"`
	TZ       string     `json:"tz,omitempty"`
	On       string     `json:"on,omitempty"`
	WorkItem string     `json:"work_item,omitempty"`
	Query    *WorkQuery `json:"query,omitempty"`
	Mood     string     `json:"mood,omitempty"`
}

// WorkQuery selects work items: those of the given risk tiers (empty:
// any) and, when Parent is set, the children of that work item.
type WorkQuery struct {
	Risk   []string `json:"risk,omitempty"`
	Parent string   `json:"parent,omitempty"`
}

// Schedule events (Schedule.On).
const (
	OnWorkItemReady     = "work_item_ready"
	OnVerifierRegressed = "verifier_regressed"
	OnRunFailed         = "run_failed"
)

// MoodOrDefault is the schedule's mood.
func (s Schedule) MoodOrDefault() string {
	if s.Mood == "" {
		return "CALM"
	}
	return s.Mood
}

// Location is the schedule's time zone (UTC when TZ is empty); validation
// has checked that it loads.
func (s Schedule) Location() (*time.Location, error) {
	if s.TZ == "" {
		return time.UTC, nil
	}
	return time.LoadLocation(s.TZ)
}

var (
	workItemIDRE = regexp.MustCompile(`^w-[0-9a-f]{12}$`)
	// toolPatternRE and verifierRE are choird/headless/mood's rules,
	// checked here so config load names the path.
	toolPatternRE = regexp.MustCompile(`^(\*|[a-z0-9_-]+(\.[a-z0-9_-]+)*(\.\*)?)$`)
	verifierRE    = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)
	riskTiers     = []string{"low", "medium", "high"}
	scheduleOn    = []string{OnWorkItemReady, OnVerifierRegressed, OnRunFailed}
)

// maxSchedules bounds one agent's schedules.
const maxSchedules = 100

// headless checks headless.moods and every agent's schedules.
func (v *validator) headless() {
	if h := v.c.Headless; h != nil {
		for _, name := range sortedKeys(h.Moods) {
			v.moodOverride("headless.moods."+name, name, h.Moods[name])
		}
		for _, name := range sortedKeys(h.Verifiers) {
			v.verifier("headless.verifiers."+name, name, h.Verifiers[name])
		}
		if h.MaxRuns < 0 || h.MaxRuns > 64 {
			v.add("headless.max_runs", fmt.Sprint(h.MaxRuns), "want 1 to 64 runs at once (or leave it out for %d)", DefaultMaxRuns)
		}
		if h.ContextTokens != 0 && (h.ContextTokens < 1000 || h.ContextTokens > 1000000) {
			v.add("headless.context_tokens", fmt.Sprint(h.ContextTokens), "want 1000 to 1000000 tokens for a run's context pack (or leave it out for the default, 8000)")
		}
		if h.MaxSplits < 0 || h.MaxSplits > 16 {
			v.add("headless.max_splits", fmt.Sprint(h.MaxSplits), "want 1 to 16 splits along a work item's ancestry (or leave it out for %d)", DefaultMaxSplits)
		}
	}
	for _, id := range sortedKeys(v.c.Agents) {
		scheds := v.c.Agents[id].Schedules
		if len(scheds) > maxSchedules {
			v.add("agents."+id+".schedules", fmt.Sprint(len(scheds)), "at most %d schedules per agent", maxSchedules)
		}
		seen := map[string]int{}
		for i, s := range scheds {
			path := fmt.Sprintf("agents.%s.schedules[%d]", id, i)
			if j, dup := seen[s.ID]; dup && s.ID != "" {
				v.add(path+".id", s.ID, "schedule id already used by schedules[%d]; ids are unique per agent (they key the fires)", j)
			}
			seen[s.ID] = i
			v.schedule(path, s)
		}
	}
}

func (v *validator) moodOverride(path, name string, o MoodOverride) {
	if !slices.Contains(MoodNames, name) {
		v.add(path, name, "unknown mood; want one of %s", strings.Join(MoodNames, ", "))
		return
	}
	zone := []*bool{o.Network, o.PrivateData, o.Credentials}
	set := 0
	for _, b := range zone {
		if b != nil {
			set++
		}
	}
	switch {
	case set != 0 && set != 3:
		v.add(path, "", "set network, private_data and credentials together or none of them: an override that changes a mood's zone states it whole")
	case set == 3 && *o.Network && *o.PrivateData && *o.Credentials:
		v.add(path+".network", "true", "private_data, network and credentials are all true, and the zone invariant (seed 002 §3) forbids the three in one run; turn one of them off")
	}
	if o.WorkspaceWritable != nil && *o.WorkspaceWritable && o.PrivateData != nil && !*o.PrivateData {
		v.add(path+".workspace_writable", "true", "a writable workspace is private data: set private_data true or workspace_writable false")
	}
	for i, t := range o.Tools {
		if !toolPatternRE.MatchString(t) {
			v.add(fmt.Sprintf("%s.tools[%d]", path, i), t, "want a tool name, a prefix pattern ending in \".*\" (like \"choir.fs.*\") or \"*\"")
		}
	}
	for i, name := range o.Verifiers {
		if !verifierRE.MatchString(name) {
			v.add(fmt.Sprintf("%s.verifiers[%d]", path, i), name, "want a verifier name: lowercase letters, digits, '_', '.', '-', at most 64")
		}
	}
	if b := o.Budgets; b != nil {
		if b.Tokens != nil && (*b.Tokens < 1 || *b.Tokens > 100_000_000) {
			v.add(path+".budgets.tokens", fmt.Sprint(*b.Tokens), "want 1 to 100000000 tokens")
		}
		if b.ToolCalls != nil && (*b.ToolCalls < 0 || *b.ToolCalls > 100_000) {
			v.add(path+".budgets.tool_calls", fmt.Sprint(*b.ToolCalls), "want 0 to 100000 tool calls")
		}
		if b.WallTimeS != nil && (*b.WallTimeS < 60 || *b.WallTimeS > 86400) {
			v.add(path+".budgets.wall_time_s", fmt.Sprint(*b.WallTimeS), "want 60 to 86400 seconds")
		}
	}
}

func (v *validator) verifier(path, name string, d VerifierDef) {
	if !verifierRE.MatchString(name) {
		v.add(path, name, "want a verifier name: lowercase letters, digits, '_', '.', '-', at most 64")
	}
	if len(d.Command) == 0 || d.Command[0] == "" {
		v.add(path+".command", "", "want the command as a list, like [\"go\", \"test\", \"./...\"] (or [\"sh\", \"-c\", \"…\"] for a shell)")
	}
	for i, a := range d.Command {
		if strings.ContainsRune(a, 0) {
			v.add(fmt.Sprintf("%s.command[%d]", path, i), "", "holds a NUL byte")
		}
	}
	if d.TimeoutS < 0 || d.TimeoutS > 7200 {
		v.add(path+".timeout_s", fmt.Sprint(d.TimeoutS), "want 1 to 7200 seconds (or leave it out for 600)")
	}
}

func (v *validator) schedule(path string, s Schedule) {
	if !NamePattern.MatchString(s.ID) {
		v.add(path+".id", s.ID, "want a schedule id matching %s", NamePattern)
	}
	switch {
	case s.Cron == "" && s.On == "":
		v.add(path, "", "say when: set cron (like \"0 3 * * *\") or on (%s)", strings.Join(scheduleOn, ", "))
	case s.Cron != "" && s.On != "":
		v.add(path+".on", s.On, "a schedule has cron or on, not both: make two schedules")
	case s.Cron != "":
		if _, err := cron.Parse(s.Cron); err != nil {
			var se *cron.SyntaxError
			msg := err.Error()
			if errors.As(err, &se) {
				msg = se.Field + ": " + se.Msg
				if se.Pos > 0 {
					msg = fmt.Sprintf("%s at column %d: %s", se.Field, se.Pos, se.Msg)
				}
			}
			v.add(path+".cron", s.Cron, "%s", msg)
		}
		if s.TZ != "" {
			if _, err := time.LoadLocation(s.TZ); err != nil {
				v.add(path+".tz", s.TZ, "unknown time zone; want an IANA name like \"Europe/Paris\" (or leave it out for UTC)")
			}
		}
		if s.WorkItem == "" && s.Query == nil {
			v.add(path, "", "say what: set work_item (an id, w-<12 hex>) or query ({} for the oldest ready work item)")
		}
	default:
		if !slices.Contains(scheduleOn, s.On) {
			v.add(path+".on", s.On, "unknown event; want one of %s", strings.Join(scheduleOn, ", "))
		}
		if s.TZ != "" {
			v.add(path+".tz", s.TZ, "a time zone means something only with cron")
		}
	}
	if s.WorkItem != "" && s.Query != nil {
		v.add(path+".query", "", "set work_item or query, not both")
	}
	if s.WorkItem != "" && !workItemIDRE.MatchString(s.WorkItem) {
		v.add(path+".work_item", s.WorkItem, "want a work item id, w- and 12 lowercase hex digits")
	}
	if q := s.Query; q != nil {
		for i, r := range q.Risk {
			if !slices.Contains(riskTiers, r) {
				v.add(fmt.Sprintf("%s.query.risk[%d]", path, i), r, "want low, medium or high")
			}
		}
		if q.Parent != "" && !workItemIDRE.MatchString(q.Parent) {
			v.add(path+".query.parent", q.Parent, "want a work item id, w- and 12 lowercase hex digits")
		}
	}
	if s.Mood != "" && !slices.Contains(MoodNames, s.Mood) {
		v.add(path+".mood", s.Mood, "unknown mood; want one of %s", strings.Join(MoodNames, ", "))
	}
}
