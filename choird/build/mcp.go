package build

import (
	"errors"
	"net"
	"net/url"
	"path"
	"strconv"
	"strings"

	"choir/internal/config"
	"choir/internal/mcpdecl"
)

// MCPDir holds a repo's MCP server declarations, mcp/<server>.json
// (internal/mcpdecl); the merged ones are baked into /choir/mcp.
const MCPDir = "mcp"

// mcpDef is one declaration as written, checked.
type mcpDef struct {
	data []byte
	decl *mcpdecl.Decl
}

// loadMCP reads and checks every mcp/<server>.json, each fault naming the
// repo, the file and the JSON pointer.
func (s *source) loadMCP() {
	s.mcp = map[string]*mcpDef{}
	for _, name := range s.jsonFiles(MCPDir) {
		file := path.Join(MCPDir, name)
		data, err := s.regular(file)
		if err != nil {
			s.fault(file, "", "%v", err)
			continue
		}
		d, err := mcpdecl.Parse(file, data)
		if err != nil {
			var de *mcpdecl.Error
			if !errors.As(err, &de) {
				s.fault(file, "", "%v", err)
				continue
			}
			for _, f := range de.Faults {
				s.fault(file, f.Path, "%s", f.Message)
			}
			continue
		}
		s.mcp[d.Name] = &mcpDef{data: data, decl: d}
	}
}

// mergeMCP bakes the declarations into mcp/: the agent repo's replaces the
// global repo's of the same server, like tools.
func mergeMCP(t *Tree, global, agent *source) {
	for _, side := range []struct {
		src  *source
		from string
	}{{global, "global"}, {agent, "agent"}} {
		for _, name := range sortedKeys(side.src.mcp) {
			if side.from == "global" && agent.mcp[name] != nil {
				continue
			}
			t.Entries = append(t.Entries, Entry{Path: path.Join(MCPDir, name+".json"), Mode: 0o644, Body: side.src.mcp[name].data, From: side.from})
			t.MCP = append(t.MCP, side.src.mcp[name].decl)
		}
	}
}

// mcpSecretNames are the secrets the merged declarations name, sorted and
// comma-separated, for version.json (choird grants them:
// choird/lifecycle/mcp_secrets.go).
func mcpSecretNames(t *Tree) string {
	set := map[string]bool{}
	for _, d := range t.MCP {
		for _, s := range d.Secrets() {
			set[s] = true
		}
	}
	return strings.Join(sortedKeys(set), ",")
}

// checkSamplingModels refuses a declaration whose sampling.model is not a
// model of config.json: the image would hold a server whose every sampling
// request fails. Only the declarations that reach the image are checked
// (the agent repo's replaces the global repo's).
func checkSamplingModels(global, agent *source, models map[string]config.Model) error {
	var faults []Fault
	for _, side := range []*source{global, agent} {
		for _, name := range sortedKeys(side.mcp) {
			if side == global && agent.mcp[name] != nil {
				continue
			}
			sm := side.mcp[name].decl.Sampling
			if sm == nil || sm.Model == "" {
				continue
			}
			if _, ok := models[sm.Model]; !ok {
				faults = append(faults, Fault{Repo: side.label, File: path.Join(MCPDir, name+".json"), Path: "/sampling/model",
					Message: "no model named " + strconv.Quote(sm.Model) + " in config.json (have: " + strings.Join(config.SortedNames(models), ", ") + "); name one of them, or leave model out for the agent's summary model"})
			}
		}
	}
	if len(faults) > 0 {
		return &InvalidError{Faults: faults}
	}
	return nil
}

// mcpEndpoints is ImageInfo.MCPEndpoints: the host:port of every MCP
// server declared over HTTP (the scheme's port when the URL names none),
// sorted and comma-separated.
func mcpEndpoints(t *Tree) string {
	set := map[string]bool{}
	for _, d := range t.MCP {
		if d.Transport != mcpdecl.HTTP {
			continue
		}
		u, err := url.Parse(d.URL)
		if err != nil || u.Hostname() == "" {
			continue
		}
		port := u.Port()
		if port == "" {
			port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
		}
		set[net.JoinHostPort(strings.ToLower(u.Hostname()), port)] = true
	}
	return strings.Join(sortedKeys(set), ",")
}
