package mood

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"choir/internal/netpolicy"
)

// Traits are what a tool reaches. For choir's built-in tools they are
// known here (KnownTraits); for any other tool they come from its
// runtime manifest (network, secret resources), and a tool this package
// does not know runs a program in the run's container, so it counts as
// reading the workspace and as Exec.
type Traits struct {
	PrivateData bool // reads the workspace, memory, mail or notes
	Writes      bool // writes the workspace
	Network     bool // reaches the network, itself or through choird
	Credentials bool // uses the user's credentials or a bound secret
	Exec        bool // runs arbitrary programs in the run's container
}

// known are the traits of choir's built-in tools, by exact name or by
// a prefix ending in ".".
var known = []struct {
	name string
	t    Traits
}{
	{"choir.fs.read", Traits{PrivateData: true}},
	{"choir.fs.search", Traits{PrivateData: true}},
	{"choir.fs.write", Traits{PrivateData: true, Writes: true}},
	// On a read-only mount choir.exec cannot write; with a network it is
	// raw egress, which Permit refuses (seed 002 §3: no raw curl).
	{"choir.exec", Traits{PrivateData: true, Exec: true}},
	// The search provider's key is choird's service key, not the user's
	// identity: the web tools count as network only.
	{"choir.web.", Traits{Network: true}},
	// choird fetches within the mood's allowlist, without credentials.
	{"choir.net.fetch", Traits{Network: true}},
	{"choir.memory.", Traits{PrivateData: true}},
	{"choir.email.", Traits{PrivateData: true, Network: true, Credentials: true}},
	{"choir.notion.", Traits{PrivateData: true, Network: true, Credentials: true}},
	{"choir.tts.", Traits{Network: true, Credentials: true}},
	{"choir.propose.", Traits{PrivateData: true, Credentials: true}},
	// An MCP server may reach anything: it counts as all of them.
	{"choir.mcp.", Traits{PrivateData: true, Network: true, Credentials: true, Exec: true}},
	{"mcp.", Traits{PrivateData: true, Network: true, Credentials: true, Exec: true}},
	// Lane and skill tools reach nothing themselves (a core job's own
	// calls are filtered like the run's).
	{"choir.core.", Traits{}},
	{"choir.core", Traits{}},
	{"choir.skill.", Traits{}},
}

// KnownTraits returns the traits of a built-in tool; for another name, a
// program in the container (PrivateData, Exec) and false.
func KnownTraits(name string) (Traits, bool) {
	for _, k := range known {
		if name == k.name || strings.HasSuffix(k.name, ".") && strings.HasPrefix(name, k.name) {
			return k.t, true
		}
	}
	return Traits{PrivateData: true, Exec: true}, false
}

// TraitsOf returns the traits of the tool called name whose runtime view
// says it uses the network (network) and reads secrets (secrets > 0):
// KnownTraits widened by what the tool declares. The director's wiring
// calls it with tool.Runtime's Network and len(SecretResources).
func TraitsOf(name string, network bool, secrets int) Traits {
	t, _ := KnownTraits(name)
	t.Network = t.Network || network
	t.Credentials = t.Credentials || secrets > 0
	return t
}

// Matches reports whether one of p's tool patterns names the tool.
func (p Profile) Matches(name string) bool {
	for _, pat := range p.Tools {
		switch {
		case pat == "*":
			return true
		case strings.HasSuffix(pat, ".*"):
			if strings.HasPrefix(name, pat[:len(pat)-1]) {
				return true
			}
		case pat == name:
			return true
		}
	}
	return false
}

// Permit reports whether a run in p may call the tool called name with
// traits t: a pattern of p names it and it reaches no further than p's
// flags. This is the filter the run's tool registry applies.
func (p Profile) Permit(name string, t Traits) bool {
	return p.Matches(name) && p.refusal(t) == ""
}

