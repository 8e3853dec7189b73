package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"time"

	"choir/internal/mcp"
	"choir/internal/mcpdecl"
)

// ListArg, as choir-agent's first argument, runs ListMain: what choird's
// build runs in a throwaway container of a new image to pin its MCP tool
// lists (choird/build/mcp_pin.go).
const ListArg = "--choir-mcp-list"

// Listing is ListMain's output: the tools of every server it could list,
// and why each other one could not be.
type Listing struct {
	Pins   mcpdecl.Pins      `json:"pins"`
	Errors map[string]string `json:"errors,omitempty"`
}

// ListMain starts (or connects to) every server declared in dir, lists its
// tools and writes a Listing as one JSON line to stdout. Secrets are not
// available here: a variable or header that names one is left out, so a
// server that needs its secret to list its tools is reported in Errors.
// The exit status is 0 when the listing was written.
func ListMain(dir string, stdout, stderr io.Writer) int {
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	out := Listing{Pins: mcpdecl.Pins{}, Errors: map[string]string{}}
	decls, err := mcpdecl.LoadDir(dir)
	if err != nil {
		log.Error("MCP declarations", "error", err.Error())
		return 1
	}
	o := dialOptions{Secret: func(string) (string, bool) { return "", false }, Workspace: "/tmp"}
	for _, d := range decls {
		d := withoutSecrets(d)
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
					out.Pins[d.Name][def.Name] = mcpdecl.Pinned{Hash: mcpdecl.ToolHash(def.Raw), Def: def.Raw}
				}
			}
		}
		cancel()
		if err != nil {
			out.Errors[d.Name] = err.Error()
		}
	}
	b, _ := json.Marshal(out)
	stdout.Write(append(b, '\n'))
	return 0
}

// withoutSecrets is d with the values that name a secret left out.
func withoutSecrets(d *mcpdecl.Decl) *mcpdecl.Decl {
	c := *d
	c.Env, c.Headers = map[string]mcpdecl.Value{}, map[string]mcpdecl.Value{}
	for k, v := range d.Env {
		if v.Secret == "" {
			c.Env[k] = v
		}
	}
	for k, v := range d.Headers {
		if v.Secret == "" {
			c.Headers[k] = v
		}
	}
	return &c
}
