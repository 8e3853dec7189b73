package mcp_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"choir/internal/mcp"
	"choir/testkit/mcptest"
)

// Round trip of one tools/call (echo of a small object) against an
// in-process fake server: the client's framing, dispatch and decoding plus
// the transport, without a real tool behind it.
//
//	go test -run '^$' -bench CallTool -benchmem ./internal/mcp

func benchCall(b *testing.B, c *mcp.Client) {
	ctx := context.Background()
	args := json.RawMessage(`{"message":"hello"}`)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := c.CallTool(ctx, "echo", args, nil)
		if err != nil || len(res.Content) != 1 {
			b.Fatalf("CallTool = %+v, %v", res, err)
		}
	}
}

func BenchmarkCallToolStdioPipes(b *testing.B) {
	benchCall(b, pipeServer(b, &mcptest.Server{}, mcp.Options{}))
}

func BenchmarkCallToolStdioProcess(b *testing.B) {
	c, err := mcp.Connect(context.Background(), mcp.NewStdio(serverCmd(b, "fake"), nil), mcp.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	benchCall(b, c)
}

func benchHTTP(b *testing.B, srv *mcptest.Server) {
	ts := httptest.NewServer(srv)
	defer ts.Close()
	c, err := mcp.Connect(context.Background(), mcp.NewHTTP(ts.URL+"/mcp", nil, nil), mcp.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	benchCall(b, c)
}

func BenchmarkCallToolHTTPJSON(b *testing.B) { benchHTTP(b, &mcptest.Server{Sessions: true}) }
func BenchmarkCallToolHTTPSSE(b *testing.B) {
	benchHTTP(b, &mcptest.Server{Sessions: true, SSE: true})
}
