package main

// choirctl mcp check <file> [--json] [--no-connect]
// choirctl mcp list <agent-id> [--json]
//
// check validates an MCP server declaration (mcp/<server>.json, issue 24)
// exactly as agent build does, then starts the server (stdio, when its
// command exists on this host: it normally names a path inside the agent
// image, which agent build lists) or connects to it (http, with the
// declared headers' secrets from secrets.json) and lists its tools with the
// choir names the model would see, each refused one with its reason.
// list shows the declarations in effect for an agent (its repo's replacing
// the global repo's of the same server) as choird's last fetch of the
// repos holds them and, while the agent runs, each server's state (up, or
// down with its last error) as the agent reports it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"choir/internal/config"
	"choir/internal/jsonschema"
	"choir/internal/mcp"
	"choir/internal/mcpdecl"
	"choir/internal/rpc"
)

var mcpCommands = []command{
	{name: "check", args: "<file> [--json] [--no-connect]", summary: "validate an MCP server declaration and list the server's tools", run: mcpCheck},
	{name: "list", args: "<agent-id> [--json]", summary: "the MCP servers declared for an agent", run: mcpList},
}

// mcpToolReport is one tool as check reports it.
type mcpToolReport struct {
	MCPName  string `json:"mcp_name"`
	Name     string `json:"name,omitempty"`
	Hash     string `json:"hash"`
	Offered  bool   `json:"offered"`
	Refusal  string `json:"refused,omitempty"`
	Describe string `json:"description,omitempty"`
}

type mcpCheckReport struct {
	File      string          `json:"file"`
	Server    string          `json:"server"`
	Transport string          `json:"transport"`
	Valid     bool            `json:"valid"`
	Faults    []string        `json:"faults,omitempty"`
	Connected bool            `json:"connected"`
	Note      string          `json:"note,omitempty"`
	Error     string          `json:"error,omitempty"`
	Tools     []mcpToolReport `json:"tools,omitempty"`
}

func mcpCheck(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "mcp check", "mcp check <file> [--json] [--no-connect]")
	asJSON := fs.Bool("json", false, "print JSON")
	noConnect := fs.Bool("no-connect", false, "only validate the declaration")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("mcp check takes one declaration file")
	}
	file := fs.Arg(0)
	rep := mcpCheckReport{File: file}
	d, err := mcpdecl.ReadFile(file)
	var de *mcpdecl.Error
	switch {
	case errors.As(err, &de):
		for _, f := range de.Faults {
			rep.Faults = append(rep.Faults, f.String())
		}
	case err != nil:
		return err
	}
	if d != nil {
		rep.Valid, rep.Server, rep.Transport = true, d.Name, d.Transport
		if !*noConnect {
			checkConnect(ctx, e, d, &rep)
		}
	}
	if *asJSON {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintln(e.stdout, string(b))
	} else {
		printCheck(e.stdout, rep)
	}
	if !rep.Valid || rep.Error != "" {
		return errors.New("the declaration is not usable as it is")
	}
	return nil
}

