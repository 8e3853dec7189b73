package mcp_test

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"choir/internal/mcp"
	"choir/testkit/mcptest"
)

// TestReferenceServerOverStdio runs the client against the official
// reference server (npm @modelcontextprotocol/server-everything, pinned):
// interoperability with an implementation this package did not write.
func TestReferenceServerOverStdio(t *testing.T) {
	ev := mcptest.FindEverything(t)
	elicited := make(chan mcp.ElicitRequest, 1)
	stderr := &lines{}
	ctx := testCtx(t)
	c, err := mcp.Connect(ctx, mcp.NewStdio(exec.Command(ev.Node, ev.Script, "stdio"), stderr.add), mcp.Options{
		Elicit: func(ctx context.Context, r mcp.ElicitRequest) (mcp.ElicitResult, error) {
			elicited <- r
			return mcp.ElicitResult{Action: mcp.ActionDecline}, nil
		},
	})
	if err != nil {
		t.Fatalf("Connect: %v (stderr %q)", err, stderr.all())
	}
	defer c.Close()
	if c.ProtocolVersion() != mcp.Version20251125 {
		t.Errorf("ProtocolVersion = %q; want 2025-11-25", c.ProtocolVersion())
	}
	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	for _, want := range []string{"echo", "get-sum", "get-tiny-image", "get-structured-content", "trigger-long-running-operation", "trigger-elicitation-request"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools = %v; want %s among them", names, want)
		}
	}

	t.Run("text", func(t *testing.T) {
		res, err := c.CallTool(ctx, "echo", raw(`{"message":"hello from choir"}`), nil)
		if err != nil || !strings.Contains(res.Text(), "hello from choir") || res.IsError {
			t.Fatalf("echo = %+v, %v", res, err)
		}
	})
	t.Run("image", func(t *testing.T) {
		res, err := c.CallTool(ctx, "get-tiny-image", raw(`{}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(res.Content, func(b mcp.Content) bool { return b.Type == "image" })
		if i < 0 || res.Content[i].MIMEType != "image/png" || res.Content[i].Data == "" {
			t.Fatalf("get-tiny-image content = %+v; want a PNG image block", res.Content)
		}
	})
	t.Run("structured content", func(t *testing.T) {
		res, err := c.CallTool(ctx, "get-structured-content", raw(`{"location":"New York"}`), nil)
		if err != nil || !strings.Contains(string(res.StructuredContent), "temperature") {
			t.Fatalf("get-structured-content = %+v, %v; want structuredContent with a temperature", res, err)
		}
	})
	t.Run("invalid arguments", func(t *testing.T) {
		res, err := c.CallTool(ctx, "get-sum", raw(`{"a":"one"}`), nil)
		var rpcErr *mcp.RPCError
		if !(err == nil && res.IsError) && !errors.As(err, &rpcErr) {
			t.Fatalf("get-sum with a string = %+v, %v; want a tool error or an RPC error", res, err)
		}
	})
	t.Run("progress", func(t *testing.T) {
		var got []mcp.Progress
		res, err := c.CallTool(ctx, "trigger-long-running-operation", raw(`{"duration":0.2,"steps":2}`), func(p mcp.Progress) { got = append(got, p) })
		if err != nil || !strings.Contains(res.Text(), "completed") {
			t.Fatalf("long operation = %+v, %v", res, err)
		}
		if len(got) != 2 || got[1].Progress != 2 || got[1].Total != 2 {
			t.Errorf("progress = %+v; want 1/2 and 2/2", got)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		cctx, cancel := context.WithCancelCause(ctx)
		first := make(chan struct{}, 1)
		go func() {
			<-first
			cancel(errors.New("job cancelled"))
		}()
		_, err := c.CallTool(cctx, "trigger-long-running-operation", raw(`{"duration":60,"steps":600}`), func(mcp.Progress) {
			select {
			case first <- struct{}{}:
			default:
			}
		})
		if err == nil || !strings.Contains(err.Error(), "job cancelled") {
			t.Fatalf("cancelled call = %v; want the cancellation", err)
		}
		if err := c.Ping(ctx); err != nil {
			t.Errorf("Ping after the cancellation: %v", err)
		}
	})
	t.Run("elicitation", func(t *testing.T) {
		res, err := c.CallTool(ctx, "trigger-elicitation-request", raw(`{}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-elicited:
			if fields, err := r.Fields(); err != nil || len(fields) == 0 {
				t.Errorf("elicitation fields = %v, %v; want the form's fields", fields, err)
			}
		default:
			t.Fatal("the server's elicitation never reached Options.Elicit")
		}
		if !strings.Contains(strings.ToLower(res.Text()), "decline") {
			t.Errorf("result = %q; want the server to report the decline", res.Text())
		}
	})
	t.Run("resources and prompts", func(t *testing.T) {
		rs, err := c.ListResources(ctx)
		if err != nil || len(rs) == 0 {
			t.Fatalf("ListResources = %d, %v", len(rs), err)
		}
		contents, err := c.ReadResource(ctx, rs[0].URI)
		if err != nil || len(contents) == 0 || contents[0].URI != rs[0].URI {
			t.Fatalf("ReadResource(%s) = %+v, %v", rs[0].URI, contents, err)
		}
		ps, err := c.ListPrompts(ctx)
		if err != nil || len(ps) == 0 {
			t.Fatalf("ListPrompts = %+v, %v", ps, err)
		}
		i := slices.IndexFunc(ps, func(p mcp.Prompt) bool { return len(p.Arguments) == 0 })
		if i >= 0 {
			if _, err := c.GetPrompt(ctx, ps[i].Name, nil); err != nil {
				t.Errorf("GetPrompt(%s): %v", ps[i].Name, err)
			}
		}
	})
}

// BenchmarkReferenceServerStartToTools measures a stdio server's start to
// its tools being known: process start (Node), initialize, tools/list,
// Close.
//
//	go test -run '^$' -bench ReferenceServerStartToTools -benchtime 10x ./internal/mcp
func BenchmarkReferenceServerStartToTools(b *testing.B) {
	ev := mcptest.FindEverything(b)
	ctx := context.Background()
	for b.Loop() {
		c, err := mcp.Connect(ctx, mcp.NewStdio(exec.Command(ev.Node, ev.Script, "stdio"), nil), mcp.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if tools, err := c.ListTools(ctx); err != nil || len(tools) == 0 {
			b.Fatalf("ListTools = %d tools, %v", len(tools), err)
		}
		b.StopTimer()
		c.Close()
		b.StartTimer()
	}
}
