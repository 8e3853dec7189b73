// Package mood is the moods of headless runs (seed 002 §3-4, §11): each
// mood a deterministic Profile (the tools a run may call, whether its
// container has network, whether the workspace is mounted and writable,
// whether credentials are bound, the verifiers it needs, its budgets),
// the zone invariant as a checked property of every profile, the
// deterministic transition guards between moods, and the anomaly
// detectors whose findings feed those guards.
//
// It is pure Go without I/O. The director applies a profile
// mechanically: Profile.Permit filters the agent's tool registry,
// Profile.Container says how the run's container is set up, Budgets bound
// the run; nothing here is prompt prose.
//
// The zone invariant (seed 002 §3): no profile has private data, network
// egress and credentials together. Validate checks it on the built-ins and
// on every profile an operator's override (config.json's
// headless.moods.<MOOD>) makes; Resolve refuses an override that breaks
// it. Permit keeps a profile's tools within its flags, so the tools a run
// is offered never reach further than its profile says.
package mood

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"choir/internal/netpolicy"
)

// Mood names a profile. The names are the seed's, in capitals, as they
// appear in config.json and in receipts.
type Mood string

// The moods of seed 002 §4, and DEFERENTIAL of §3's approval zone.
const (
	Calm        Mood = "CALM"        // execute one bounded step
	Curious     Mood = "CURIOUS"     // retrieval, conjecture formation; no code writes
	Skeptical   Mood = "SKEPTICAL"   // verification, adjudication; no new feature work
	Paranoid    Mood = "PARANOID"    // hardening, boundary tightening, security checks
	Contrite    Mood = "CONTRITE"    // crash recovery, projection rebuild
	Deferential Mood = "DEFERENTIAL" // questions and requests for human approval
)

// All returns every mood in a fixed order.
func All() []Mood { return []Mood{Calm, Curious, Skeptical, Paranoid, Contrite, Deferential} }

// Parse returns the mood called s (exactly, in capitals).
func Parse(s string) (Mood, error) {
	if slices.Contains(All(), Mood(s)) {
		return Mood(s), nil
	}
	return "", fmt.Errorf("unknown mood %q; want one of %s", s, names())
}

func names() string {
	var out []string
	for _, m := range All() {
		out = append(out, string(m))
	}
	return strings.Join(out, ", ")
}

// Budgets bound one run. A run that reaches any of them ends.
type Budgets struct {
	Tokens    int64         `json:"tokens"`     // model tokens, prompt and completion
	ToolCalls int           `json:"tool_calls"` // tool calls
	WallTime  time.Duration `json:"wall_time"`  // from start to the end of its verification
}

// Profile is what a run in a mood may do.
type Profile struct {
	Mood Mood
	// Tools are the tool names the run may call: an exact name
	// ("choir.fs.read"), a prefix pattern ending in ".*" ("choir.fs.*"
	// matches choir.fs.read and choir.fs.write), or "*". Permit also keeps
	// every tool within the flags below.
	Tools []string
	// Network: the run may reach the network, only through the policy
	// tools (choir.net.fetch with Allow, choir.web.*), never from its
	// container, which has no network in any mood (seed 002 §3: no raw
	// curl). False offers no network tool.
	Network bool
	// Allow is choir.net.fetch's allowlist (internal/netpolicy entries;
	// config.json's headless.moods.<MOOD>.allow). Empty admits nothing:
	// the built-ins have none, so a research run fetches only what the
	// operator listed.
	Allow []netpolicy.Entry
	// PrivateData: the run sees private data: the workspace (mounted),
	// memory, mail. False mounts no workspace.
	PrivateData bool
	// WorkspaceWritable mounts the workspace read-write (requires
	// PrivateData); false mounts it read-only.
	WorkspaceWritable bool
	// Credentials: the run's session binds credentials (the git identity,
	// secrets of bound resources).
	Credentials bool
	// MayCommit: a run in this mood may send a commit request; the
	// director still requires its verifiers and approval.
	MayCommit bool
	// WorkItemVerifiers: every verifier of the work item must pass before
	// the run's commit request is considered.
	WorkItemVerifiers bool
	// Verifiers are further verifiers (by name) the mood requires.
	Verifiers []string
	Budgets   Budgets
}

