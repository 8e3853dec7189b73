package mood

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"choir/agent/builtin"
	"choir/internal/config"
	"choir/internal/netpolicy"
)

func TestMoodNamesMatchConfig(t *testing.T) {
	var got []string
	for _, m := range All() {
		got = append(got, string(m))
	}
	if !slices.Equal(got, config.MoodNames) {
		t.Errorf("mood.All() = %v; config.MoodNames = %v; keep them equal", got, config.MoodNames)
	}
	for _, m := range All() {
		if _, ok := Builtin(m); !ok {
			t.Errorf("Builtin(%s) missing", m)
		}
	}
}

func TestBuiltinsAreValidAndInTheirZones(t *testing.T) {
	want := map[Mood]Container{
		Calm:        {NetworkMode: "none", Workspace: "rw"},
		Curious:     {NetworkMode: "none"}, // network through choir.net.fetch only
		Skeptical:   {NetworkMode: "none", Workspace: "ro"},
		Paranoid:    {NetworkMode: "none", Workspace: "ro"},
		Contrite:    {NetworkMode: "none"},
		Deferential: {NetworkMode: "none"},
	}
	for _, m := range All() {
		p, _ := Builtin(m)
		if err := Validate(p); err != nil {
			t.Errorf("Validate(builtin %s) = %v", m, err)
		}
		if p.PrivateData && p.Network && p.Credentials {
			t.Errorf("builtin %s has private data, network and credentials", m)
		}
		if got := p.Container(); got != want[m] {
			t.Errorf("Builtin(%s).Container() = %+v; want %+v", m, got, want[m])
		}
	}
	if p, _ := Builtin(Calm); !p.MayCommit {
		t.Error("CALM may not commit; it is the mood that does the work")
	}
	for _, m := range []Mood{Curious, Skeptical, Paranoid, Contrite, Deferential} {
		if p, _ := Builtin(m); p.MayCommit || p.WorkspaceWritable {
			t.Errorf("builtin %s writes or commits; only CALM does", m)
		}
	}
}

// Every combination of the three zone flags on every mood: Validate
// refuses exactly the one with all three, with ErrZone.
func TestZoneInvariant(t *testing.T) {
	for _, m := range All() {
		for bits := range 8 {
			p, _ := Builtin(m)
			p.Tools = nil
			p.PrivateData, p.Network, p.Credentials = bits&1 != 0, bits&2 != 0, bits&4 != 0
			p.WorkspaceWritable, p.MayCommit = false, false
			err := Validate(p)
			if all := bits == 7; all != errors.Is(err, ErrZone) {
				t.Errorf("%s private=%t network=%t credentials=%t: Validate = %v; want ErrZone %t", m, p.PrivateData, p.Network, p.Credentials, err, all)
			}
			if bits != 7 && err != nil {
				t.Errorf("%s private=%t network=%t credentials=%t: Validate = %v; want nil", m, p.PrivateData, p.Network, p.Credentials, err)
			}
		}
	}
}

