package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"choir/internal/mcp"
	"choir/testkit/mcptest"
)

// pipeServer serves srv over in-process pipes and connects a client to it.
func pipeServer(t testing.TB, srv *mcptest.Server, opts mcp.Options) *mcp.Client {
	t.Helper()
	cr, sw := io.Pipe() // server → client
	sr, cw := io.Pipe() // client → server
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.ServeStdio(sr, sw)
		sw.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := mcp.Connect(ctx, mcp.NewStdioPipes(cr, cw), opts)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() {
		c.Close()
		<-done
	})
	return c
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

var echoTool = raw(`{"name":"echo","description":"Echo the message","inputSchema":{"type":"object","properties":{"message":{"type":"string"}}}}`)
