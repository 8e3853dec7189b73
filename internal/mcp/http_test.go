package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/internal/mcp"
	"choir/testkit/mcptest"
)

func httpServer(t testing.TB, h http.Handler) string {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

func connectHTTP(t testing.TB, url string, opts mcp.Options) *mcp.Client {
	t.Helper()
	c, err := mcp.Connect(testCtx(t), mcp.NewHTTP(url, http.Header{"Authorization": {"Bearer s3cret"}}, nil), opts)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestHTTPJSONWithSession(t *testing.T) {
	srv := &mcptest.Server{Tools: []json.RawMessage{echoTool}, Sessions: true}
	c := connectHTTP(t, httpServer(t, srv), mcp.Options{})
	ctx := testCtx(t)
	res, err := c.CallTool(ctx, "echo", raw(`{"message":"hi"}`), nil)
	if err != nil || res.Text() != `{"message":"hi"}` {
		t.Fatalf("CallTool = %+v, %v", res, err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ms := srv.Received()
	for i, m := range ms {
		if m.Header["Authorization"] != "Bearer s3cret" {
			t.Errorf("message %d (%s %s) lacks the caller's header", i, m.HTTPMethod, m.Method)
		}
		if i == 0 {
			if m.Method != "initialize" || m.Header["Mcp-Session-Id"] != "" || m.Header["Mcp-Protocol-Version"] != "" {
				t.Errorf("first message = %s %v; want initialize without session or version headers", m.Method, m.Header)
			}
			if m.Header["Accept"] != "application/json, text/event-stream" {
				t.Errorf("POST Accept = %q", m.Header["Accept"])
			}
			continue
		}
		if m.Header["Mcp-Session-Id"] != "sess-1" || m.Header["Mcp-Protocol-Version"] != "2025-11-25" {
			t.Errorf("message %d (%s %s) headers = %v; want session sess-1 and protocol 2025-11-25", i, m.HTTPMethod, m.Method, m.Header)
		}
	}
	if last := ms[len(ms)-1]; last.HTTPMethod != "DELETE" {
		t.Errorf("last request = %s %s; want DELETE on Close", last.HTTPMethod, last.Method)
	}
}

func TestHTTPSSEAnswersWithProgressAndElicitation(t *testing.T) {
	srv := &mcptest.Server{SSE: true, Sessions: true, Handle: func(c *mcptest.Call) (any, *mcptest.Error) {
		c.Progress(1, 2, "half")
		c.Log("info", "working")
		r, err := c.Request("elicitation/create", json.RawMessage(`{"message":"Proceed?","requestedSchema":{"type":"object","properties":{"go":{"type":"boolean","default":true}}}}`))
		if err != nil {
			return nil, &mcptest.Error{Code: -32603, Message: err.Error()}
		}
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": string(r)}}}, nil
	}}
	var logged []string
	var mu sync.Mutex
	c := connectHTTP(t, httpServer(t, srv), mcp.Options{
		OnLog: func(l mcp.LogMessage) { mu.Lock(); logged = append(logged, string(l.Data)); mu.Unlock() },
		Elicit: func(ctx context.Context, r mcp.ElicitRequest) (mcp.ElicitResult, error) {
			d, err := r.Defaults()
			return mcp.ElicitResult{Action: mcp.ActionAccept, Content: d}, err
		},
	})
	var progress []mcp.Progress
	res, err := c.CallTool(testCtx(t), "ask", nil, func(p mcp.Progress) { progress = append(progress, p) })
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	if res.Text() != `{"action":"accept","content":{"go":true}}` {
		t.Errorf("the server got %s; want accept with the default", res.Text())
	}
	if len(progress) != 1 || progress[0].Message != "half" {
		t.Errorf("progress = %+v; want the one notification", progress)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logged) != 1 || logged[0] != `"working"` {
		t.Errorf("logs = %q", logged)
	}
}

func TestHTTPSessionLostStartsANewOne(t *testing.T) {
	srv := &mcptest.Server{Tools: []json.RawMessage{echoTool}, Sessions: true}
	changed := make(chan struct{}, 1)
	c := connectHTTP(t, httpServer(t, srv), mcp.Options{OnToolsChanged: func() { changed <- struct{}{} }})
	srv.ExpireSession()
	res, err := c.CallTool(testCtx(t), "echo", raw(`{"n":1}`), nil)
	if err != nil || res.Text() != `{"n":1}` {
		t.Fatalf("CallTool after the server dropped the session = %+v, %v; want it answered in a new session", res, err)
	}
	var inits []string
	for _, m := range srv.Received() {
		if m.Method == "initialize" {
			inits = append(inits, m.Header["Mcp-Session-Id"])
		}
	}
	if len(inits) != 2 || inits[1] != "" {
		t.Errorf("initialize requests carried sessions %q; want a second initialize without a session id", inits)
	}
	ms := srv.Received()
	if last := ms[len(ms)-1]; last.Method != "tools/call" || last.Header["Mcp-Session-Id"] != "sess-2" {
		t.Errorf("the retried call = %s with session %q; want tools/call in sess-2", last.Method, last.Header["Mcp-Session-Id"])
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Error("OnToolsChanged not called after a new session")
	}
}

func TestHTTPGetStreamDeliversServerMessages(t *testing.T) {
	srv := &mcptest.Server{Sessions: true, GetStream: true}
	changed := make(chan struct{}, 1)
	connectHTTP(t, httpServer(t, srv), mcp.Options{OnToolsChanged: func() { changed <- struct{}{} }})
	if !srv.WaitFor(10*time.Second, func(ms []mcptest.Message) bool {
		for _, m := range ms {
			if m.HTTPMethod == "GET" && m.Header["Accept"] == "text/event-stream" && m.Header["Mcp-Session-Id"] == "sess-1" {
				return true
			}
		}
		return false
	}) {
		t.Fatal("the client never opened the GET stream with its session")
	}
	srv.Push("notifications/tools/list_changed", map[string]any{})
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("a notification on the GET stream did not reach OnToolsChanged")
	}
}

// resumingServer closes each tools/call stream after a priming event and
// answers on the GET that resumes it with Last-Event-ID.
type resumingServer struct {
	mu        sync.Mutex
	lastIDs   []string
	pendingID json.RawMessage
	noID      bool
}

func (s *resumingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		if r.Header.Get("Last-Event-ID") == "" {
			http.Error(w, "no stream of its own", http.StatusMethodNotAllowed)
			return
		}
		s.mu.Lock()
		id := s.pendingID
		s.pendingID = nil
		s.lastIDs = append(s.lastIDs, r.Header.Get("Last-Event-ID"))
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		if id == nil {
			http.Error(w, "nothing", http.StatusMethodNotAllowed)
			return
		}
		fmt.Fprintf(w, "id: e-3\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"resumed\"}]}}\n\n", id)
	case http.MethodPost:
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.NewDecoder(r.Body).Decode(&m)
		switch m.Method {
		case "initialize":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"r","version":"1"}}}`, m.ID)
		case "tools/call":
			s.mu.Lock()
			s.pendingID = m.ID
			s.mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			if s.noID {
				fmt.Fprint(w, ": no id here\n\n")
				return
			}
			fmt.Fprint(w, "id: e-1\nretry: 10\ndata: \n\n: keep-alive comment\n\nid: e-2\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":1}}\n\n")
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

func TestHTTPStreamResumedWithLastEventID(t *testing.T) {
	srv := &resumingServer{}
	c := connectHTTP(t, httpServer(t, srv), mcp.Options{})
	res, err := c.CallTool(testCtx(t), "x", nil, nil)
	if err != nil || res.Text() != "resumed" {
		t.Fatalf("CallTool = %+v, %v; want the answer from the resumed stream", res, err)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.lastIDs) != 1 || srv.lastIDs[0] != "e-2" {
		t.Errorf("Last-Event-ID sent = %q; want [e-2], the last event seen", srv.lastIDs)
	}
}

func TestHTTPStreamClosedWithoutEventID(t *testing.T) {
	c := connectHTTP(t, httpServer(t, &resumingServer{noID: true}), mcp.Options{})
	_, err := c.CallTool(testCtx(t), "x", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "closed the SSE stream before answering and gave no event id") {
		t.Fatalf("CallTool = %v; want a clear error, not a hang", err)
	}
}

func TestHTTPRefusals(t *testing.T) {
	initOK := func(w http.ResponseWriter, id json.RawMessage) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"r","version":"1"}}}`, id)
	}
	tests := []struct {
		name    string
		call    func(w http.ResponseWriter, id json.RawMessage)
		opts    mcp.Options
		wantErr string
	}{
		{"401 names the credentials", func(w http.ResponseWriter, id json.RawMessage) {
			http.Error(w, "bad token", http.StatusUnauthorized)
		}, mcp.Options{}, "POST answered HTTP 401: bad token (check the credentials in the server's headers)"},
		{"HTML instead of JSON", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html>login</html>")
		}, mcp.Options{}, `Content-Type "text/html"`},
		{"JSON body over the limit", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"%s"}]}}`, id, strings.Repeat("x", 5000))
		}, mcp.Options{MaxMessageBytes: 1024}, "larger than 1024 bytes"},
		{"SSE event over the limit", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "id: 1\ndata: %s\n\n", strings.Repeat("x", 5000))
		}, mcp.Options{MaxMessageBytes: 1024}, "larger than 1024 bytes"},
		{"JSON answer for another request", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":424242,"result":{}}`)
		}, mcp.Options{}, "holds no response to request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var m struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				json.NewDecoder(r.Body).Decode(&m)
				switch {
				case r.Method != http.MethodPost:
					w.WriteHeader(http.StatusMethodNotAllowed)
				case m.Method == "initialize":
					initOK(w, m.ID)
				case m.Method == "tools/call":
					tt.call(w, m.ID)
				default:
					w.WriteHeader(http.StatusAccepted)
				}
			}))
			c := connectHTTP(t, url, tt.opts)
			_, err := c.CallTool(testCtx(t), "x", nil, nil)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("CallTool = %v; want an error containing %q", err, tt.wantErr)
			}
			var he *mcp.HTTPError
			if strings.HasPrefix(tt.name, "401") && (!errors.As(err, &he) || he.StatusCode != 401) {
				t.Errorf("errors.As(%v, *HTTPError) = %+v; want status 401", err, he)
			}
		})
	}
}