func TestValidateRefuses(t *testing.T) {
	calm, _ := Builtin(Calm)
	curious, _ := Builtin(Curious)
	for _, c := range []struct {
		name   string
		p      Profile
		field  string
		detail string
	}{
		{"unknown mood", func() Profile { p := calm; p.Mood = "BOLD"; return p }(), "", "unknown mood"},
		{"writable without private data", func() Profile { p := curious; p.WorkspaceWritable = true; return p }(), "workspace_writable", "private data"},
		{"commit without a writable workspace", func() Profile { p := calm.Clone(); p.WorkspaceWritable = false; return p }(), "may_commit", "nothing to commit"},
		{"exec with network", func() Profile { p := curious.Clone(); p.PrivateData = true; p.Tools = []string{"choir.exec"}; return p }(), "tools[0]", "raw network egress"},
		{"mail in CALM", func() Profile { p := calm.Clone(); p.Tools = append(p.Tools, "choir.email.send"); return p }(), "tools[2]", "network is off"},
		{"web search in CALM", func() Profile { p := calm.Clone(); p.Tools = []string{"choir.web.search"}; return p }(), "tools[0]", "network is off"},
		{"files in CURIOUS", func() Profile { p := curious.Clone(); p.Tools = []string{"choir.fs.read"}; return p }(), "tools[0]", "private_data is off"},
		{"write read-only", func() Profile { p, _ := Builtin(Skeptical); p.Tools = []string{"choir.fs.write"}; return p }(), "tools[0]", "workspace_writable is off"},
		{"tts without credentials", func() Profile { p := curious.Clone(); p.Tools = []string{"choir.tts.speak"}; return p }(), "tools[0]", "credentials is off"},
		{"pattern in the middle", func() Profile { p := calm.Clone(); p.Tools = []string{"choir.*.read"}; return p }(), "tools[0]", "not a tool name"},
		{"pattern with shell", func() Profile { p := calm.Clone(); p.Tools = []string{"choir.exec;id"}; return p }(), "tools[0]", "not a tool name"},
		{"verifier path", func() Profile { p := calm.Clone(); p.Verifiers = []string{"../../bin/sh"}; return p }(), "verifiers[0]", "not a verifier name"},
		{"no tokens", func() Profile { p := calm; p.Budgets.Tokens = 0; return p }(), "budgets.tokens", "want 1 to"},
		{"negative tool calls", func() Profile { p := calm; p.Budgets.ToolCalls = -1; return p }(), "budgets.tool_calls", "want 0 to"},
		{"a week of wall time", func() Profile { p := calm; p.Budgets.WallTime = 7 * 24 * time.Hour; return p }(), "budgets.wall_time_s", "want 1m0s to 24h0m0s"},
		{"too many patterns", func() Profile { p := calm.Clone(); p.Tools = slices.Repeat([]string{"choir.fs.read"}, 65); return p }(), "tools", "at most 64"},
	} {
		err := Validate(c.p)
		var pr Problem
		found := false
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				if errors.As(e, &pr) && pr.Field == c.field && strings.Contains(pr.Msg, c.detail) {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("%s: Validate = %v; want a problem at %q saying %q", c.name, err, c.field, c.detail)
		}
	}
}

func TestKnownTraitsCoverEveryBuiltinTool(t *testing.T) {
	for _, name := range builtin.Names() {
		if _, ok := KnownTraits(name); !ok {
			t.Errorf("built-in tool %s has no known traits: add it to known in validate.go", name)
		}
	}
}

// Whatever the built-in profiles permit of choir's built-in tools stays
// in the profile's zone: the tools a run is offered never add the third of
// private data, network and credentials.
func TestPermittedToolsStayInTheZone(t *testing.T) {
	set, err := Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range All() {
		p := set[m]
		wide := p.Clone()
		wide.Tools = []string{"*"} // the widest pattern: only the flags bound it
		for _, prof := range []Profile{p, wide} {
			var zone Traits
			for _, name := range append(builtin.Names(), "mcp.github.search", "weather.get") {
				tr := TraitsOf(name, false, 0)
				if name == "weather.get" {
					tr = TraitsOf(name, true, 1) // an external tool declaring network and a secret
				}
				if !prof.Permit(name, tr) {
					continue
				}
				zone.PrivateData = zone.PrivateData || tr.PrivateData
				zone.Network = zone.Network || tr.Network
				zone.Credentials = zone.Credentials || tr.Credentials
			}
			if zone.PrivateData && zone.Network && zone.Credentials {
				t.Errorf("%s with tools %v permits tools that together have private data, network and credentials", m, prof.Tools)
			}
		}
	}
}

func TestPermit(t *testing.T) {
	set := Builtins()
	for _, c := range []struct {
		mood Mood
		tool string
		tr   Traits
		want bool
	}{
		{Calm, "choir.fs.write", Traits{PrivateData: true, Writes: true}, true},
		{Calm, "choir.exec", Traits{PrivateData: true, Exec: true}, true},
		{Calm, "choir.web.search", Traits{Network: true}, false}, // not in CALM's patterns, and network is off
		{Calm, "choir.fsx.read", Traits{}, false},                // "choir.fs.*" is a prefix of names, not of text
		{Curious, "choir.web.browse", Traits{Network: true}, true},
		{Curious, "choir.web.evil", Traits{Network: true, Exec: true}, false}, // matches the pattern, but runs programs with network on
		{Skeptical, "choir.exec", Traits{PrivateData: true, Exec: true}, true},
		{Skeptical, "choir.fs.write", Traits{PrivateData: true, Writes: true}, false},
		{Paranoid, "choir.exec", Traits{PrivateData: true, Exec: true}, false},
		{Contrite, "choir.fs.read", Traits{PrivateData: true}, false},
		{Deferential, "choir.core.list", Traits{}, false},
	} {
		p := set[c.mood]
		if got := p.Permit(c.tool, c.tr); got != c.want {
			t.Errorf("%s.Permit(%s, %+v) = %t; want %t", c.mood, c.tool, c.tr, got, c.want)
		}
	}
}

