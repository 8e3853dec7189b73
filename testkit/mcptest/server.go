// Package mcptest holds the pretend MCP servers of choir's tests and the
// official conformance suite's harness.
//
// Server is a scripted MCP server speaking the real wire (JSON-RPC 2.0 over
// newline-delimited stdio or Streamable HTTP, with JSON or SSE answers and
// sessions). It decodes what it receives itself and never imports
// internal/mcp, so a wrong field name cannot hide on both sides. It records
// every message it received.
//
// Conformance (conformance.go) finds the pinned suite that
// testkit/ci.sh installs with `npm ci --prefix testkit/mcptest`.
package mcptest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
)

// Message is one JSON-RPC message the server received.
type Message struct {
	Method string          // "" for a response
	ID     json.RawMessage // nil for a notification
	Params json.RawMessage
	Raw    json.RawMessage
	// HTTP only: the request's method and headers.
	HTTPMethod string
	Header     map[string]string // Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID, Accept
}

// Error is a JSON-RPC error a handler answers with.
type Error struct {
	Code    int
	Message string
}

// Call is one tools/call being served.
type Call struct {
	Name string
	Args json.RawMessage
	// Ctx ends when the client sends notifications/cancelled for the call
	// (or the connection ends).
	Ctx context.Context

	token json.RawMessage
	out   func(msg []byte) error
	srv   *Server
}

// Progress sends notifications/progress for the call (only if the client
// asked for progress with a token).
func (c *Call) Progress(progress, total float64, message string) {
	if c.token == nil {
		return
	}
	p := map[string]any{"progressToken": c.token, "progress": progress, "message": message}
	if total > 0 {
		p["total"] = total
	}
	c.out(notification("notifications/progress", p))
}

// Log sends notifications/message.
func (c *Call) Log(level string, data any) {
	c.out(notification("notifications/message", map[string]any{"level": level, "logger": "mcptest", "data": data}))
}

// Notify sends any notification on the call's stream.
func (c *Call) Notify(method string, params any) { c.out(notification(method, params)) }

// Request sends the client a request (elicitation/create,
// sampling/createMessage, ping) and waits for its answer: the result, or
// the client's error as an *Error.
func (c *Call) Request(method string, params any) (json.RawMessage, error) {
	return c.srv.request(c.Ctx, c.out, method, params)
}

// Server is a scripted MCP server. Set the fields before serving.
type Server struct {
	Name string
	// Protocol is the protocolVersion answered; "" echoes the client's.
	Protocol string
	// Tools are the tool objects of tools/list, as raw JSON.
	Tools []json.RawMessage
	// PageSize > 0 splits tools/list into pages with cursors.
	PageSize int
	// Handle answers tools/call; nil echoes the arguments as a text block.
	Handle func(c *Call) (result any, err *Error)
	// Resources are answered by resources/list; Read by resources/read.
	Resources []json.RawMessage
	Read      func(uri string) (contents any, err *Error)
	// Prompts are answered by prompts/list; GetPrompt by prompts/get.
	Prompts   []json.RawMessage
	GetPrompt func(name string, args map[string]string) (result any, err *Error)
	// Capabilities answered in initialize (default: tools with listChanged,
	// logging, resources, prompts).
	Capabilities map[string]any

	// HTTP: SSE answers every request with an event stream (else JSON);
	// Sessions hands out an Mcp-Session-Id and checks it; GetStream serves
	// GET (else 405).
	SSE       bool
	Sessions  bool
	GetStream bool

	mu       sync.Mutex
	cond     *sync.Cond
	received []Message
	nextID   int
	waiting  map[string]chan reply
	calls    map[string]context.CancelFunc
	session  string
	sessions int
	getOut   chan []byte
}

type reply struct {
	result json.RawMessage
	err    *Error
}

func (s *Server) init() {
	if s.cond == nil {
		s.cond = sync.NewCond(&s.mu)
		s.waiting = map[string]chan reply{}
		s.calls = map[string]context.CancelFunc{}
		s.getOut = make(chan []byte, 64)
	}
}

// Received returns a copy of every message received so far.
func (s *Server) Received() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.received...)
}

// WaitFor waits until cond holds for the messages received, or the
// deadline passes; it reports whether cond held.
func (s *Server) WaitFor(d time.Duration, cond func([]Message) bool) bool {
	s.mu.Lock()
	s.init()
	defer s.mu.Unlock()
	deadline := time.Now().Add(d)
	t := time.AfterFunc(d, func() { s.mu.Lock(); s.cond.Broadcast(); s.mu.Unlock() })
	defer t.Stop()
	for !cond(s.received) {
		if time.Now().After(deadline) {
			return false
		}
		s.cond.Wait()
	}
	return true
}

// Methods lists the methods received, in order ("" for responses).
func Methods(ms []Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Method)
	}
	return out
}

func (s *Server) record(m Message) {
	s.mu.Lock()
	s.init()
	s.received = append(s.received, m)
	s.cond.Broadcast()
	s.mu.Unlock()
}

// ServeStdio serves one client over newline-delimited JSON until r ends.
func (s *Server) ServeStdio(r io.Reader, w io.Writer) error {
	s.mu.Lock()
	s.init()
	s.mu.Unlock()
	var wmu sync.Mutex
	out := func(msg []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		_, err := w.Write(append(msg, '\n'))
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // first: calls in flight end with the connection
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		m, err := parse(sc.Bytes())
		if err != nil {
			out(errorResponse(nil, -32700, err.Error()))
			continue
		}
		s.record(m)
		if m.Method != "" && m.ID != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if msg := s.handle(ctx, m, out); msg != nil {
					out(msg)
				}
			}()
			continue
		}
		s.incoming(m)
	}
	return sc.Err()
}

