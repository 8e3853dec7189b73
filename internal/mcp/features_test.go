package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"choir/internal/mcp"
	"choir/testkit/mcptest"
)

func TestCallToolContentProgressAndLogs(t *testing.T) {
	srv := &mcptest.Server{Tools: []json.RawMessage{echoTool}, Handle: func(c *mcptest.Call) (any, *mcptest.Error) {
		c.Progress(1, 3, "reading")
		c.Log("warning", map[string]any{"disk": "almost full"})
		c.Progress(3, 3, "done")
		if c.Name == "fail" {
			return map[string]any{"content": []any{map[string]any{"type": "text", "text": "no such file"}}, "isError": true}, nil
		}
		return json.RawMessage(`{"content":[
			{"type":"text","text":"hello"},
			{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"},
			{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"},
			{"type":"resource_link","uri":"file:///a.txt","name":"a.txt","mimeType":"text/plain"},
			{"type":"resource","resource":{"uri":"file:///b.txt","mimeType":"text/plain","text":"bee"}},
			{"type":"hologram","depth":3}
		],"structuredContent":{"temperature":22.5}}`), nil
	}}
	var mu sync.Mutex
	var logs []mcp.LogMessage
	c := pipeServer(t, srv, mcp.Options{OnLog: func(l mcp.LogMessage) { mu.Lock(); logs = append(logs, l); mu.Unlock() }})
	ctx := testCtx(t)
	var progress []mcp.Progress
	res, err := c.CallTool(ctx, "echo", raw(`{}`), func(p mcp.Progress) { progress = append(progress, p) })
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	types := []string{}
	for _, b := range res.Content {
		types = append(types, b.Type)
	}
	if want := []string{"text", "image", "audio", "resource_link", "resource", "hologram"}; !reflect.DeepEqual(types, want) {
		t.Errorf("content types = %v; want %v", types, want)
	}
	if b := res.Content[1]; b.Data != "iVBORw0KGgo=" || b.MIMEType != "image/png" {
		t.Errorf("image block = %+v", b)
	}
	if b := res.Content[3]; b.URI != "file:///a.txt" || b.Name != "a.txt" {
		t.Errorf("resource_link block = %+v", b)
	}
	if b := res.Content[4]; b.Resource == nil || b.Resource.Text != "bee" || b.Resource.URI != "file:///b.txt" {
		t.Errorf("embedded resource block = %+v", b)
	}
	if b := res.Content[5]; string(b.Raw) != `{"type":"hologram","depth":3}` {
		t.Errorf("unknown block Raw = %s; want it kept as sent", b.Raw)
	}
	if string(res.StructuredContent) != `{"temperature":22.5}` || res.IsError {
		t.Errorf("structuredContent = %s, isError = %v", res.StructuredContent, res.IsError)
	}
	if want := []mcp.Progress{{Progress: 1, Total: 3, Message: "reading"}, {Progress: 3, Total: 3, Message: "done"}}; !reflect.DeepEqual(progress, want) {
		t.Errorf("progress = %+v; want %+v", progress, want)
	}
	mu.Lock()
	if len(logs) != 1 || logs[0].Level != "warning" || string(logs[0].Data) != `{"disk":"almost full"}` {
		t.Errorf("logs = %+v; want the server's warning", logs)
	}
	mu.Unlock()
	var meta struct {
		Meta struct {
			Token json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	calls := 0
	for _, m := range srv.Received() {
		if m.Method == "tools/call" {
			calls++
			json.Unmarshal(m.Params, &meta)
			if string(meta.Meta.Token) != string(m.ID) {
				t.Errorf("progressToken = %s; want the request id %s", meta.Meta.Token, m.ID)
			}
		}
	}
	res, err = c.CallTool(ctx, "fail", nil, nil)
	if err != nil || !res.IsError || res.Text() != "no such file" {
		t.Errorf("failing tool = %+v, %v; want isError with its text", res, err)
	}
	for _, m := range srv.Received() {
		if m.Method == "tools/call" && strings.Contains(string(m.Params), `"fail"`) && strings.Contains(string(m.Params), "progressToken") {
			t.Errorf("call without onProgress sent a progressToken: %s", m.Params)
		}
	}
}

func TestCancelledCallIsCancelledAtTheServer(t *testing.T) {
	started := make(chan struct{})
	serverSawCancel := make(chan struct{})
	srv := &mcptest.Server{Handle: func(c *mcptest.Call) (any, *mcptest.Error) {
		close(started)
		<-c.Ctx.Done()
		close(serverSawCancel)
		return nil, nil
	}}
	c := pipeServer(t, srv, mcp.Options{})
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		<-started
		cancel(errors.New("job 7 cancelled by the operator"))
	}()
	_, err := c.CallTool(ctx, "slow", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "job 7 cancelled by the operator") {
		t.Fatalf("CallTool = %v; want the cancellation's cause", err)
	}
	select {
	case <-serverSawCancel:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's handler was never cancelled")
	}
	ok := srv.WaitFor(10*time.Second, func(ms []mcptest.Message) bool {
		for _, m := range ms {
			if m.Method == "notifications/cancelled" && strings.Contains(string(m.Params), `"requestId":2`) &&
				strings.Contains(string(m.Params), "job 7 cancelled") {
				return true
			}
		}
		return false
	})
	if !ok {
		t.Errorf("no notifications/cancelled for request 2 with the reason; got %q", mcptest.Methods(srv.Received()))
	}
	// The connection is still good.
	if err := c.Ping(testCtx(t)); err != nil {
		t.Errorf("Ping after a cancelled call: %v", err)
	}
}

func TestPaginationAndListChanged(t *testing.T) {
	var tools []json.RawMessage
	for i := range 5 {
		tools = append(tools, raw(fmt.Sprintf(`{"name":"t%d","inputSchema":{"type":"object"}}`, i)))
	}
	changed := make(chan struct{}, 1)
	srv := &mcptest.Server{Tools: tools, PageSize: 2, Handle: func(c *mcptest.Call) (any, *mcptest.Error) {
		c.Notify("notifications/tools/list_changed", map[string]any{})
		return map[string]any{"content": []any{}}, nil
	}}
	c := pipeServer(t, srv, mcp.Options{OnToolsChanged: func() { changed <- struct{}{} }})
	ctx := testCtx(t)
	got, err := c.ListTools(ctx)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	var names []string
	for _, tl := range got {
		names = append(names, tl.Name)
	}
	if want := []string{"t0", "t1", "t2", "t3", "t4"}; !reflect.DeepEqual(names, want) {
		t.Errorf("ListTools names = %v; want %v", names, want)
	}
	pages := 0
	for _, m := range srv.Received() {
		if m.Method == "tools/list" {
			pages++
		}
	}
	if pages != 3 {
		t.Errorf("tools/list requests = %d; want 3 pages of 2", pages)
	}
	if _, err := c.CallTool(ctx, "t0", nil, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("OnToolsChanged not called after notifications/tools/list_changed")
	}
}

func TestPaginationLoopIsRefused(t *testing.T) {
	c, _, err := startRaw(t, mcp.Options{}, func(m rawMsg, send func(string)) bool {
		if m.Method == "tools/list" {
			send(result(m, `{"tools":[{"name":"a","inputSchema":{}}],"nextCursor":"same"}`))
		}
		return false
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ListTools(testCtx(t))
	if err == nil || !strings.Contains(err.Error(), `cursor "same" twice`) {
		t.Fatalf("ListTools = %v; want a refusal of the looping cursor", err)
	}
}

func TestElicitation(t *testing.T) {
	schema := `{"type":"object","properties":{
		"name":{"type":"string","title":"Name","default":"John Doe"},
		"age":{"type":"integer","default":30},
		"color":{"type":"string","oneOf":[{"const":"#f00","title":"Red"},{"const":"#0f0","title":"Green"}]},
		"ok":{"type":"boolean","default":true}},"required":["name"]}`
	ask := func(c *mcptest.Call) (any, *mcptest.Error) {
		r, err := c.Request("elicitation/create", json.RawMessage(`{"message":"Who are you?","requestedSchema":`+schema+`}`))
		if err != nil {
			return nil, &mcptest.Error{Code: -32603, Message: err.Error()}
		}
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": string(r)}}}, nil
	}
	t.Run("answered with the defaults", func(t *testing.T) {
		var got mcp.ElicitRequest
		var fields []mcp.Field
		c := pipeServer(t, &mcptest.Server{Handle: ask}, mcp.Options{Elicit: func(ctx context.Context, r mcp.ElicitRequest) (mcp.ElicitResult, error) {
			got = r
			fields, _ = r.Fields()
			d, err := r.Defaults()
			return mcp.ElicitResult{Action: mcp.ActionAccept, Content: d}, err
		}})
		res, err := c.CallTool(testCtx(t), "ask", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Text() != `{"action":"accept","content":{"age":30,"name":"John Doe","ok":true}}` {
			t.Errorf("the server got %s; want accept with the defaults", res.Text())
		}
		if got.Mode != "form" || got.Message != "Who are you?" {
			t.Errorf("ElicitRequest = %+v; want form mode and the message", got)
		}
		var names []string
		for _, f := range fields {
			names = append(names, f.Name)
		}
		if !reflect.DeepEqual(names, []string{"name", "age", "color", "ok"}) || !fields[0].Required || fields[1].Required ||
			!reflect.DeepEqual(fields[2].Enum, []string{"#f00", "#0f0"}) {
			t.Errorf("Fields = %+v; want the schema's fields in order with required and enum", fields)
		}
	})
	t.Run("declined without Options.Elicit", func(t *testing.T) {
		srv := &mcptest.Server{Handle: ask}
		c := pipeServer(t, srv, mcp.Options{})
		res, err := c.CallTool(testCtx(t), "ask", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Text() != `{"action":"decline"}` {
			t.Errorf("the server got %s; want decline", res.Text())
		}
	})
	t.Run("capability declared only with Options.Elicit", func(t *testing.T) {
		srv := &mcptest.Server{}
		pipeServer(t, srv, mcp.Options{Elicit: func(context.Context, mcp.ElicitRequest) (mcp.ElicitResult, error) {
			return mcp.ElicitResult{}, nil
		}})
		if p := string(srv.Received()[0].Params); !strings.Contains(p, `"elicitation":{"form":{}}`) || strings.Contains(p, "sampling") {
			t.Errorf("initialize params = %s; want elicitation (form) and no sampling", p)
		}
	})
}

func TestSamplingDeclinedAndPingAnswered(t *testing.T) {
	srv := &mcptest.Server{Handle: func(c *mcptest.Call) (any, *mcptest.Error) {
		_, serr := c.Request("sampling/createMessage", map[string]any{"messages": []any{}, "maxTokens": 10})
		pong, perr := c.Request("ping", nil)
		_, rerr := c.Request("roots/list", nil)
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("%v|%s %v|%v", serr, pong, perr, rerr)}}}, nil
	}}
	c := pipeServer(t, srv, mcp.Options{})
	res, err := c.CallTool(testCtx(t), "x", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `client error -1: sampling declined: this client is not configured to sample for this server|{} <nil>|client error -32601: method "roots/list" is not supported by this client`
	if res.Text() != want {
		t.Errorf("server saw %q; want %q", res.Text(), want)
	}
}

func TestSamplingAnswered(t *testing.T) {
	srv := &mcptest.Server{Handle: func(c *mcptest.Call) (any, *mcptest.Error) {
		r, err := c.Request("sampling/createMessage", json.RawMessage(`{"messages":[{"role":"user","content":{"type":"text","text":"2+2?"}}],"maxTokens":10}`))
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("%s %v", r, err)}}}, nil
	}}
	var asked mcp.SampleRequest
	c := pipeServer(t, srv, mcp.Options{Sample: func(ctx context.Context, r mcp.SampleRequest) (mcp.SampleResult, error) {
		asked = r
		return mcp.SampleResult{Content: mcp.Content{Type: "text", Text: "4"}, Model: "fake-1"}, nil
	}})
	res, err := c.CallTool(testCtx(t), "x", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"role":"assistant","content":{"type":"text","text":"4"},"model":"fake-1"} <nil>`; res.Text() != want {
		t.Errorf("server saw %s; want %s", res.Text(), want)
	}
	if asked.MaxTokens != 10 || len(asked.Messages) != 1 || asked.Messages[0].Role != "user" {
		t.Errorf("SampleRequest = %+v", asked)
	}
}

func TestResourcesAndPrompts(t *testing.T) {
	srv := &mcptest.Server{
		Resources: []json.RawMessage{raw(`{"uri":"file:///notes.md","name":"notes.md","mimeType":"text/markdown"}`)},
		Read: func(uri string) (any, *mcptest.Error) {
			if uri != "file:///notes.md" {
				return nil, &mcptest.Error{Code: -32002, Message: "Resource not found"}
			}
			return []any{map[string]any{"uri": uri, "mimeType": "text/markdown", "text": "# Notes"}}, nil
		},
		Prompts: []json.RawMessage{raw(`{"name":"review","arguments":[{"name":"file","required":true}]}`)},
		GetPrompt: func(name string, args map[string]string) (any, *mcptest.Error) {
			return map[string]any{"messages": []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "Review " + args["file"]}}}}, nil
		},
	}
	c := pipeServer(t, srv, mcp.Options{})
	ctx := testCtx(t)
	rs, err := c.ListResources(ctx)
	if err != nil || len(rs) != 1 || rs[0].URI != "file:///notes.md" || rs[0].MIMEType != "text/markdown" {
		t.Fatalf("ListResources = %+v, %v", rs, err)
	}
	contents, err := c.ReadResource(ctx, "file:///notes.md")
	if err != nil || len(contents) != 1 || contents[0].Text != "# Notes" {
		t.Fatalf("ReadResource = %+v, %v", contents, err)
	}
	var rpcErr *mcp.RPCError
	if _, err := c.ReadResource(ctx, "file:///nope"); !errors.As(err, &rpcErr) || rpcErr.Code != -32002 {
		t.Errorf("ReadResource of a missing resource = %v; want RPCError -32002", err)
	}
	ps, err := c.ListPrompts(ctx)
	if err != nil || len(ps) != 1 || ps[0].Name != "review" || !ps[0].Arguments[0].Required {
		t.Fatalf("ListPrompts = %+v, %v", ps, err)
	}
	p, err := c.GetPrompt(ctx, "review", map[string]string{"file": "main.go"})
	if err != nil || len(p.Messages) != 1 || p.Messages[0].Content.Text != "Review main.go" {
		t.Fatalf("GetPrompt = %+v, %v", p, err)
	}
	if err := c.SetLogLevel(ctx, "debug"); err != nil {
		t.Errorf("SetLogLevel: %v", err)
	}
}

func TestVersionNegotiation(t *testing.T) {
	t.Run("older supported version accepted", func(t *testing.T) {
		c := pipeServer(t, &mcptest.Server{Protocol: "2025-06-18"}, mcp.Options{})
		if c.ProtocolVersion() != "2025-06-18" {
			t.Errorf("ProtocolVersion = %q; want 2025-06-18", c.ProtocolVersion())
		}
	})
	t.Run("unknown version refused", func(t *testing.T) {
		_, _, err := startRaw(t, mcp.Options{}, func(m rawMsg, send func(string)) bool {
			if m.Method == "initialize" {
				send(result(m, `{"protocolVersion":"2024-11-05","capabilities":{},"serverInfo":{"name":"old","version":"1"}}`))
				return true
			}
			return false
		})
		if err == nil || !strings.Contains(err.Error(), `the server speaks protocol version "2024-11-05"`) || !strings.Contains(err.Error(), "2025-11-25") {
			t.Fatalf("Connect to a 2024-11-05 server = %v; want a refusal naming both versions", err)
		}
	})
	t.Run("Options.Versions restricts what is accepted", func(t *testing.T) {
		_, _, err := startRaw(t, mcp.Options{Versions: []string{"2025-11-25"}}, func(m rawMsg, send func(string)) bool {
			if m.Method == "initialize" {
				send(result(m, `{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}`))
				return true
			}
			return false
		})
		if err == nil {
			t.Fatal("Connect accepted 2025-06-18 though Options.Versions names only 2025-11-25")
		}
	})
}

// A server announcing list changes in a burst gets them folded: one
// OnToolsChanged call at a time, the burst read as one more call.
func TestToolsChangedBurstIsFolded(t *testing.T) {
	firstRuns := make(chan struct{})
	srv := &mcptest.Server{Handle: func(c *mcptest.Call) (any, *mcptest.Error) {
		c.Notify("notifications/tools/list_changed", map[string]any{})
		<-firstRuns
		for range 999 {
			c.Notify("notifications/tools/list_changed", map[string]any{})
		}
		return map[string]any{"content": []any{}}, nil
	}}
	release := make(chan struct{})
	calls := make(chan int, 10)
	var n, running atomic.Int32
	c := pipeServer(t, srv, mcp.Options{OnToolsChanged: func() {
		if running.Add(1) > 1 {
			t.Error("OnToolsChanged called while another call runs")
		}
		k := int(n.Add(1))
		calls <- k
		if k == 1 {
			close(firstRuns)
			<-release
		}
		running.Add(-1)
	}})
	if _, err := c.CallTool(testCtx(t), "burst", nil, nil); err != nil {
		t.Fatal(err)
	}
	// The 999 came while the first call ran and were read before the
	// answer: they are folded into one pending call.
	for want := 1; want <= 2; want++ {
		select {
		case k := <-calls:
			if k != want {
				t.Fatalf("call %d; want %d", k, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("OnToolsChanged call %d never came", want)
		}
		if want == 1 {
			close(release)
		}
	}
	c.Close()
	if got := n.Load(); got != 2 {
		t.Errorf("OnToolsChanged called %d times for a burst of 1000; want 2", got)
	}
}