func TestHTTPDescriptionHidesSecrets(t *testing.T) {
	tr := mcp.NewHTTP("https://user:pw@example.test/mcp?key=s3cret", nil, nil)
	if got := tr.String(); got != "http server https://example.test/mcp" {
		t.Errorf("String() = %q; want no user info and no query", got)
	}
	_, err := mcp.Connect(testCtx(t), mcp.NewHTTP("ftp://example.test/mcp?key=s3cret", nil, nil), mcp.Options{})
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "not an http(s) URL") {
		t.Errorf("Connect to an ftp URL = %v; want a refusal without the query", err)
	}
}

func TestHTTPUnreachableServer(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	url := ts.URL + "/mcp"
	ts.Close()
	_, err := mcp.Connect(testCtx(t), mcp.NewHTTP(url, nil, nil), mcp.Options{})
	if err == nil || !strings.Contains(err.Error(), "initialize") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Connect to a closed port = %v; want initialize and connection refused", err)
	}
}

// A server that opens the answer's SSE stream and then says nothing: the
// call ends with its context and the server is told.
func TestHTTPStalledStream(t *testing.T) {
	srv := &mcptest.Server{SSE: true, Handle: func(c *mcptest.Call) (any, *mcptest.Error) {
		<-c.Ctx.Done()
		return nil, nil
	}}
	c := connectHTTP(t, httpServer(t, srv), mcp.Options{RequestTimeout: 200 * time.Millisecond})
	_, err := c.CallTool(context.Background(), "stall", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "no answer within 200ms") {
		t.Fatalf("CallTool on a stalled stream = %v; want the timeout", err)
	}
	if !srv.WaitFor(10*time.Second, func(ms []mcptest.Message) bool {
		for _, m := range ms {
			if m.Method == "notifications/cancelled" {
				return true
			}
		}
		return false
	}) {
		t.Errorf("no notifications/cancelled; the server got %q", mcptest.Methods(srv.Received()))
	}
	if err := c.Ping(testCtx(t)); err != nil {
		t.Errorf("Ping after the timeout: %v", err)
	}
}

// After a new session the GET stream is reopened with the new session id.
func TestHTTPGetStreamFollowsNewSession(t *testing.T) {
	srv := &mcptest.Server{Sessions: true, GetStream: true, Tools: []json.RawMessage{echoTool}}
	c := connectHTTP(t, httpServer(t, srv), mcp.Options{})
	getWith := func(session string) func([]mcptest.Message) bool {
		return func(ms []mcptest.Message) bool {
			for _, m := range ms {
				if m.HTTPMethod == "GET" && m.Header["Mcp-Session-Id"] == session {
					return true
				}
			}
			return false
		}
	}
	if !srv.WaitFor(10*time.Second, getWith("sess-1")) {
		t.Fatal("no GET stream in sess-1")
	}
	srv.ExpireSession()
	if _, err := c.ListTools(testCtx(t)); err != nil {
		t.Fatalf("ListTools after the session ended: %v", err)
	}
	if !srv.WaitFor(10*time.Second, getWith("sess-2")) {
		t.Fatalf("no GET stream in the new session sess-2; requests: %q", mcptest.Methods(srv.Received()))
	}
}
