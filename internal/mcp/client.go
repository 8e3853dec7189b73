package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"choir/internal/jsonlimit"
)

// Options configure a Client. The zero value works: it declines every
// elicitation and sampling request and drops log notifications.
type Options struct {
	// ClientName and ClientVersion are sent as clientInfo (default "choir", "dev").
	ClientName    string
	ClientVersion string
	// Versions are the protocol revisions the client speaks, preferred
	// first; the first is proposed in initialize and the server's answer
	// must be one of them. Default: DefaultVersions.
	Versions []string
	// Logger receives protocol problems the connection survives (a line
	// that is not JSON-RPC, a response for an unknown id). Default: discard.
	Logger *slog.Logger
	// OnLog receives the server's notifications/message. It runs on the
	// reading goroutine: keep it quick and do not call the Client from it.
	OnLog func(LogMessage)
	// OnToolsChanged is called after notifications/tools/list_changed,
	// and after the client had to start a new HTTP session: list the tools
	// again. It runs on a goroutine of its own, one call at a time; changes
	// announced while it runs are folded into one more call.
	OnToolsChanged func()
	// OnNotification receives every other server notification.
	// It runs on the reading goroutine.
	OnNotification func(method string, params json.RawMessage)
	// Elicit answers a server's elicitation/create. Nil: the elicitation
	// capability is not declared and any request is declined.
	Elicit func(ctx context.Context, req ElicitRequest) (ElicitResult, error)
	// Sample answers a server's sampling/createMessage. Nil: the sampling
	// capability is not declared and any request is refused (code -1).
	Sample func(ctx context.Context, req SampleRequest) (SampleResult, error)
	// MaxMessageBytes caps one message read from the server (default 16 MiB).
	MaxMessageBytes int
	// RequestTimeout bounds a request whose context has no deadline
	// (default 2 minutes; negative: no bound). A request that times out is
	// cancelled at the server with notifications/cancelled.
	RequestTimeout time.Duration
}

const (
	defaultMaxMessage     = 16 << 20
	defaultRequestTimeout = 2 * time.Minute
	cancelNoticeTimeout   = 2 * time.Second
)

// Client is a connection to one MCP server. Its methods are safe for
// concurrent use.
type Client struct {
	t    Transport
	opts Options
	log  *slog.Logger

	nextID    atomic.Int64
	junkCount atomic.Int64  // skipped messages logged so far
	changed   chan struct{} // a pending OnToolsChanged call (capacity 1)
	closeOnce sync.Once
	closeErr  error

	mu         sync.Mutex
	pending    map[string]chan result
	progress   map[string]func(Progress)
	serverReqs map[string]context.CancelFunc
	err        error // why the connection ended; nil while it is up
	done       chan struct{}

	initMu  sync.Mutex // serializes (re)initialization
	gen     int        // bumped by each new session
	init    atomic.Pointer[InitializeResult]
	baseCtx context.Context
	stop    context.CancelFunc
}

type result struct {
	raw json.RawMessage
	err error
}

// Connect starts the transport, runs the initialize handshake
// (initialize, version check, notifications/initialized) and returns a
// ready Client. On failure the transport is closed.
func Connect(ctx context.Context, t Transport, opts Options) (*Client, error) {
	if opts.ClientName == "" {
		opts.ClientName = "choir"
	}
	if opts.ClientVersion == "" {
		opts.ClientVersion = "dev"
	}
	if len(opts.Versions) == 0 {
		opts.Versions = DefaultVersions
	}
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = defaultMaxMessage
	}
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = defaultRequestTimeout
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Client{
		t:          t,
		opts:       opts,
		log:        log.With("mcp_server", t.String()),
		pending:    map[string]chan result{},
		progress:   map[string]func(Progress){},
		serverReqs: map[string]context.CancelFunc{},
		done:       make(chan struct{}),
	}
	c.baseCtx, c.stop = context.WithCancel(context.Background())
	if opts.OnToolsChanged != nil {
		c.changed = make(chan struct{}, 1)
		go c.announceChanges()
	}
	if err := t.start(ctx, c, limits{maxMessage: opts.MaxMessageBytes}); err != nil {
		c.stop()
		return nil, fmt.Errorf("mcp: start %s: %w", t, err)
	}
	if err := c.initialize(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// ServerInfo is the server's name and version from initialize.
func (c *Client) ServerInfo() Implementation { return c.init.Load().ServerInfo }

// Capabilities are what the server declared in initialize.
func (c *Client) Capabilities() ServerCapabilities { return c.init.Load().Capabilities }

// ProtocolVersion is the negotiated protocol revision.
func (c *Client) ProtocolVersion() string { return c.init.Load().ProtocolVersion }

// Instructions is the server's instructions text (untrusted).
func (c *Client) Instructions() string { return c.init.Load().Instructions }

// String names the server, as the transport does.
func (c *Client) String() string { return c.t.String() }

// Done is closed when the connection has ended (Close, or the server went
// away); Err then says why.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is why the connection ended, nil while it is up.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close ends the connection: HTTP sends DELETE for the session; stdio
// closes the server's stdin, waits for it to exit, then terminates and
// kills it. Calls in flight fail with ErrClosed.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.shutdown(ErrClosed)
		c.closeErr = c.t.close()
	})
	return c.closeErr
}

