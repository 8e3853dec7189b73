package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"choir/agent/tool"
	"choir/internal/mcp"
	"choir/internal/mcpdecl"
)

// conn is what the supervisor needs of a connected server: internal/mcp's
// *Client (dial.go), or a fake in tests.
type conn interface {
	ListTools(ctx context.Context) ([]mcp.Tool, error)
	CallTool(ctx context.Context, name string, args json.RawMessage) (*mcp.CallResult, error)
	Done() <-chan struct{}
	Err() error
	Close() error
}

// dialer starts or connects to a server. hooks carry the notifications
// the connection must report.
type dialer func(ctx context.Context, d *mcpdecl.Decl, h hooks) (conn, error)

type hooks struct {
	toolsChanged func()
	log          *slog.Logger
	elicit       func(context.Context, mcp.ElicitRequest) (mcp.ElicitResult, error) // nil: declined
	sample       func(context.Context, mcp.SampleRequest) (mcp.SampleResult, error) // nil: declined
}

// Server states.
const (
	StateStarting = "starting"
	StateUp       = "up"
	StateDown     = "down"
)

// Restart backoff: from minBackoff doubling to maxBackoff; a connection
// that stayed up for stableAfter starts over from minBackoff.
var (
	minBackoff  = 250 * time.Millisecond
	maxBackoff  = 30 * time.Second
	stableAfter = time.Minute
)

// Server supervises one declared server.
type Server struct {
	decl *mcpdecl.Decl
	dial dialer
	log  *slog.Logger
	// changed is told when the live list differs from what is offered.
	changed func(server string, diff []string)
	// elicit answers the server's questions (elicit.go); nil declines.
	elicit func(context.Context, mcp.ElicitRequest) (mcp.ElicitResult, error)
	// sample answers the server's sampling requests (sample.go); nil
	// declines.
	sample func(context.Context, mcp.SampleRequest) (mcp.SampleResult, error)

	mu       sync.Mutex
	c        conn
	state    string
	lastErr  string
	restarts int
	live     map[string]string // MCP name -> hash of the live definition
	defs     []mcp.Tool        // the last listing
	first    chan struct{}     // closed after the first connect attempt ends
	firstSet bool
	progress map[*int]string // calls in flight: their last progress
}

func newServer(d *mcpdecl.Decl, dial dialer, log *slog.Logger, changed func(string, []string)) *Server {
	return &Server{decl: d, dial: dial, log: log.With("mcp_server", d.Name), changed: changed,
		state: StateStarting, first: make(chan struct{})}
}

// Status is what `choirctl mcp list` and /status show of a server.
type Status struct {
	Name      string   `json:"name"`
	Transport string   `json:"transport"`
	State     string   `json:"state"`
	LastError string   `json:"last_error,omitempty"`
	Restarts  int      `json:"restarts"`
	Live      []string `json:"live_tools"`
}

// Status reports the server now.
func (s *Server) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Name: s.decl.Name, Transport: s.decl.Transport, State: s.state, LastError: s.lastErr, Restarts: s.restarts}
	for n := range s.live {
		st.Live = append(st.Live, n)
	}
	sort.Strings(st.Live)
	return st
}