func checkConnect(ctx context.Context, e *env, d *mcpdecl.Decl, rep *mcpCheckReport) {
	secrets, _ := config.LoadSecrets(e.home)
	secret := func(name string) (string, bool) { v, ok := secrets[name]; return v, ok }
	var t mcp.Transport
	switch d.Transport {
	case mcpdecl.Stdio:
		if _, err := os.Stat(d.Command); err != nil {
			rep.Note = fmt.Sprintf("%s is not on this host: it names a path inside the agent image, where agent build starts the server and pins its tools", d.Command)
			return
		}
		env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + os.TempDir(), "LANG=C.UTF-8"}
		for name, v := range d.Env {
			val, err := v.Resolve(secret)
			if err != nil {
				rep.Error = fmt.Sprintf("env %s: %v", name, err)
				return
			}
			env = append(env, name+"="+val)
		}
		cmd := exec.Command(d.Command, d.Args...)
		cmd.Env, cmd.Dir = env, os.TempDir()
		t = mcp.NewStdio(cmd, nil)
	case mcpdecl.HTTP:
		hdr := http.Header{}
		for name, v := range d.Headers {
			val, err := v.Resolve(secret)
			if err != nil {
				rep.Error = fmt.Sprintf("header %s: %v", name, err)
				return
			}
			hdr.Set(name, val)
		}
		t = mcp.NewHTTP(d.URL, hdr, nil)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// Declare elicitation (and sampling, for a server declared for it) as
	// the agent does: some servers list tools only to clients that can
	// answer them. Here every question and sampling is declined.
	opts := mcp.Options{ClientName: "choirctl",
		Elicit: func(context.Context, mcp.ElicitRequest) (mcp.ElicitResult, error) {
			return mcp.ElicitResult{Action: mcp.ActionDecline}, nil
		}}
	if d.Sampling != nil {
		opts.Sample = func(context.Context, mcp.SampleRequest) (mcp.SampleResult, error) {
			return mcp.SampleResult{}, errors.New("choirctl mcp check does not sample")
		}
	}
	c, err := mcp.Connect(ctx, t, opts)
	if err != nil {
		rep.Error = err.Error()
		return
	}
	defer c.Close()
	rep.Connected = true
	defs, err := c.ListTools(ctx)
	if err != nil {
		rep.Error = "tools/list: " + err.Error()
		return
	}
	var names []string
	for _, def := range defs {
		if d.Offers(def.Name) {
			names = append(names, def.Name)
		}
	}
	mapped, refused := mcpdecl.Names(d.Name, names)
	for _, def := range defs {
		tr := mcpToolReport{MCPName: def.Name, Name: mapped[def.Name], Hash: mcpdecl.ToolHash(def.Raw), Describe: clipText(def.Description, 200)}
		switch {
		case !d.Offers(def.Name):
			tr.Refusal = "not offered (tools.allow/deny)"
		case refused[def.Name] != "":
			tr.Refusal = refused[def.Name]
		default:
			if _, err := jsonschema.Compile(withoutSchemaKey(def.InputSchema)); err != nil {
				tr.Refusal = "input schema: " + err.Error()
			} else {
				tr.Offered = true
			}
		}
		rep.Tools = append(rep.Tools, tr)
	}
	sort.Slice(rep.Tools, func(i, j int) bool { return rep.Tools[i].MCPName < rep.Tools[j].MCPName })
}

// withoutSchemaKey drops a top-level "$schema", as the agent does.
func withoutSchemaKey(raw json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	delete(m, "$schema")
	b, _ := json.Marshal(m)
	return b
}

