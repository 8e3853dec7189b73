// Package builtin is the one list of the tools choir-agent provides itself
// (design §8.7): the agent registers exactly these, and choird's build
// checks skills and repo manifests against the same list, so a name can
// never be known to one and unknown to the other.
//
// Each area of tools lives in its own room (agent/tool/workspace,
// agent/lane, agent/tool/web, ...); this package only assembles them.
package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"sort"

	"choir/agent/egress"
	"choir/agent/lane"
	"choir/agent/tool"
	"choir/agent/tool/email"
	"choir/agent/tool/netfetch"
	"choir/agent/tool/notion"
	"choir/agent/tool/tts"
	"choir/agent/tool/web"
	"choir/agent/tool/workspace"
	"choir/internal/config"
)

// Deps are what the built-ins need from the running agent. The zero Deps
// builds the same tools (same names, schemas and runtime views) whose calls
// fail: Names uses it.
type Deps struct {
	// Host runs host tools in choird (EXECUTE_HOST_TOOL).
	Host tool.HostFunc
	// Propose submits an approval request (choir.propose.*).
	Propose tool.ProposeFunc
	// Known reports whether a tool is registered, for proposed skills; it
	// is asked at call time, once the registry exists.
	Known func(string) bool
	// Dynamic is the dynamic config in effect now (endpoints, voice
	// profile, the session's own identity, Notion integration and email
	// account); the world tools read it per call, so `model set`,
	// `voice set` and secret changes apply to the next call.
	Dynamic func() config.Dynamic
	// SessionID is the session's id: choir.propose.repo_change accepts
	// only its own proposal/<session-id>/ branches.
	SessionID string
	// Workspace configures the workspace tools (choir.exec, choir.fs.*).
	Workspace workspace.Options
}

var errNotRunning = errors.New("choir-agent is not running this tool")

// Tools returns every built-in tool.
func Tools(d Deps) []tool.Tool {
	if d.Host == nil {
		d.Host = func(context.Context, string, string, json.RawMessage) (json.RawMessage, error) {
			return nil, errNotRunning
		}
	}
	if d.Propose == nil {
		d.Propose = func(context.Context, string, json.RawMessage) (string, string, error) {
			return "", "", errNotRunning
		}
	}
	if d.Known == nil {
		d.Known = func(string) bool { return false }
	}
	if d.Dynamic == nil {
		d.Dynamic = func() config.Dynamic { return config.Dynamic{} }
	}
	var out []tool.Tool
	out = append(out, workspace.Tools(d.Workspace)...)
	out = append(out, lane.Tools(d.Host)...)
	out = append(out, tool.ProposeTools(d.Propose, d.Known)...)
	out = append(out, tool.ProposeRepoChange(d.Propose, d.SessionID))
	out = append(out, web.Browse(d.Host))
	// choir.net.fetch: offered only with a network policy (agent/assembly/run.go)
	out = append(out, netfetch.Fetch(d.Host))
	hc := egress.HTTPClient() // directly, or through choird's tunnel in a container without network
	out = append(out, web.NewSearch(d.Dynamic, hc), notion.NewQuery(d.Dynamic, hc), tts.NewSpeak(d.Dynamic, hc))
	out = append(out, email.Tools(d.Dynamic)...)
	return out
}

// Names returns the names of the built-in tools, sorted.
func Names() []string {
	var names []string
	for _, t := range Tools(Deps{}) {
		names = append(names, t.Name())
	}
	sort.Strings(names)
	return names
}

// Has reports whether name is a built-in tool.
func Has(name string) bool {
	i := sort.SearchStrings(names, name)
	return i < len(names) && names[i] == name
}

var names = Names()