func parse(line []byte) (Message, error) {
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return Message{}, fmt.Errorf("not JSON: %v", err)
	}
	if m.JSONRPC != "2.0" {
		return Message{}, fmt.Errorf("jsonrpc is %q, not 2.0", m.JSONRPC)
	}
	if string(m.ID) == "null" {
		m.ID = nil
	}
	return Message{Method: m.Method, ID: m.ID, Params: m.Params, Raw: append(json.RawMessage(nil), line...)}, nil
}

// incoming handles a notification or a response from the client.
func (s *Server) incoming(m Message) {
	switch {
	case m.Method == "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		json.Unmarshal(m.Params, &p)
		s.mu.Lock()
		cancel := s.calls[string(p.RequestID)]
		s.mu.Unlock()
		if cancel != nil {
			cancel()
		}
	case m.Method == "" && m.ID != nil:
		var r struct {
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		json.Unmarshal(m.Raw, &r)
		s.mu.Lock()
		ch := s.waiting[string(m.ID)]
		delete(s.waiting, string(m.ID))
		s.mu.Unlock()
		if ch != nil {
			if r.Error != nil {
				ch <- reply{err: &Error{r.Error.Code, r.Error.Message}}
			} else {
				ch <- reply{result: r.Result}
			}
		}
	}
}

func (s *Server) request(ctx context.Context, out func([]byte) error, method string, params any) (json.RawMessage, error) {
	s.mu.Lock()
	s.nextID++
	id := "\"srv-" + strconv.Itoa(s.nextID) + "\""
	ch := make(chan reply, 1)
	s.waiting[id] = ch
	s.mu.Unlock()
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": method, "params": params})
	if err := out(msg); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, fmt.Errorf("client error %d: %s", r.err.Code, r.err.Message)
		}
		return r.result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// handle answers one request; out carries messages sent before the answer.
func (s *Server) handle(ctx context.Context, m Message, out func([]byte) error) []byte {
	var p map[string]json.RawMessage
	json.Unmarshal(m.Params, &p)
	str := func(k string) string {
		var v string
		json.Unmarshal(p[k], &v)
		return v
	}
	switch m.Method {
	case "initialize":
		v := s.Protocol
		if v == "" {
			v = str("protocolVersion")
		}
		caps := s.Capabilities
		if caps == nil {
			caps = map[string]any{"tools": map[string]any{"listChanged": true}, "logging": map[string]any{},
				"resources": map[string]any{}, "prompts": map[string]any{}}
		}
		name := s.Name
		if name == "" {
			name = "mcptest"
		}
		return result(m.ID, map[string]any{"protocolVersion": v, "capabilities": caps,
			"serverInfo": map[string]any{"name": name, "version": "1.0.0"}})
	case "ping", "logging/setLevel":
		return result(m.ID, map[string]any{})
	case "tools/list":
		return s.page(m.ID, str("cursor"), "tools", s.Tools)
	case "resources/list":
		return s.page(m.ID, str("cursor"), "resources", s.Resources)
	case "prompts/list":
		return s.page(m.ID, str("cursor"), "prompts", s.Prompts)
	case "resources/read":
		if s.Read == nil {
			return errorResponse(m.ID, -32002, "resource not found")
		}
		c, e := s.Read(str("uri"))
		if e != nil {
			return errorResponse(m.ID, e.Code, e.Message)
		}
		return result(m.ID, map[string]any{"contents": c})
	case "prompts/get":
		if s.GetPrompt == nil {
			return errorResponse(m.ID, -32602, "no such prompt")
		}
		var args map[string]string
		json.Unmarshal(p["arguments"], &args)
		r, e := s.GetPrompt(str("name"), args)
		if e != nil {
			return errorResponse(m.ID, e.Code, e.Message)
		}
		return result(m.ID, r)
	case "tools/call":
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		s.mu.Lock()
		s.calls[string(m.ID)] = cancel
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.calls, string(m.ID))
			s.mu.Unlock()
		}()
		var meta struct {
			Token json.RawMessage `json:"progressToken"`
		}
		json.Unmarshal(p["_meta"], &meta)
		c := &Call{Name: str("name"), Args: p["arguments"], Ctx: cctx, token: meta.Token, out: out, srv: s}
		if s.Handle == nil {
			return result(m.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": string(c.Args)}}})
		}
		r, e := s.Handle(c)
		if cctx.Err() != nil && ctx.Err() == nil {
			return nil // cancelled: no answer, as the spec says
		}
		if e != nil {
			return errorResponse(m.ID, e.Code, e.Message)
		}
		return result(m.ID, r)
	}
	return errorResponse(m.ID, -32601, "method not found: "+m.Method)
}

func (s *Server) page(id json.RawMessage, cursor, key string, items []json.RawMessage) []byte {
	start := 0
	if cursor != "" {
		n, err := strconv.Atoi(cursor)
		if err != nil || n < 0 || n > len(items) {
			return errorResponse(id, -32602, "invalid cursor")
		}
		start = n
	}
	end := len(items)
	if s.PageSize > 0 && start+s.PageSize < end {
		end = start + s.PageSize
	}
	r := map[string]any{key: append([]json.RawMessage{}, items[start:end]...)}
	if end < len(items) {
		r["nextCursor"] = strconv.Itoa(end)
	}
	return result(id, r)
}

func result(id json.RawMessage, r any) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": r})
	return b
}

func errorResponse(id json.RawMessage, code int, msg string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	return b
}

func notification(method string, params any) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	return b
}
