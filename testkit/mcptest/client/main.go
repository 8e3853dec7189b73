// Command client is the MCP client the official conformance suite drives
// in choir's tests: it runs internal/mcp (not a second implementation)
// against the suite's test server.
//
// The suite starts it as `client <server-url>` with the scenario's name in
// MCP_CONFORMANCE_SCENARIO. It connects over Streamable HTTP, lists the
// tools, and calls each with arguments made from its input schema;
// elicitations are accepted with the form's defaults (SEP-1034). What it
// did goes to stdout, protocol warnings to stderr; the exit status is 1 when
// the client failed.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"choir/internal/mcp"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: client <server-url>   (scenario in MCP_CONFORMANCE_SCENARIO)")
		os.Exit(2)
	}
	url := os.Args[len(os.Args)-1]
	if err := run(ctx, url, os.Getenv("MCP_CONFORMANCE_SCENARIO"), os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, url, scenario string, stdout, stderr io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 25*time.Second)
	defer cancel()
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	opts := mcp.Options{
		ClientName:    "choir-conformance-client",
		ClientVersion: "1.0.0",
		Logger:        log,
		OnLog: func(m mcp.LogMessage) {
			fmt.Fprintf(stdout, "server log %s: %s\n", m.Level, m.Data)
		},
		Elicit: func(ctx context.Context, req mcp.ElicitRequest) (mcp.ElicitResult, error) {
			content, err := req.Defaults()
			if err != nil {
				return mcp.ElicitResult{}, err
			}
			fmt.Fprintf(stdout, "elicitation %q: accepting the defaults %v\n", req.Message, content)
			return mcp.ElicitResult{Action: mcp.ActionAccept, Content: content}, nil
		},
	}
	fmt.Fprintf(stdout, "scenario %q, server %s\n", scenario, url)
	c, err := mcp.Connect(ctx, mcp.NewHTTP(url, nil, nil), opts)
	if err != nil {
		return err
	}
	defer c.Close()
	fmt.Fprintf(stdout, "connected to %s %s, protocol %s\n", c.ServerInfo().Name, c.ServerInfo().Version, c.ProtocolVersion())
	tools, err := c.ListTools(ctx)
	if err != nil {
		return err
	}
	for _, tool := range tools {
		args, err := argumentsFor(tool.InputSchema)
		if err != nil {
			return fmt.Errorf("tool %q: %w", tool.Name, err)
		}
		res, err := c.CallTool(ctx, tool.Name, args, func(p mcp.Progress) {
			fmt.Fprintf(stdout, "progress %v/%v %s\n", p.Progress, p.Total, p.Message)
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "called %s(%s): isError=%v %q\n", tool.Name, args, res.IsError, res.Text())
	}
	return nil
}

// argumentsFor fills every property of an object schema with a value of
// its type (its default when it has one).
func argumentsFor(schema json.RawMessage) (json.RawMessage, error) {
	var s struct {
		Properties map[string]struct {
			Type    string          `json:"type"`
			Default json.RawMessage `json:"default"`
			Enum    []any           `json:"enum"`
		} `json:"properties"`
	}
	if len(schema) > 0 {
		if err := json.Unmarshal(schema, &s); err != nil {
			return nil, fmt.Errorf("input schema: %w", err)
		}
	}
	args := map[string]any{}
	for name, p := range s.Properties {
		switch {
		case p.Default != nil:
			args[name] = p.Default
		case len(p.Enum) > 0:
			args[name] = p.Enum[0]
		case p.Type == "number" || p.Type == "integer":
			args[name] = len(name) + 1
		case p.Type == "boolean":
			args[name] = true
		case p.Type == "array":
			args[name] = []any{}
		case p.Type == "object":
			args[name] = map[string]any{}
		default:
			args[name] = "test"
		}
	}
	return json.Marshal(args)
}