func TestTraitsOf(t *testing.T) {
	if got := TraitsOf("weather.get", true, 1); got != (Traits{PrivateData: true, Exec: true, Network: true, Credentials: true}) {
		t.Errorf("TraitsOf(external with network and a secret) = %+v", got)
	}
	if got := TraitsOf("choir.web.search", false, 0); got != (Traits{Network: true}) {
		t.Errorf("TraitsOf(choir.web.search) = %+v", got)
	}
	if got := TraitsOf("mcp.fs.read", false, 0); !(got.PrivateData && got.Network && got.Credentials) {
		t.Errorf("TraitsOf(mcp tool) = %+v; want every trait (an MCP server may reach anything)", got)
	}
}

func b(v bool) *bool { return &v }

func TestResolve(t *testing.T) {
	tokens, calls, wall := int64(1234), 7, int64(120)
	set, err := Resolve(&config.Headless{Moods: map[string]config.MoodOverride{
		"CALM":     {Budgets: &config.MoodBudgets{Tokens: &tokens, ToolCalls: &calls, WallTimeS: &wall}, Verifiers: []string{"go-vet"}},
		"PARANOID": {Tools: []string{}},
	}})
	if err != nil {
		t.Fatalf("Resolve = %v", err)
	}
	calm := set[Calm]
	if calm.Budgets != (Budgets{Tokens: 1234, ToolCalls: 7, WallTime: 2 * time.Minute}) || !slices.Equal(calm.Verifiers, []string{"go-vet"}) {
		t.Errorf("CALM after override = %s verifiers %v", calm, calm.Verifiers)
	}
	if !slices.Equal(calm.Tools, []string{"choir.fs.*", "choir.exec"}) {
		t.Errorf("CALM tools = %v; an override without tools keeps them", calm.Tools)
	}
	if p := set[Paranoid]; len(p.Tools) != 0 || p.Permit("choir.fs.read", Traits{PrivateData: true}) {
		t.Errorf("PARANOID tools = %v; an empty list allows none", p.Tools)
	}
	// The built-ins are not changed by an override.
	if p, _ := Builtin(Calm); p.Budgets.Tokens == 1234 {
		t.Error("Resolve changed the built-in CALM")
	}
}

// Hostile overrides: each tries to make a run that has private data,
// network and credentials together, or one that contradicts itself.
// Resolve refuses each with the config.json path, whatever config's own
// validation let through.
func TestResolveRefusesHostileOverrides(t *testing.T) {
	zero := int64(0)
	for _, c := range []struct {
		name string
		o    map[string]config.MoodOverride
		path string
		zone bool
	}{
		{"all three on CALM", map[string]config.MoodOverride{"CALM": {Network: b(true), Credentials: b(true), PrivateData: b(true)}}, "headless.moods.CALM.network", true},
		{"network and credentials on CALM (private from the built-in)", map[string]config.MoodOverride{"CALM": {Network: b(true), Credentials: b(true)}}, "headless.moods.CALM.network", true},
		{"private and credentials on CURIOUS (network from the built-in)", map[string]config.MoodOverride{"CURIOUS": {PrivateData: b(true), Credentials: b(true)}}, "headless.moods.CURIOUS.network", true},
		{"credentials on SKEPTICAL then network", map[string]config.MoodOverride{"SKEPTICAL": {Credentials: b(true), Network: b(true)}}, "headless.moods.SKEPTICAL.network", true},
		{"mail on CURIOUS with credentials", map[string]config.MoodOverride{"CURIOUS": {Credentials: b(true), Tools: []string{"choir.email.receive"}}}, "headless.moods.CURIOUS.tools[0]", false},
		{"exec in the research zone", map[string]config.MoodOverride{"CURIOUS": {Tools: []string{"choir.web.*", "choir.exec"}}}, "headless.moods.CURIOUS.tools[1]", false},
		{"writable research", map[string]config.MoodOverride{"CURIOUS": {WorkspaceWritable: b(true)}}, "headless.moods.CURIOUS.workspace_writable", false},
		{"commit from PARANOID", map[string]config.MoodOverride{"PARANOID": {MayCommit: b(true)}}, "headless.moods.PARANOID.may_commit", false},
		{"zero tokens", map[string]config.MoodOverride{"CONTRITE": {Budgets: &config.MoodBudgets{Tokens: &zero}}}, "headless.moods.CONTRITE.budgets.tokens", false},
		{"unknown mood", map[string]config.MoodOverride{"BOLD": {}}, "headless.moods.BOLD", false},
	} {
		set, err := Resolve(&config.Headless{Moods: c.o})
		if err == nil {
			t.Errorf("%s: Resolve = %v; want refused", c.name, set)
			continue
		}
		if !strings.Contains(err.Error(), "config.json: "+c.path+":") {
			t.Errorf("%s: Resolve = %v; want a problem at %s", c.name, err, c.path)
		}
		if c.zone != errors.Is(err, ErrZone) {
			t.Errorf("%s: errors.Is(Resolve error, ErrZone) = %t; want %t", c.name, !c.zone, c.zone)
		}
	}
}