// Permitted returns those of names that a run in p may call, sorted and
// without duplicates. traits gives a tool's traits (nil means
// TraitsOf(name, false, 0); the director passes one that reads each
// tool's runtime view). This is the list choird hands the run's agent
// session, which keeps its registry to it with tool.Among: choir-agent
// does not link this package.
func (p Profile) Permitted(names []string, traits func(name string) Traits) []string {
	if traits == nil {
		traits = func(name string) Traits { return TraitsOf(name, false, 0) }
	}
	var out []string
	for _, n := range names {
		if p.Permit(n, traits(n)) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// refusal says which flag of p a tool with traits t exceeds, "" when none.
func (p Profile) refusal(t Traits) string {
	switch {
	case t.PrivateData && !p.PrivateData:
		return "it reads private data and private_data is off"
	case t.Writes && !p.WorkspaceWritable:
		return "it writes the workspace and workspace_writable is off"
	case t.Network && !p.Network:
		return "it reaches the network and network is off"
	case t.Credentials && !p.Credentials:
		return "it uses credentials and credentials is off"
	case t.Exec && p.Network:
		return "it runs programs in the container, which would be raw network egress with network on (egress goes through choir.net.fetch and the web tools)"
	}
	return ""
}

// Problem is one thing wrong with a profile: the mood, the field (as
// config.json's headless.moods.<MOOD> names it) and why.
type Problem struct {
	Mood  Mood
	Field string
	Msg   string
}

func (p Problem) Error() string {
	if p.Field == "" {
		return fmt.Sprintf("mood %s: %s", p.Mood, p.Msg)
	}
	return fmt.Sprintf("mood %s: %s: %s", p.Mood, p.Field, p.Msg)
}

// ErrZone is matched (errors.Is) by the problem Validate reports when a
// profile has private data, network and credentials together.
var ErrZone = errors.New("the zone invariant (seed 002 §3) forbids private data, network egress and credentials in one run")

// zoneProblem wraps ErrZone so errors.Is finds it.
type zoneProblem struct{ Problem }

func (z zoneProblem) Unwrap() error { return ErrZone }

var (
	toolPatternRE = regexp.MustCompile(`^(\*|[a-z0-9_-]+(\.[a-z0-9_-]+)*(\.\*)?)$`)
	verifierRE    = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)
)

// Limits of a profile's budgets.
const (
	MaxTokens    = 100_000_000
	MaxToolCalls = 100_000
	MinWallTime  = time.Minute
	MaxWallTime  = 24 * time.Hour
	maxPatterns  = 64
)

// Validate checks a profile and returns every problem joined (each a
// Problem; the zone invariant's also matches ErrZone), or nil.
func Validate(p Profile) error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, Problem{p.Mood, field, fmt.Sprintf(format, args...)})
	}
	if _, err := Parse(string(p.Mood)); err != nil {
		add("", "%v", err)
	}
	if p.PrivateData && p.Network && p.Credentials {
		errs = append(errs, zoneProblem{Problem{p.Mood, "network",
			"private_data, network and credentials are all on, and the zone invariant (seed 002 §3) forbids the three in one run; turn one of them off"}})
	}
	if p.WorkspaceWritable && !p.PrivateData {
		add("workspace_writable", "a writable workspace is private data: turn private_data on or workspace_writable off")
	}
	if p.MayCommit && !p.WorkspaceWritable {
		add("may_commit", "a run that cannot write the workspace has nothing to commit: turn workspace_writable on or may_commit off")
	}
	if len(p.Tools) > maxPatterns {
		add("tools", "%d patterns; at most %d", len(p.Tools), maxPatterns)
	}
	for i, pat := range p.Tools {
		field := fmt.Sprintf("tools[%d]", i)
		if !toolPatternRE.MatchString(pat) {
			add(field, "%q is not a tool name, a prefix pattern ending in \".*\" (like \"choir.fs.*\") or \"*\"", pat)
			continue
		}
		if strings.Contains(pat, "*") {
			continue // a pattern selects what Permit lets through
		}
		if t, ok := KnownTraits(pat); ok {
			if why := p.refusal(t); why != "" {
				add(field, "%s can never be called in this mood: %s", pat, why)
			}
		}
	}
	if len(p.Allow) > 0 && !p.Network {
		add("allow", "an allowlist needs network on: a mood without network is offered no choir.net.fetch")
	}
	if _, err := p.NetPolicy(); err != nil {
		for _, e := range unjoin(err) {
			var ee *netpolicy.EntryError
			if errors.As(e, &ee) {
				if ee.Value != "" {
					add("allow"+ee.Path, "%q: %s", ee.Value, ee.Msg)
				} else {
					add("allow"+ee.Path, "%s", ee.Msg)
				}
			} else {
				add("allow", "%v", e)
			}
		}
	}
	for i, v := range p.Verifiers {
		if !verifierRE.MatchString(v) {
			add(fmt.Sprintf("verifiers[%d]", i), "%q is not a verifier name (lowercase letters, digits, '_', '.', '-', at most 64)", v)
		}
	}
	b := p.Budgets
	if b.Tokens < 1 || b.Tokens > MaxTokens {
		add("budgets.tokens", "%d; want 1 to %d", b.Tokens, MaxTokens)
	}
	if b.ToolCalls < 0 || b.ToolCalls > MaxToolCalls {
		add("budgets.tool_calls", "%d; want 0 to %d", b.ToolCalls, MaxToolCalls)
	}
	if b.WallTime < MinWallTime || b.WallTime > MaxWallTime {
		add("budgets.wall_time_s", "%s; want %s to %s", b.WallTime, MinWallTime, MaxWallTime)
	}
	return errors.Join(errs...)
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
