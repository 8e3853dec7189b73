package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"choir/internal/mcp"
)

func result(m rawMsg, r string) string {
	return `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + r + `}`
}

// Servers that misbehave on stdio: the client must never hang, must say
// what went wrong, and must keep working where the protocol allows.
func TestHostileStdioServers(t *testing.T) {
	okCall := `{"content":[{"type":"text","text":"ok"}]}`
	tests := []struct {
		name    string
		opts    mcp.Options
		respond func(m rawMsg, send func(string)) bool
		// wantErr is a part of CallTool's error; "" means the call succeeds.
		wantErr string
	}{
		{
			name: "garbage lines before the answer are skipped",
			respond: func(m rawMsg, send func(string)) bool {
				if m.Method == "tools/call" {
					send("Server starting on port 3000...")
					send("{not json")
					send(`{"jsonrpc":"1.0","id":` + string(m.ID) + `,"result":{}}`)
					send(`{"jsonrpc":"2.0"}`)
					send("")
					send(result(m, okCall))
				}
				return false
			},
		},
		{
			name: "a flood of garbage is skipped and logged only so often",
			respond: func(m rawMsg, send func(string)) bool {
				if m.Method == "tools/call" {
					for i := range 500 {
						send(fmt.Sprintf("debug line %d", i))
					}
					send(result(m, okCall))
				}
				return false
			},
		},
		{
			name: "answers to unknown ids are ignored, the right one is taken",
			respond: func(m rawMsg, send func(string)) bool {
				if m.Method == "tools/call" {
					send(`{"jsonrpc":"2.0","id":999,"result":{"content":[]}}`)
					send(`{"jsonrpc":"2.0","id":"` + string(m.ID) + `","result":{"content":[]}}`)
					send(result(m, okCall))
				}
				return false
			},
		},
		{
			name: "a server that never answers times out and is told",
			opts: mcp.Options{RequestTimeout: 300 * time.Millisecond},
			respond: func(m rawMsg, send func(string)) bool {
				return false
			},
			wantErr: "no answer within 300ms (Options.RequestTimeout)",
		},
		{
			name: "an answer over the size limit ends the connection",
			opts: mcp.Options{MaxMessageBytes: 1024},
			respond: func(m rawMsg, send func(string)) bool {
				if m.Method == "tools/call" {
					send(result(m, `{"content":[{"type":"text","text":"`+strings.Repeat("x", 4096)+`"}]}`))
				}
				return false
			},
			wantErr: "larger than 1024 bytes (Options.MaxMessageBytes)",
		},
		{
			name: "a result that is not a tool result",
			respond: func(m rawMsg, send func(string)) bool {
				if m.Method == "tools/call" {
					send(result(m, `{"content":"not a list"}`))
				}
				return false
			},
			wantErr: "the server's result does not decode",
		},
		{
			name: "a response with neither result nor error",
			respond: func(m rawMsg, send func(string)) bool {
				if m.Method == "tools/call" {
					send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `}`)
				}
				return false
			},
			wantErr: "neither result nor error",
		},
		{
			name: "a JSON-RPC error is an *RPCError",
			respond: func(m rawMsg, send func(string)) bool {
				if m.Method == "tools/call" {
					send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32602,"message":"Unknown tool: nope"}}`)
				}
				return false
			},
			wantErr: "JSON-RPC error -32602: Unknown tool: nope",
		},
		{
			name: "a server that closes its output mid-call",
			respond: func(m rawMsg, send func(string)) bool {
				if m.Method == "tools/call" {
					panic(errClose)
				}
				return false
			},
			wantErr: "closed its output",
		},
		{
			name: "an answer nested too deep is refused at once",
			respond: func(m rawMsg, send func(string)) bool {
				if m.Method == "tools/call" {
					send(result(m, `{"content":[],"structuredContent":`+strings.Repeat(`{"a":`, 100)+`1`+strings.Repeat(`}`, 100)+`}`))
				}
				return false
			},
			wantErr: "the server's answer was refused: line 1:",
		},
		{
			name: "an answer with invalid UTF-8 is refused at once",
			respond: func(m rawMsg, send func(string)) bool {
				if m.Method == "tools/call" {
					send(result(m, "{\"content\":[{\"type\":\"text\",\"text\":\"caf\xe9\"}]}"))
				}
				return false
			},
			wantErr: "JSON text must be valid UTF-8",
		},
		{
			name: "a batch of responses (2025-03-26) is read",
			respond: func(m rawMsg, send func(string)) bool {
				if m.Method == "tools/call" {
					send(`[` + `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}},` + result(m, okCall) + `]`)
				}
				return false
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &logRecorder{}
			tt.opts.Logger = slogOf(logs)
			respond := func(m rawMsg, send func(string)) (handled bool) {
				defer func() {
					if r := recover(); r == errClose {
						closeOutput(send)
						handled = true
					}
				}()
				return tt.respond(m, send)
			}
			c, srv, err := startRaw(t, tt.opts, respond)
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if tt.opts.RequestTimeout > 0 {
				ctx = context.Background() // no deadline: Options.RequestTimeout applies
			}
			res, err := c.CallTool(ctx, "t", nil, nil)
			if tt.wantErr == "" {
				if err != nil || res.Text() != "ok" {
					t.Fatalf("CallTool = %+v, %v; want the text ok", res, err)
				}
				if strings.Contains(tt.name, "garbage lines") && len(logs.all()) < 4 {
					t.Errorf("warnings logged = %q; want one per line that is not JSON-RPC 2.0", logs.all())
				}
				if strings.Contains(tt.name, "flood") && len(logs.all()) != 21 {
					t.Errorf("%d warnings logged for 500 garbage lines; want 20 and one saying the rest are not logged", len(logs.all()))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("CallTool error = %v; want it to contain %q", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), "mcp stdio server (pipes): tools/call") {
				t.Errorf("CallTool error = %v; want it to name the server and the method", err)
			}
			if strings.Contains(tt.name, "never answers") {
				srv.waitFor(t, "notifications/cancelled for the call", func(m rawMsg) bool {
					var p struct {
						RequestID json.RawMessage `json:"requestId"`
						Reason    string          `json:"reason"`
					}
					json.Unmarshal(m.Params, &p)
					return m.Method == "notifications/cancelled" && string(p.RequestID) == "2" && strings.Contains(p.Reason, "Options.RequestTimeout")
				})
			}
			if strings.Contains(tt.name, "ends the connection") || strings.Contains(tt.name, "closes its output") {
				select {
				case <-c.Done():
				case <-time.After(10 * time.Second):
					t.Fatal("Done() not closed after the connection ended")
				}
				if !errors.Is(c.Err(), mcp.ErrClosed) {
					t.Errorf("Err() = %v; want ErrClosed", c.Err())
				}
				if _, err := c.ListTools(ctx); !errors.Is(err, mcp.ErrClosed) {
					t.Errorf("ListTools after the end = %v; want ErrClosed", err)
				}
			}
			var rpcErr *mcp.RPCError
			if strings.Contains(tt.name, "*RPCError") && (!errors.As(err, &rpcErr) || rpcErr.Code != -32602) {
				t.Errorf("errors.As(%v, *RPCError) = %v; want code -32602", err, rpcErr)
			}
		})
	}
}