// What each built-in mood is offered of choir's built-in tools.
func TestPermittedBuiltinTools(t *testing.T) {
	want := map[Mood][]string{
		Calm:        {"choir.exec", "choir.fs.read", "choir.fs.search", "choir.fs.write"},
		Curious:     {"choir.net.fetch", "choir.web.browse", "choir.web.search"},
		Skeptical:   {"choir.exec", "choir.fs.read", "choir.fs.search"},
		Paranoid:    {"choir.fs.read", "choir.fs.search"},
		Contrite:    nil,
		Deferential: nil,
	}
	for _, m := range All() {
		p, _ := Builtin(m)
		if got := p.Permitted(builtin.Names(), nil); !slices.Equal(got, want[m]) {
			t.Errorf("%s.Permitted(built-ins) = %v; want %v", m, got, want[m])
		}
	}
	// Everything, bounded by the flags alone.
	p, _ := Builtin(Curious)
	p.Tools = []string{"*"}
	if got := p.Permitted(builtin.Names(), nil); !slices.Equal(got, []string{
		"choir.core.cancel", "choir.core.finish", "choir.core.inject", "choir.core.list", "choir.core.report", "choir.core.spawn",
		"choir.net.fetch", "choir.web.browse", "choir.web.search"}) {
		t.Errorf("CURIOUS with tools [*] permits %v; want the lane tools, choir.net.fetch and the web tools only", got)
	}
}

// A mood's allowlist: applied from config.json, compiled into the policy
// choir.net.fetch enforces, refused on a mood without network; no mood's
// container ever has a network.
func TestMoodAllowlist(t *testing.T) {
	var allow []config.AllowEntry
	if err := json.Unmarshal([]byte(`["https://docs.example.org/api/", {"prefix": "https://search.example.org/q", "methods": ["POST"]}]`), &allow); err != nil {
		t.Fatal(err)
	}
	set, err := Resolve(&config.Headless{Moods: map[string]config.MoodOverride{"CURIOUS": {Allow: allow}}})
	if err != nil {
		t.Fatalf("Resolve = %v", err)
	}
	p, err := set[Curious].NetPolicy()
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "headless.moods.CURIOUS.allow" || !p.Check("GET", "https://docs.example.org/api/x").Allowed ||
		!p.Check("POST", "https://search.example.org/q").Allowed || p.Check("GET", "https://search.example.org/q").Allowed {
		t.Errorf("CURIOUS policy = %+v; want the two entries", p)
	}
	// The built-in research mood admits nothing until config.json lists it.
	b, _ := Builtin(Curious)
	if bp, _ := b.NetPolicy(); bp.Check("GET", "https://docs.example.org/api/x").Allowed {
		t.Error("the built-in CURIOUS admits a URL; it has no allowlist")
	}
	for _, m := range All() {
		if p := set[m]; p.Container().NetworkMode != "none" {
			t.Errorf("%s container network %q; want none in every mood", m, p.Container().NetworkMode)
		}
	}
	_, err = Resolve(&config.Headless{Moods: map[string]config.MoodOverride{
		"CALM":    {Allow: allow},
		"CURIOUS": {Allow: []config.AllowEntry{{Entry: netpolicy.Entry{Prefix: "ftp://x/"}}}},
	}})
	for _, want := range []string{"config.json: headless.moods.CALM.allow: an allowlist needs network on", "config.json: headless.moods.CURIOUS.allow[0]: \"ftp://x/\": scheme"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Resolve = %v; want %q", err, want)
		}
	}
}