func clipText(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func printCheck(w io.Writer, r mcpCheckReport) {
	if !r.Valid {
		fmt.Fprintf(w, "%s is not a valid MCP server declaration:\n", r.File)
		for _, f := range r.Faults {
			fmt.Fprintf(w, "  %s\n", f)
		}
		return
	}
	fmt.Fprintf(w, "%s: server %s (%s), valid\n", r.File, r.Server, r.Transport)
	switch {
	case r.Note != "":
		fmt.Fprintf(w, "not started: %s\n", r.Note)
	case r.Error != "":
		fmt.Fprintf(w, "could not list its tools: %s\n", r.Error)
	case r.Connected:
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "MCP TOOL\tCHOIR TOOL\tOFFERED")
		for _, t := range r.Tools {
			offered := "yes"
			if !t.Offered {
				offered = "no: " + t.Refusal
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", t.MCPName, t.Name, offered)
		}
		tw.Flush()
	}
}

type mcpListEntry struct {
	Server    string `json:"server"`
	Transport string `json:"transport"`
	From      string `json:"from"`
	Target    string `json:"target"`
	Secrets   string `json:"secrets,omitempty"`
	Error     string `json:"error,omitempty"`
	// State is what the running agent reports: up, or down with why;
	// empty when the agent is not running or choird cannot be asked.
	State string `json:"state,omitempty"`
	// Pinned, Offered and Withheld are the running agent's report: the
	// MCP tools recorded at build (the image's /choir/mcp-pins.json), the
	// ones offered to the model this session, and the live changes not
	// offered (+added, -removed, ~changed). Truncated: the agent cut the
	// lists to fit its status report.
	Pinned    []string `json:"pinned_tools,omitempty"`
	Offered   []string `json:"offered_tools,omitempty"`
	Withheld  []string `json:"withheld_changes,omitempty"`
	Truncated bool     `json:"truncated,omitempty"`
}

func mcpList(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "mcp list", "mcp list <agent-id> [--json]")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("mcp list takes one agent id")
	}
	agent := fs.Arg(0)
	repos := e.home.ReposDir()
	byName := map[string]mcpListEntry{}
	for _, side := range []struct{ from, dir string }{
		{"global", filepath.Join(repos, "global", "mcp")},
		{"agent", filepath.Join(repos, "agents", agent, "mcp")},
	} {
		ents, _ := os.ReadDir(side.dir)
		for _, de := range ents {
			if !strings.HasSuffix(de.Name(), ".json") {
				continue
			}
			name := strings.TrimSuffix(de.Name(), ".json")
			en := mcpListEntry{Server: name, From: side.from}
			d, err := mcpdecl.ReadFile(filepath.Join(side.dir, de.Name()))
			if err != nil {
				en.Error = err.Error()
			} else {
				en.Transport, en.Target, en.Secrets = d.Transport, d.URL, strings.Join(d.Secrets(), ",")
				if d.Transport == mcpdecl.Stdio {
					en.Target = strings.Join(append([]string{d.Command}, d.Args...), " ")
				}
			}
			byName[name] = en // the agent repo's replaces the global repo's
		}
	}
	down := ""
	running := false
	reports := map[string]rpc.MCPServerStatus{}
	c := e.client()
	if st, err := c.Agent(ctx, agent); err == nil && st.State == "running" {
		running = true
		down = st.Lanes[rpc.LaneEdge].MCPDown
		for _, r := range st.Lanes[rpc.LaneEdge].MCPServers {
			reports[r.Server] = r
		}
	}
	c.Close()
	var out []mcpListEntry
	for _, en := range byName {
		if running {
			en.State = "up"
			if i := strings.Index(down, en.Server+" ("); i >= 0 && (i == 0 || down[i-2:i] == ", ") {
				rest := down[i+len(en.Server)+2:]
				if j := strings.Index(rest, "), "); j >= 0 {
					rest = rest[:j+1]
				}
				en.State = strings.TrimSuffix(rest, ")")
			}
			if r, ok := reports[en.Server]; ok {
				en.Pinned, en.Offered, en.Withheld, en.Truncated = r.Pinned, r.Offered, r.Withheld, r.Truncated
			}
		}
		out = append(out, en)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Server < out[j].Server })
	if *asJSON {
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintln(e.stdout, string(b))
		return nil
	}
	if len(out) == 0 {
		fmt.Fprintf(e.stdout, "no MCP servers declared for %s in choird's copy of its repos (run choirctl agent build %s after a change)\n", agent, agent)
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tTRANSPORT\tFROM\tTARGET\tSECRETS\tSTATE")
	for _, en := range out {
		if en.Error != "" {
			fmt.Fprintf(tw, "%s\t-\t%s\tinvalid: %s\t\n", en.Server, en.From, en.Error)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", en.Server, en.Transport, en.From, en.Target, en.Secrets, en.State)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, en := range out {
		if !running || en.Error != "" {
			continue
		}
		more := ""
		if en.Truncated {
			more = " (lists cut to fit the agent's report)"
		}
		fmt.Fprintf(e.stdout, "\n%s%s\n  pinned:   %s\n  offered:  %s\n", en.Server, more, orNone(en.Pinned, "none (the image has no pins)"), orNone(en.Offered, "none"))
		if len(en.Withheld) > 0 {
			fmt.Fprintf(e.stdout, "  withheld: %s (accept with choirctl agent build %s, then choirctl agent update %s)\n", strings.Join(en.Withheld, " "), agent, agent)
		}
	}
	return nil
}

func orNone(list []string, none string) string {
	if len(list) == 0 {
		return none
	}
	return strings.Join(list, " ")
}