// toolsChanged schedules an OnToolsChanged call; a call already pending
// covers this change too.
func (c *Client) toolsChanged() {
	if c.changed == nil {
		return
	}
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

func (c *Client) announceChanges() {
	for {
		select {
		case <-c.changed:
			c.opts.OnToolsChanged()
		case <-c.baseCtx.Done():
			return
		}
	}
}

func (c *Client) initialize(ctx context.Context) error {
	caps := map[string]any{}
	if c.opts.Elicit != nil {
		caps["elicitation"] = map[string]any{"form": map[string]any{}}
	}
	if c.opts.Sample != nil {
		caps["sampling"] = map[string]any{}
	}
	params := map[string]any{
		"protocolVersion": c.opts.Versions[0],
		"capabilities":    caps,
		"clientInfo":      Implementation{Name: c.opts.ClientName, Version: c.opts.ClientVersion},
	}
	var res InitializeResult
	if err := c.roundTrip(ctx, "initialize", params, &res, nil); err != nil {
		return err
	}
	ok := false
	for _, v := range c.opts.Versions {
		ok = ok || v == res.ProtocolVersion
	}
	if !ok {
		return fmt.Errorf("mcp %s: initialize: the server speaks protocol version %q and this client speaks %q; use a server release that supports one of them",
			c.t, res.ProtocolVersion, c.opts.Versions)
	}
	c.init.Store(&res)
	c.t.negotiated(res.ProtocolVersion)
	n, err := encodeNotification("notifications/initialized", nil)
	if err != nil {
		return err
	}
	if err := c.t.send(ctx, n); err != nil {
		return fmt.Errorf("mcp %s: notifications/initialized: %w", c.t, err)
	}
	c.t.opened(ctx)
	return nil
}

// reinitialize starts a new session after the server ended the one of
// generation gen (HTTP 404); concurrent callers share one handshake.
func (c *Client) reinitialize(ctx context.Context, gen int) error {
	c.initMu.Lock()
	defer c.initMu.Unlock()
	if c.gen != gen {
		return nil
	}
	c.log.Warn("the server ended the session; starting a new one")
	if err := c.initialize(ctx); err != nil {
		return err
	}
	c.gen++
	c.toolsChanged()
	return nil
}

func (c *Client) generation() int {
	c.initMu.Lock()
	defer c.initMu.Unlock()
	return c.gen
}

// call sends a request and decodes its result into out, starting a new
// session once if the server lost the old one.
func (c *Client) call(ctx context.Context, method string, params, out any, onProgress func(Progress)) error {
	gen := c.generation()
	err := c.roundTrip(ctx, method, params, out, onProgress)
	if errors.Is(err, ErrSessionExpired) {
		if rerr := c.reinitialize(ctx, gen); rerr != nil {
			return fmt.Errorf("%w; starting a new session failed: %w", err, rerr)
		}
		err = c.roundTrip(ctx, method, params, out, onProgress)
	}
	return err
}

// roundTrip sends one request and waits for its response, the context, or
// the end of the connection. A request abandoned for its context is
// cancelled at the server (except initialize, which must not be).
func (c *Client) roundTrip(ctx context.Context, method string, params, out any, onProgress func(Progress)) error {
	if _, ok := ctx.Deadline(); !ok && c.opts.RequestTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, c.opts.RequestTimeout,
			fmt.Errorf("no answer within %v (Options.RequestTimeout)", c.opts.RequestTimeout))
		defer cancel()
	}
	id := c.nextID.Add(1)
	key := fmt.Sprint(id)
	if onProgress != nil {
		params = withProgressToken(params, id)
	}
	m, err := encodeRequest(id, method, params)
	if err != nil {
		return fmt.Errorf("mcp %s: %w", c.t, err)
	}
	ch := make(chan result, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return fmt.Errorf("mcp %s: %s: %w", c.t, method, err)
	}
	c.pending[key] = ch
	if onProgress != nil {
		c.progress[key] = onProgress
	}
	c.mu.Unlock()
	defer c.forget(key)

	if err := c.t.send(ctx, m); err != nil {
		if ctx.Err() != nil {
			// The server may have the request already: tell it.
			err = context.Cause(ctx)
			if method != "initialize" {
				c.cancelAtServer(id, err)
			}
		}
		return fmt.Errorf("mcp %s: %s: %w", c.t, method, err)
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return fmt.Errorf("mcp %s: %s: %w", c.t, method, r.err)
		}
		if out != nil {
			if err := json.Unmarshal(r.raw, out); err != nil {
				return fmt.Errorf("mcp %s: %s: the server's result does not decode: %v (result %s)", c.t, method, err, preview(r.raw))
			}
		}
		return nil
	case <-ctx.Done():
		cause := context.Cause(ctx)
		if method != "initialize" {
			c.cancelAtServer(id, cause)
		}
		return fmt.Errorf("mcp %s: %s: %w", c.t, method, cause)
	}
}

