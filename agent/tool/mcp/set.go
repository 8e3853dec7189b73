package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"

	"sort"
	"strings"
	"sync"
	"time"

	"choir/agent/tool"
	"choir/internal/jsonschema"
	"choir/internal/mcp"
	"choir/internal/mcpdecl"
)

// Config says where the declarations are and what servers may use.
type Config struct {
	Dir      string // mcpdecl.Dir
	PinsFile string // mcpdecl.PinsFile
	// Workspace is the working directory of stdio servers.
	Workspace string
	// Secret is a granted secret's value by its secrets.json name.
	Secret func(name string) (string, bool)
	Log    *slog.Logger
	// Notify tells the bound DM (a changed tool list, with the command
	// that accepts it).
	Notify func(text string)
	// Report tells the admins (choird sends it to the bound DM and every
	// admin DM) that a server's tools differ from the pinned ones; nil:
	// Notify.
	Report func(text string)
	// AgentID names the agent in the commands Notify suggests.
	AgentID string
	// Taken reports a wire name already used by another tool.
	Taken func(wire string) bool
	// StartWait bounds how long Start waits for the servers' first
	// listing (default 30 s); a server not up by then offers its pinned
	// tools, which answer server_unavailable until it is.
	StartWait time.Duration
	HTTP      *http.Client
	// ElicitTimeout bounds the wait for the user's answer to a server's
	// question (default DefaultElicitTimeout).
	ElicitTimeout time.Duration
	// Sample makes the model call of a sampling request from a server
	// whose declaration has "sampling"; nil declines them all.
	Sample Sampler
	dial   dialer // tests
}

