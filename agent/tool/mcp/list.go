package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"choir/agent/redact"
	"choir/internal/mcp"
	"choir/internal/mcpdecl"
)

// ListArg, as choir-agent's first argument, runs ListMain: what choird's
// build runs in a throwaway container of a new image to pin its MCP tool
// lists (choird/build/mcp_pin.go).
const ListArg = "--choir-mcp-list"

// SecretsArg, followed by a path, is ListMain's option naming the unix
// socket on which choird's build serves, once, the secrets the
// declarations name (a JSON object, secrets.json name -> value).
const SecretsArg = "--secrets="

// maxSecrets caps what ListMain reads from the secrets socket.
const maxSecrets = 1 << 20

// Listing is ListMain's output: the tools of every server it could list,
// why each other one could not be, and the tools left out of the pins
// because their definition holds a secret's value.
type Listing struct {
	Pins     mcpdecl.Pins        `json:"pins"`
	Errors   map[string]string   `json:"errors,omitempty"`
	Withheld map[string][]string `json:"withheld,omitempty"`
}

// ListMain starts (or connects to) every server declared in dir, lists its
// tools and writes a Listing as one JSON line to stdout. With SecretsArg it
// first reads the declarations' secrets from choird's socket, so a server
// that needs its credential just to list its tools (a Bearer header, a
// token in its environment) is listed as the agent will see it; each
// server gets only the values its own declaration names, as at run time.
// A value that names a secret not given is left out. The values never
// reach stdout or stderr (the engine keeps a container's output on disk):
// logs and errors are redacted, and a tool whose definition holds a value
// is withheld rather than pinned. The exit status is 0 when the listing was
// written.
func ListMain(dir string, args []string, stdout, stderr io.Writer) int {
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	secrets := map[string]string{}
	for _, a := range args {
		p, ok := strings.CutPrefix(a, SecretsArg)
		if !ok {
			log.Error("unknown argument", "arg", a)
			return 2
		}
		var err error
		if secrets, err = readSecrets(p); err != nil {
			log.Error("MCP secrets", "error", err.Error())
			return 1
		}
	}
	red := redact.New(secrets)
	log = slog.New(slog.NewJSONHandler(red.Writer(stderr), nil))
	decls, err := mcpdecl.LoadDir(dir)
	if err != nil {
		log.Error("MCP declarations", "error", err.Error())
		return 1
	}
	b, _ := json.Marshal(listTools(decls, secrets, red, log))
	stdout.Write(append(b, '\n'))
	return 0
}

// readSecrets reads the JSON object choird's build serves on the unix
// socket at path, then the connection ends.
func readSecrets(path string) (map[string]string, error) {
	c, err := net.DialTimeout("unix", path, 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("connect to the build's secrets socket: %w", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	data, err := io.ReadAll(io.LimitReader(c, maxSecrets+1))
	if err != nil {
		return nil, fmt.Errorf("read the build's secrets socket: %w", err)
	}
	if len(data) > maxSecrets {
		return nil, fmt.Errorf("the build's secrets socket sent more than %d bytes", maxSecrets)
	}
	var s map[string]string
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, errors.New("the build's secrets socket sent no JSON object of strings")
	}
	return s, nil
}

// listTools lists every declared server's tools, each server given the
// values of secrets its declaration names.
func listTools(decls []*mcpdecl.Decl, secrets map[string]string, red *redact.Redactor, log *slog.Logger) Listing {
	out := Listing{Pins: mcpdecl.Pins{}, Errors: map[string]string{}, Withheld: map[string][]string{}}
	o := dialOptions{Secret: func(n string) (string, bool) { v, ok := secrets[n]; return v, ok }, Workspace: "/tmp"}
	for _, d := range decls {
		d := withoutMissing(d, secrets)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		// The client declares what the agent's does (elicitation), since
		// servers list some tools only to clients that can answer them.
		decline := func(context.Context, mcp.ElicitRequest) (mcp.ElicitResult, error) {
			return mcp.ElicitResult{Action: mcp.ActionDecline}, nil
		}
		h := hooks{log: log.With("mcp_server", d.Name), elicit: decline}
		if d.Sampling != nil { // sampling too, for a server declared for it
			h.sample = func(context.Context, mcp.SampleRequest) (mcp.SampleResult, error) {
				return mcp.SampleResult{}, errors.New("no model during the build's tool listing")
			}
		}
		c, err := o.dial(ctx, d, h)
		if err == nil {
			var defs []mcp.Tool
			defs, err = c.ListTools(ctx)
			c.Close()
			if err == nil {
				out.Pins[d.Name] = map[string]mcpdecl.Pinned{}
				for _, def := range defs {
					if red.ContainsBytes(def.Raw) || red.Contains(def.Name) {
						out.Withheld[d.Name] = append(out.Withheld[d.Name], red.String(def.Name))
						continue
					}
					out.Pins[d.Name][def.Name] = mcpdecl.Pinned{Hash: mcpdecl.ToolHash(def.Raw), Def: def.Raw}
				}
			}
		}
		cancel()
		if err != nil {
			out.Errors[d.Name] = red.String(err.Error())
		}
	}
	return out
}

// withoutMissing is d with the values that name a secret not in secrets
// left out: a server that can list its tools without them still does.
func withoutMissing(d *mcpdecl.Decl, secrets map[string]string) *mcpdecl.Decl {
	c := *d
	c.Env, c.Headers = map[string]mcpdecl.Value{}, map[string]mcpdecl.Value{}
	for k, v := range d.Env {
		if _, ok := secrets[v.Secret]; v.Secret == "" || ok {
			c.Env[k] = v
		}
	}
	for k, v := range d.Headers {
		if _, ok := secrets[v.Secret]; v.Secret == "" || ok {
			c.Headers[k] = v
		}
	}
	return &c
}