func (c *Client) forget(key string) {
	c.mu.Lock()
	delete(c.pending, key)
	delete(c.progress, key)
	c.mu.Unlock()
	c.t.abandon(key)
}

// cancelAtServer sends notifications/cancelled for request id.
func (c *Client) cancelAtServer(id int64, cause error) {
	if c.Err() != nil {
		return
	}
	n, err := encodeNotification("notifications/cancelled", map[string]any{"requestId": id, "reason": cause.Error()})
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(c.baseCtx, cancelNoticeTimeout)
	defer cancel()
	if err := c.t.send(ctx, n); err != nil {
		c.log.Warn("could not send notifications/cancelled", "request_id", id, "err", err)
	}
}

// withProgressToken adds _meta.progressToken to a params object.
func withProgressToken(params any, token int64) any {
	p := map[string]any{}
	if params != nil {
		if raw, err := json.Marshal(params); err == nil {
			_ = json.Unmarshal(raw, &p)
		}
	}
	meta, _ := p["_meta"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta["progressToken"] = token
	p["_meta"] = meta
	return p
}

// notify sends a notification to the server.
func (c *Client) notify(ctx context.Context, method string, params any) error {
	n, err := encodeNotification(method, params)
	if err != nil {
		return err
	}
	if err := c.t.send(ctx, n); err != nil {
		return fmt.Errorf("mcp %s: %s: %w", c.t, method, err)
	}
	return nil
}

// shutdown marks the connection ended and fails every waiting request.
func (c *Client) shutdown(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	pending := c.pending
	c.pending = map[string]chan result{}
	for _, cancel := range c.serverReqs {
		cancel()
	}
	c.mu.Unlock()
	for _, ch := range pending {
		ch <- result{err: err}
	}
	c.stop()
	close(c.done)
}

// lost implements sink.
func (c *Client) lost(err error) {
	if !errors.Is(err, ErrClosed) {
		err = fmt.Errorf("%w: %w", ErrClosed, err)
	}
	c.shutdown(err)
}

// waiting implements sink.
func (c *Client) waiting(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[id]
	return ok
}

// failRequest implements sink.
func (c *Client) failRequest(id string, err error) {
	c.mu.Lock()
	ch, ok := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if ok {
		ch <- result{err: err}
	}
}

// warn implements sink.
func (c *Client) warn(msg string, args ...any) { c.log.Warn(msg, args...) }

// maxJunkWarnings bounds the log lines one connection spends on messages it
// skips: a server printing garbage in a loop must not flood the log.
const maxJunkWarnings = 20

// junk logs a skipped message, up to maxJunkWarnings per connection.
func (c *Client) junk(msg string, args ...any) {
	switch n := c.junkCount.Add(1); {
	case n <= maxJunkWarnings:
		c.log.Warn(msg, args...)
	case n == maxJunkWarnings+1:
		c.log.Warn("the server keeps sending messages that are skipped; no more are logged on this connection", "logged", maxJunkWarnings)
	}
}

// receive implements sink: it dispatches one message or batch.
func (c *Client) receive(raw []byte) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return
	}
	if raw[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(raw, &batch); err != nil {
			c.junk("the server sent something that is not JSON-RPC; ignored", "line", preview(raw), "err", err)
			return
		}
		for _, m := range batch {
			c.receive(m)
		}
		return
	}
	if err := jsonlimit.Check(raw, jsonlimit.Limits{MaxDepth: jsonlimit.DefaultMaxDepth}); err != nil {
		c.refuse(raw, err)
		return
	}
	var m message
	if err := json.Unmarshal(raw, &m); err != nil || m.JSONRPC != "2.0" {
		c.junk("the server sent something that is not JSON-RPC 2.0; ignored", "line", preview(raw))
		return
	}
	switch {
	case m.isResponse():
		key := idKey(m.ID)
		c.mu.Lock()
		ch, ok := c.pending[key]
		delete(c.pending, key)
		c.mu.Unlock()
		if !ok {
			c.junk("the server answered a request id that is not waiting; ignored", "id", key)
			return
		}
		if m.Error != nil {
			ch <- result{err: m.Error}
		} else if m.Result == nil {
			ch <- result{err: fmt.Errorf("the server's response has neither result nor error: %s", preview(raw))}
		} else {
			ch <- result{raw: m.Result}
		}
	case m.isNotification():
		c.notification(m.Method, m.Params)
	case m.isRequest():
		c.serverRequest(m)
	default:
		c.junk("the server sent a JSON-RPC message with neither method nor id; ignored", "line", preview(raw))
	}
}

