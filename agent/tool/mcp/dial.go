package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"choir/agent/sandbox"
	"choir/internal/mcp"
	"choir/internal/mcpdecl"
)

// Options are what a connection needs beyond its declaration.
type dialOptions struct {
	// Secret returns a granted secret's value by its secrets.json name.
	Secret func(name string) (string, bool)
	// Workspace is the stdio server's working directory.
	Workspace string
	// HTTP is the client for http servers (nil: a default one).
	HTTP *http.Client
}

// client adapts *mcp.Client to conn.
type client struct {
	*mcp.Client
	stop func() // ends the process group of a stdio server
	pid  func() int
}

func (c client) CallTool(ctx context.Context, name string, args json.RawMessage) (*mcp.CallResult, error) {
	onProgress, _ := ctx.Value(progressKey{}).(func(mcp.Progress))
	return c.Client.CallTool(ctx, name, args, onProgress)
}

func (c client) Close() error {
	err := c.Client.Close()
	if c.stop != nil {
		c.stop()
	}
	return err
}

// maxMessage caps one message from a server: a tool result is cut to
// tool.OutputCap anyway.
const maxMessage = 8 << 20

// dial starts a stdio server as a tool process, or connects to an http
// server, and runs initialize.
func (o dialOptions) dial(ctx context.Context, d *mcpdecl.Decl, h hooks) (conn, error) {
	opts := mcp.Options{
		ClientName: "choir", Logger: h.log, MaxMessageBytes: maxMessage, RequestTimeout: -1,
		OnToolsChanged: h.toolsChanged, Elicit: h.elicit, Sample: h.sample,
		OnLog: func(m mcp.LogMessage) {
			h.log.Info("MCP server log", "level", m.Level, "logger", m.Logger, "data", clip(string(m.Data), 2048))
		},
	}
	switch d.Transport {
	case mcpdecl.Stdio:
		// Said here: the launcher that executes it could only say
		// "no such file or directory".
		if _, err := os.Stat(d.Command); err != nil {
			return nil, fmt.Errorf("the command of %s: %w (it must be a path inside the agent image)", d.File, err)
		}
		env := sandbox.Env()
		for _, name := range sortedKeys(d.Env) {
			v, err := d.Env[name].Resolve(o.Secret)
			if err != nil {
				return nil, fmt.Errorf("env %s: %w", name, err)
			}
			env = setEnv(env, name, v)
		}
		// The process lives as long as the connection; the supervisor's
		// context is not the dial's, so the command is not tied to ctx.
		cmd := sandbox.Command(context.Background(), d.Command, d.Args...)
		cmd.Env = env
		cmd.Dir = o.Workspace
		cmd.SysProcAttr.Setpgid = true
		end := sandbox.Begin()
		t := mcp.NewStdio(cmd, func(line string) { h.log.Info("MCP server stderr", "line", line) })
		stop := func() {
			if pid := t.Pid(); pid > 0 {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
			end()
		}
		c, err := mcp.Connect(ctx, t, opts)
		if err != nil {
			stop()
			return nil, err
		}
		// A server that exits on its own leaves no children behind.
		go func() { <-c.Done(); stop() }()
		return client{Client: c, stop: stop, pid: t.Pid}, nil
	case mcpdecl.HTTP:
		hdr := http.Header{}
		for _, name := range sortedKeys(d.Headers) {
			v, err := d.Headers[name].Resolve(o.Secret)
			if err != nil {
				return nil, fmt.Errorf("header %s: %w", name, err)
			}
			hdr.Set(name, v)
		}
		hc := o.HTTP
		if hc == nil {
			hc = &http.Client{Transport: &http.Transport{Proxy: nil, ResponseHeaderTimeout: 2 * time.Minute}}
		}
		c, err := mcp.Connect(ctx, mcp.NewHTTP(d.URL, hdr, hc), opts)
		if err != nil {
			return nil, err
		}
		return client{Client: c}, nil
	}
	return nil, fmt.Errorf("transport %q", d.Transport)
}

func setEnv(env []string, name, value string) []string {
	for i, kv := range env {
		if strings.HasPrefix(kv, name+"=") {
			env[i] = name + "=" + value
			return env
		}
	}
	return append(env, name+"="+value)
}