// run keeps the server up until ctx ends.
func (s *Server) run(ctx context.Context) {
	backoff := minBackoff
	for ctx.Err() == nil {
		began := time.Now()
		err := s.connectOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(began) > stableAfter {
			backoff = minBackoff
		}
		s.mu.Lock()
		s.c, s.state, s.lastErr = nil, StateDown, err.Error()
		s.restarts++
		s.mu.Unlock()
		s.markFirst()
		s.log.Warn("MCP server down; restarting", "error", err.Error(), "in", backoff.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

func (s *Server) markFirst() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.firstSet {
		s.firstSet = true
		close(s.first)
	}
}

// connectOnce connects, lists the tools and waits until the connection
// ends; the error says why it did.
func (s *Server) connectOnce(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	c, err := s.dial(dctx, s.decl, hooks{log: s.log, toolsChanged: func() { s.relist(ctx) }, elicit: s.elicit, sample: s.sample})
	cancel()
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	defer c.Close()
	if err := s.list(ctx, c); err != nil {
		return err
	}
	s.mu.Lock()
	s.c, s.state, s.lastErr = c, StateUp, ""
	s.mu.Unlock()
	s.markFirst()
	s.log.Info("MCP server up", "tools", len(s.Status().Live))
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-c.Done():
	}
	if err := c.Err(); err != nil {
		return fmt.Errorf("connection lost: %w", err)
	}
	return errors.New("connection closed")
}

// list reads the server's tool list into live.
func (s *Server) list(ctx context.Context, c conn) error {
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	defs, err := c.ListTools(lctx)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	live := make(map[string]string, len(defs))
	for _, d := range defs {
		live[d.Name] = mcpdecl.ToolHash(d.Raw)
	}
	s.mu.Lock()
	s.live, s.defs = live, defs
	s.mu.Unlock()
	return nil
}

// relist follows notifications/tools/list_changed.
func (s *Server) relist(ctx context.Context) {
	s.mu.Lock()
	c := s.c
	s.mu.Unlock()
	if c == nil {
		return
	}
	if err := s.list(ctx, c); err != nil {
		s.log.Warn("MCP server's changed tool list could not be read", "error", err.Error())
	}
	if s.changed != nil {
		s.changed(s.decl.Name, nil)
	}
}

// call runs tools/call when the server is up and the tool is still the one
// offered (hash).
func (s *Server) call(ctx context.Context, name, hash string, args json.RawMessage) (*mcp.CallResult, error) {
	s.mu.Lock()
	c, state, lastErr, live := s.c, s.state, s.lastErr, s.live[name]
	s.mu.Unlock()
	if c == nil {
		why := "it is starting"
		if state == StateDown {
			why = "it stopped (" + clip(lastErr, 512) + ") and is being restarted"
		}
		return nil, tool.Errorf(CodeServerUnavailable, "MCP server %s is not available: %s; try again shortly or do without it", s.decl.Name, why)
	}
	if live != hash {
		return nil, tool.Errorf(CodeServerUnavailable, "MCP server %s changed or removed the tool %s since it was offered; it is not called until an operator accepts the change (choirctl agent build)", s.decl.Name, name)
	}
	// The server's progress notifications, shown in agent status while
	// the call runs.
	key := new(int)
	s.mu.Lock()
	if s.progress == nil {
		s.progress = map[*int]string{}
	}
	s.progress[key] = name + " started"
	s.mu.Unlock()
	defer func() { s.mu.Lock(); delete(s.progress, key); s.mu.Unlock() }()
	ctx = context.WithValue(ctx, progressKey{}, func(p mcp.Progress) {
		text := fmt.Sprintf("%s %g", name, p.Progress)
		if p.Total > 0 {
			text += fmt.Sprintf("/%g", p.Total)
		}
		if p.Message != "" {
			text += " " + clip(p.Message, 80)
		}
		s.mu.Lock()
		if _, ok := s.progress[key]; ok {
			s.progress[key] = text
		}
		s.mu.Unlock()
	})
	res, err := c.CallTool(ctx, name, args)
	var re *mcp.RPCError
	if err != nil && ctx.Err() == nil && s.decl.Transport == mcpdecl.HTTP && !errors.As(err, &re) {
		// Not the server's answer: it is unreachable, or its session is
		// gone (server-everything, restarted, answers an old session with
		// 400, not the 404 after which the client starts a new one). The
		// connection is dropped so that run connects again, with a new
		// session, instead of failing every later call on the old one.
		s.log.Warn("MCP server over HTTP failed a call; connecting again", "error", err.Error())
		go c.Close()
	}
	return res, err
}

type progressKey struct{}

// Progress lists the server's calls in flight with their last progress.
func (s *Server) Progress() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.progress))
	for _, p := range s.progress {
		out = append(out, s.decl.Name+"."+p)
	}
	sort.Strings(out)
	return out
}