// Container is how the run's container is set up for a profile, in the
// terms of the Docker Engine API's HostConfig.
type Container struct {
	NetworkMode string // always "none": egress goes through choird's policy tools
	Workspace   string // "" (not mounted), "ro" or "rw"
	Secrets     bool   // the session is given its bound secrets
}

// Container returns the container set-up of p.
func (p Profile) Container() Container {
	c := Container{NetworkMode: "none", Secrets: p.Credentials}
	switch {
	case p.PrivateData && p.WorkspaceWritable:
		c.Workspace = "rw"
	case p.PrivateData:
		c.Workspace = "ro"
	}
	return c
}

// Clone returns a copy of p that shares no slice with it.
func (p Profile) Clone() Profile {
	p.Tools = slices.Clone(p.Tools)
	p.Verifiers = slices.Clone(p.Verifiers)
	p.Allow = slices.Clone(p.Allow)
	return p
}

// Built-in budgets.
var (
	stepBudgets  = Budgets{Tokens: 400_000, ToolCalls: 150, WallTime: 30 * time.Minute}
	lightBudgets = Budgets{Tokens: 150_000, ToolCalls: 60, WallTime: 15 * time.Minute}
	tinyBudgets  = Budgets{Tokens: 50_000, ToolCalls: 10, WallTime: 5 * time.Minute}
)

// builtins are the profiles of the zones of seed 002 §3.
var builtins = map[Mood]Profile{
	// EXECUTION ZONE: repo read/write, network off, no credentials.
	Calm: {Mood: Calm, Tools: []string{"choir.fs.*", "choir.exec"},
		PrivateData: true, WorkspaceWritable: true, MayCommit: true, WorkItemVerifiers: true, Budgets: stepBudgets},
	// RESEARCH ZONE: network on through the web tools and choir.net.fetch
	// (its allowlist empty until config.json gives one); no local files,
	// no identity.
	Curious: {Mood: Curious, Tools: []string{"choir.web.*", "choir.net.fetch"},
		Network: true, Budgets: lightBudgets},
	// VERIFICATION ZONE: reads the repo and runs its tests on a read-only
	// mount; no network.
	Skeptical: {Mood: Skeptical, Tools: []string{"choir.fs.read", "choir.fs.search", "choir.exec"},
		PrivateData: true, WorkItemVerifiers: true, Budgets: lightBudgets},
	// HARDENING ZONE: the strictest: reads only, no exec, no network.
	Paranoid: {Mood: Paranoid, Tools: []string{"choir.fs.read", "choir.fs.search"},
		PrivateData: true, WorkItemVerifiers: true, Budgets: lightBudgets},
	// Crash recovery: the director rebuilds the projection from receipts;
	// the run only reads what it is given.
	Contrite: {Mood: Contrite, Budgets: tinyBudgets},
	// APPROVAL ZONE: asks; calls nothing.
	Deferential: {Mood: Deferential, Budgets: tinyBudgets},
}

// Builtin returns the built-in profile of m; false for an unknown mood.
func Builtin(m Mood) (Profile, bool) {
	p, ok := builtins[m]
	return p.Clone(), ok
}

// Set is the profiles in effect, one per mood.
type Set map[Mood]Profile

// Builtins returns the built-in profiles.
func Builtins() Set {
	s := Set{}
	for m, p := range builtins {
		s[m] = p.Clone()
	}
	return s
}

// Profile returns m's profile of the set.
func (s Set) Profile(m Mood) (Profile, bool) {
	p, ok := s[m]
	return p.Clone(), ok
}

// NetPolicy compiles p's allowlist (named by its config.json path); an
// empty list is a policy that admits nothing.
func (p Profile) NetPolicy() (*netpolicy.Policy, error) {
	return netpolicy.Compile("headless.moods."+string(p.Mood)+".allow", p.Allow)
}