// refuse handles a message jsonlimit refused (nested too deep, invalid
// UTF-8): the request it answers fails with the reason rather than waiting
// for its timeout; a request from the server is answered with an error.
func (c *Client) refuse(raw []byte, fault error) {
	var m message
	json.Unmarshal(raw, &m) // encoding/json reads deep documents without recursion limits of ours; only the id is wanted
	switch {
	case m.isResponse() && c.waiting(idKey(m.ID)):
		c.failRequest(idKey(m.ID), fmt.Errorf("the server's answer was refused: %w", fault))
	case m.isRequest():
		out, err := encodeResponse(m.ID, nil, &RPCError{Code: CodeInvalidRequest, Message: "refused: " + fault.Error()})
		if err == nil {
			go func() {
				ctx, cancel := context.WithTimeout(c.baseCtx, cancelNoticeTimeout)
				defer cancel()
				c.t.send(ctx, out)
			}()
		}
		fallthrough
	default:
		c.junk("refused a message from the server", "err", fault, "line", preview(raw))
	}
}

func (c *Client) notification(method string, params json.RawMessage) {
	switch method {
	case "notifications/progress":
		var p struct {
			Token json.RawMessage `json:"progressToken"`
			Progress
		}
		if json.Unmarshal(params, &p) != nil {
			c.junk("bad notifications/progress; ignored", "params", preview(params))
			return
		}
		c.mu.Lock()
		f := c.progress[idKey(p.Token)]
		c.mu.Unlock()
		if f != nil {
			f(p.Progress)
		}
	case "notifications/message":
		var l LogMessage
		if json.Unmarshal(params, &l) != nil {
			c.junk("bad notifications/message; ignored", "params", preview(params))
			return
		}
		if f := c.opts.OnLog; f != nil {
			f(l)
		}
	case "notifications/tools/list_changed":
		c.toolsChanged()
	case "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(params, &p) == nil {
			c.mu.Lock()
			cancel := c.serverReqs[idKey(p.RequestID)]
			c.mu.Unlock()
			if cancel != nil {
				cancel()
			}
		}
	default:
		if f := c.opts.OnNotification; f != nil {
			f(method, params)
		}
	}
}