// Set is the running servers of one session.
type Set struct {
	pins    mcpdecl.Pins // nil: the image has none
	elicit  *elicitor
	servers []*Server
	tools   []tool.Tool
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// Start reads the declarations and the pins, starts every server and
// builds the tools they offer. The error is a declaration that does not
// parse (the build checked them, so only an image altered outside choird).
func Start(cfg Config) (*Set, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	log := cfg.Log.With("system", "mcp")
	decls, err := mcpdecl.LoadDir(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("MCP declarations: %w", err)
	}
	pins, err := mcpdecl.ReadPins(cfg.PinsFile)
	if err != nil {
		log.Warn("MCP pins unreadable: no MCP tool is offered", "error", err.Error())
		return &Set{}, nil
	}
	if cfg.StartWait <= 0 {
		cfg.StartWait = 30 * time.Second
	}
	dial := cfg.dial
	if dial == nil {
		dial = dialOptions{Secret: cfg.Secret, Workspace: cfg.Workspace, HTTP: cfg.HTTP}.dial
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Set{cancel: cancel, pins: pins, elicit: newElicitor(cfg.Notify, cfg.ElicitTimeout)}
	for _, d := range decls {
		srv := newServer(d, dial, log, nil)
		srv.elicit = s.elicit.handler(d.Name)
		srv.sample = sampleHandler(d, cfg.Sample)
		srv.changed = func(server string, _ []string) { s.reportChange(cfg, srv, pins) }
		s.servers = append(s.servers, srv)
		s.wg.Add(1)
		go func() { defer s.wg.Done(); srv.run(ctx) }()
	}
	deadline := time.After(cfg.StartWait)
	for _, srv := range s.servers {
		select {
		case <-srv.first:
		case <-deadline:
		}
	}
	used := map[string]string{}
	for _, srv := range s.servers {
		for _, t := range s.offer(cfg, log, srv, pins) {
			wire := tool.WireName(t.Name())
			if cfg.Taken != nil && cfg.Taken(wire) || used[wire] != "" {
				log.Warn("MCP tool refused: its name is taken", "tool", t.Name(), "wire_name", wire)
				continue
			}
			used[wire] = t.Name()
			s.tools = append(s.tools, t)
		}
	}
	return s, nil
}

// offer builds the tools of one server: the live ones that match their pin
// (all live ones when the image has no pins), or the pinned ones while the
// server is not up. A refused tool is logged with its reason.
func (s *Set) offer(cfg Config, log *slog.Logger, srv *Server, pins mcpdecl.Pins) []tool.Tool {
	d := srv.decl
	srv.mu.Lock()
	defs, up := append([]mcp.Tool(nil), srv.defs...), srv.state == StateUp
	srv.mu.Unlock()
	if !up {
		if pins == nil {
			log.Warn("MCP server not up at start and not pinned: it offers no tools this session", "mcp_server", d.Name)
			return nil
		}
		for _, name := range sortedKeys(pins[d.Name]) {
			var def mcp.Tool
			if json.Unmarshal(pins[d.Name][name].Def, &def) == nil {
				defs = append(defs, def)
			}
		}
	} else if pins != nil {
		s.reportChange(cfg, srv, pins)
	}
	var offered []string
	byName := map[string]mcp.Tool{}
	for _, def := range defs {
		if !d.Offers(def.Name) {
			continue
		}
		if pins != nil {
			p, ok := pins[d.Name][def.Name]
			if !ok || p.Hash != mcpdecl.ToolHash(def.Raw) {
				continue // reported by reportChange
			}
		}
		offered = append(offered, def.Name)
		byName[def.Name] = def
	}
	names, refused := mcpdecl.Names(d.Name, offered)
	for t, why := range refused {
		log.Warn("MCP tool refused", "mcp_server", d.Name, "tool", t, "reason", why)
	}
	var out []tool.Tool
	for _, mcpName := range sortedKeys(names) {
		def := byName[mcpName]
		def.InputSchema = withoutSchemaURI(def.InputSchema)
		if why := schemaProblem(def.InputSchema); why != "" {
			log.Warn("MCP tool refused: its input schema cannot be checked", "mcp_server", d.Name, "tool", mcpName, "reason", why)
			continue
		}
		t := newTool(srv, names[mcpName], def, mcpdecl.ToolHash(def.Raw))
		if _, err := tool.Load([]tool.Tool{t}, "", ""); err != nil {
			log.Warn("MCP tool refused", "mcp_server", d.Name, "tool", mcpName, "reason", err.Error())
			continue
		}
		out = append(out, t)
	}
	return out
}

// schemaProblem says why an input schema is not one choir can check, or "".
func schemaProblem(raw json.RawMessage) string {
	if _, err := jsonschema.Compile(raw); err != nil {
		return err.Error()
	}
	var top struct {
		Type any `json:"type"`
	}
	if json.Unmarshal(raw, &top) != nil || top.Type != "object" {
		return `the schema's type is not "object"`
	}
	return ""
}

// withoutSchemaURI drops a top-level "$schema": it names the dialect and
// validates nothing (servers built on Zod send it on every tool). Any other
// keyword choir's validator lacks refuses the tool instead (schemaProblem).
func withoutSchemaURI(raw json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	if _, ok := m["$schema"]; !ok {
		return raw
	}
	delete(m, "$schema")
	out, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return out
}

// withheld is how a server's live tools differ from the pinned ones, for
// the tools its declaration offers ("+added", "-removed", "~changed").
func withheld(srv *Server, pins mcpdecl.Pins) []string {
	if pins == nil {
		return nil
	}
	srv.mu.Lock()
	live := map[string]string{}
	for n, h := range srv.live {
		if srv.decl.Offers(n) {
			live[n] = h
		}
	}
	srv.mu.Unlock()
	pinned := mcpdecl.Pins{srv.decl.Name: map[string]mcpdecl.Pinned{}}
	for n, p := range pins[srv.decl.Name] {
		if srv.decl.Offers(n) {
			pinned[srv.decl.Name][n] = p
		}
	}
	return pinned.Diff(srv.decl.Name, live)
}

// reportChange logs and tells the DM how a server's live tools differ from
// the pinned ones.
func (s *Set) reportChange(cfg Config, srv *Server, pins mcpdecl.Pins) {
	diff := withheld(srv, pins)
	if len(diff) == 0 {
		return
	}
	cfg.Log.Warn("MCP server's tools differ from the ones pinned at build", "mcp_server", srv.decl.Name, "changes", strings.Join(diff, " "))
	tell := cfg.Report
	if tell == nil {
		tell = cfg.Notify
	}
	if tell != nil {
		agent := cfg.AgentID
		if agent == "" {
			agent = "<agent>"
		}
		tell(fmt.Sprintf("MCP server %s's tools differ from the ones pinned when this agent's image was built (+ added, - removed, ~ changed): %s. "+
			"Only the unchanged tools are offered. If the change is expected, accept it by rebuilding: choirctl agent build %s (then choirctl agent update %s).",
			srv.decl.Name, strings.Join(diff, " "), agent, agent))
	}
}

// Answer gives a user's message to the open question of a server when it
// answers it (accept, decline or cancel); the text says what was done.
func (s *Set) Answer(text string) (string, bool) { return s.elicit.answer(text) }

// Tools are the choir tools the servers offer this session.
func (s *Set) Tools() []tool.Tool { return append([]tool.Tool(nil), s.tools...) }

// Status reports every server.
func (s *Set) Status() []Status {
	out := make([]Status, 0, len(s.servers))
	for _, srv := range s.servers {
		out = append(out, srv.Status())
	}
	return out
}

// Report is one server's state, its pinned tools (MCP names; nil
// without pins), the tools offered this session and the changes withheld.
type Report struct {
	Server, State             string
	Pinned, Offered, Withheld []string
}

// Reports describes every server for `choirctl mcp list`.
func (s *Set) Reports() []Report {
	out := make([]Report, 0, len(s.servers))
	for _, srv := range s.servers {
		r := Report{Server: srv.decl.Name, State: srv.Status().State, Withheld: withheld(srv, s.pins)}
		if s.pins != nil {
			r.Pinned = sortedKeys(s.pins[srv.decl.Name])
		}
		for _, t := range s.tools {
			if mt, ok := t.(*Tool); ok && mt.srv == srv {
				r.Offered = append(r.Offered, mt.mcpName)
			}
		}
		if srv.Status().State != StateUp {
			r.Withheld = nil // the live list is not known
		}
		out = append(out, r)
	}
	return out
}

// Down names the servers that are not up, with why ("" when all are).
func (s *Set) Down() string {
	var down []string
	for _, st := range s.Status() {
		if st.State != StateUp {
			down = append(down, fmt.Sprintf("%s (%s: %s)", st.Name, st.State, clip(st.LastError, 200)))
		}
	}
	return strings.Join(down, ", ")
}

// Progress lists the MCP calls in flight with their last progress ("" when
// none runs).
func (s *Set) Progress() string {
	var all []string
	for _, srv := range s.servers {
		all = append(all, srv.Progress()...)
	}
	return strings.Join(all, ", ")
}

// Close stops every server.
func (s *Set) Close() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.wg.Wait()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
