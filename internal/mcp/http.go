package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// HTTP is the Streamable HTTP transport: each message is a POST to the MCP
// endpoint, answered with 202 (notifications, responses), one JSON message,
// or an SSE stream of messages ending with the response; a GET opens the
// server's own stream. See the package documentation for the details.
type HTTP struct {
	url    string
	header http.Header
	hc     *http.Client
	desc   string

	mu         sync.Mutex
	session    string
	version    string
	streams    map[string]context.CancelFunc // request id → its POST stream
	stopListen context.CancelFunc            // ends the GET stream

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	s      sink
	lim    limits
}

// HTTPError is an HTTP status the server answered with where the protocol
// wanted success (401 and 403 mean the declared credentials are wrong).
type HTTPError struct {
	Method     string // GET, POST, DELETE
	StatusCode int
	Body       string // the start of the body
}

func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("%s answered HTTP %d", e.Method, e.StatusCode)
	if e.Body != "" {
		msg += ": " + e.Body
	}
	switch e.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		msg += " (check the credentials in the server's headers)"
	}
	return msg
}

// SSE reconnection: the wait when the server gave no retry field, the
// longest wait between attempts on a stream that keeps failing, and how
// many attempts in a row may bring nothing before a request fails.
const (
	defaultSSERetry  = time.Second
	maxSSEBackoff    = 30 * time.Second
	maxSSEAttempts   = 5
	errorBodyPreview = 300
	deleteTimeout    = 5 * time.Second
	getOpenWait      = 3 * time.Second
)

// NewHTTP returns a Streamable HTTP transport for the MCP endpoint rawURL.
// headers are sent with every request (Authorization and the like); hc nil
// means a client without an overall timeout (SSE streams are long-lived;
// each request is bounded by its context instead).
func NewHTTP(rawURL string, headers http.Header, hc *http.Client) *HTTP {
	if hc == nil {
		hc = &http.Client{}
	}
	desc := "http server " + redactURL(rawURL)
	return &HTTP{url: rawURL, header: headers.Clone(), hc: hc, desc: desc, streams: map[string]context.CancelFunc{}}
}

// redactURL keeps scheme, host and path: no user info, no query (either
// may hold a secret).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Scheme + "://" + u.Host + u.Path
}

// String implements Transport.
func (t *HTTP) String() string { return t.desc }

// SessionID is the current Mcp-Session-Id ("" when the server uses none).
func (t *HTTP) SessionID() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.session
}

func (t *HTTP) start(ctx context.Context, s sink, lim limits) error {
	u, err := url.Parse(t.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("the MCP endpoint %q is not an http(s) URL", redactURL(t.url))
	}
	t.s, t.lim = s, lim
	t.ctx, t.cancel = context.WithCancel(context.Background())
	return nil
}

func (t *HTTP) negotiated(version string) {
	t.mu.Lock()
	t.version = version
	t.mu.Unlock()
}

// opened starts the GET stream of a new session (after a session was
// lost, the old stream's goroutine is stopped first) and waits until the
// server has answered the GET (or getOpenWait passed): a server may send
// its own requests only on that stream (the conformance suite's
// elicitation does), so it must be open before the first call.
func (t *HTTP) opened(ctx context.Context) {
	t.mu.Lock()
	if t.stopListen != nil {
		t.stopListen()
	}
	lctx, cancel := context.WithCancel(t.ctx)
	t.stopListen = cancel
	t.mu.Unlock()
	ready := make(chan struct{})
	t.wg.Add(1)
	go t.listen(lctx, ready)
	tm := time.NewTimer(getOpenWait)
	defer tm.Stop()
	select {
	case <-ready:
	case <-tm.C:
	case <-ctx.Done():
	}
}

func (t *HTTP) abandon(id string) {
	t.mu.Lock()
	cancel := t.streams[id]
	delete(t.streams, id)
	t.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (t *HTTP) newRequest(ctx context.Context, method string, body []byte) (*http.Request, string, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.url, r)
	if err != nil {
		return nil, "", err
	}
	for k, v := range t.header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	} else {
		req.Header.Set("Accept", "text/event-stream")
	}
	t.mu.Lock()
	session, version := t.session, t.version
	t.mu.Unlock()
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if version != "" {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	return req, session, nil
}

// send POSTs one message. For a request, the answer (JSON or an SSE
// stream) is delivered to the sink; send returns once the status is known.
func (t *HTTP) send(ctx context.Context, m outgoing) error {
	sctx, cancel := context.WithCancel(t.ctx)
	stop := context.AfterFunc(ctx, cancel)
	req, session, err := t.newRequest(sctx, http.MethodPost, m.data)
	if err != nil {
		stop()
		cancel()
		return err
	}
	resp, err := t.hc.Do(req)
	if err != nil {
		stop()
		cancel()
		if t.ctx.Err() != nil {
			return ErrClosed
		}
		return fmt.Errorf("POST %s: %w", t.desc, err)
	}
	if resp.StatusCode == http.StatusNotFound && session != "" {
		drain(resp.Body)
		stop()
		cancel()
		t.mu.Lock()
		if t.session == session {
			t.session = ""
		}
		t.mu.Unlock()
		return ErrSessionExpired
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		stop()
		defer cancel()
		return statusError(http.MethodPost, resp)
	}
	if m.method == "initialize" {
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			if !visibleASCII(id) {
				stop()
				cancel()
				drain(resp.Body)
				return fmt.Errorf("POST %s: the Mcp-Session-Id header holds characters other than visible ASCII", t.desc)
			}
			t.mu.Lock()
			t.session = id
			t.mu.Unlock()
		}
	}
	if m.id == "" {
		// A notification or a response: 202 and no body is the rule; a
		// body some servers send anyway is read and dropped.
		drain(resp.Body)
		stop()
		cancel()
		return nil
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		defer cancel()
		defer stop()
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, int64(t.lim.maxMessage)+1))
		if err != nil {
			return fmt.Errorf("POST %s: read the answer: %w", t.desc, err)
		}
		if len(body) > t.lim.maxMessage {
			return errTooLarge("POST "+t.desc, t.lim.maxMessage)
		}
		t.s.receive(body)
		if t.s.waiting(m.id) {
			t.s.failRequest(m.id, fmt.Errorf("the server's JSON answer holds no response to request %s: %s", m.id, preview(body)))
		}
		return nil
	case "text/event-stream":
		stop() // from here the stream lives until answered, abandoned or closed
		t.mu.Lock()
		t.streams[m.id] = cancel
		t.mu.Unlock()
		t.wg.Add(1)
		go t.requestStream(sctx, cancel, resp.Body, m.id)
		return nil
	default:
		stop()
		cancel()
		drain(resp.Body)
		return fmt.Errorf("POST %s: HTTP %d with Content-Type %q; a request must be answered with application/json or text/event-stream",
			t.desc, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// requestStream reads a POST's SSE stream until the request is answered.
// If the server closes it first, the client waits the stream's retry time
// and resumes with GET and Last-Event-ID, as often as attempts bring events.
func (t *HTTP) requestStream(ctx context.Context, cancel context.CancelFunc, body io.ReadCloser, id string) {
	defer t.wg.Done()
	defer cancel()
	defer func() {
		t.mu.Lock()
		delete(t.streams, id)
		t.mu.Unlock()
	}()
	st := streamState{retry: defaultSSERetry}
	failures := 0
	for {
		got, err := t.consume(body, &st, id)
		body.Close()
		if !t.s.waiting(id) || ctx.Err() != nil {
			return
		}
		if errors.Is(err, errEventTooLarge) {
			t.s.failRequest(id, errTooLarge("SSE stream of "+t.desc, t.lim.maxMessage))
			return
		}
		if st.lastID == "" {
			t.s.failRequest(id, fmt.Errorf("%s closed the SSE stream before answering and gave no event id to resume from (%v)", t.desc, endReason(err)))
			return
		}
		if got {
			failures = 0
		}
		for body = nil; body == nil; {
			failures++
			if failures > maxSSEAttempts {
				t.s.failRequest(id, fmt.Errorf("%s: the SSE stream broke and %d attempts to resume it brought nothing (last: %v)", t.desc, maxSSEAttempts, endReason(err)))
				return
			}
			if !sleepCtx(ctx, st.retry) {
				return
			}
			var resp *http.Response
			resp, err = t.get(ctx, st.lastID)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				var he *HTTPError
				if errors.As(err, &he) {
					t.s.failRequest(id, fmt.Errorf("resume the SSE stream: %w", err))
					return
				}
				continue
			}
			body = resp.Body
		}
	}
}

// listen keeps the GET stream open for the server's own requests and
// notifications. A server that has none (405, or any refusal) is left
// alone; a stream that ends is reopened after its retry time.
func (t *HTTP) listen(ctx context.Context, ready chan struct{}) {
	defer t.wg.Done()
	first := true
	defer func() {
		if first {
			close(ready)
		}
	}()
	st := streamState{retry: defaultSSERetry}
	wait := time.Duration(0)
	for {
		if !sleepCtx(ctx, wait) {
			return
		}
		resp, err := t.get(ctx, st.lastID)
		if first {
			first = false
			close(ready)
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			var he *HTTPError
			if errors.As(err, &he) {
				if he.StatusCode != http.StatusMethodNotAllowed {
					t.s.warn("the server refused the GET stream; its own requests will come only with answers", "err", err)
				}
				return
			}
			wait = backoff(wait, st.retry)
			continue
		}
		got, err := t.consume(resp.Body, &st, "")
		resp.Body.Close()
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errEventTooLarge) {
			t.s.warn("dropped the GET stream: an event was over the size limit", "limit", t.lim.maxMessage)
		}
		if got {
			wait = st.retry
		} else {
			wait = backoff(wait, st.retry)
		}
	}
}

type streamState struct {
	lastID string
	retry  time.Duration
}

// consume delivers the events of one stream connection until it ends or,
// for a request's stream, until that request has its response.
func (t *HTTP) consume(body io.Reader, st *streamState, id string) (got bool, err error) {
	r := newSSEReader(body, t.lim.maxMessage)
	for {
		ev, err := r.next()
		if err != nil {
			return got, err
		}
		got = true
		if ev.hasID {
			st.lastID = ev.id
		}
		if ev.retry > 0 {
			st.retry = ev.retry
		}
		if len(bytes.TrimSpace(ev.data)) == 0 || (ev.event != "" && ev.event != "message") {
			continue
		}
		t.s.receive(ev.data)
		if id != "" && !t.s.waiting(id) {
			return got, nil
		}
	}
}

// get opens an SSE stream with GET, resuming after lastID when given.
func (t *HTTP) get(ctx context.Context, lastID string) (*http.Response, error) {
	req, _, err := t.newRequest(ctx, http.MethodGet, nil)
	if err != nil {
		return nil, err
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := t.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", t.desc, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, statusError(http.MethodGet, resp)
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != "text/event-stream" {
		drain(resp.Body)
		return nil, &HTTPError{Method: http.MethodGet, StatusCode: resp.StatusCode, Body: "Content-Type " + resp.Header.Get("Content-Type") + " is not text/event-stream"}
	}
	return resp, nil
}

// close ends the session with DELETE (405 is fine: the server does not
// let clients end sessions) and stops every stream.
func (t *HTTP) close() error {
	if t.cancel == nil {
		return nil
	}
	var err error
	if session := t.SessionID(); session != "" {
		ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
		req, _, rerr := t.newRequest(ctx, http.MethodDelete, nil)
		if rerr == nil {
			req.Header.Del("Accept")
			resp, derr := t.hc.Do(req)
			if derr != nil {
				err = fmt.Errorf("DELETE %s: %w", t.desc, derr)
			} else {
				if resp.StatusCode >= 300 && resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusNotFound {
					err = statusError(http.MethodDelete, resp)
				}
				drain(resp.Body)
			}
		}
		cancel()
	}
	t.cancel()
	t.wg.Wait()
	return err
}

func statusError(method string, resp *http.Response) error {
	defer drain(resp.Body)
	b, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyPreview))
	return &HTTPError{Method: method, StatusCode: resp.StatusCode, Body: strings.TrimSpace(string(b))}
}

func drain(body io.ReadCloser) {
	io.Copy(io.Discard, io.LimitReader(body, 64<<10))
	body.Close()
}

func visibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func endReason(err error) string {
	if err == nil || errors.Is(err, io.EOF) {
		return "the server closed it"
	}
	return err.Error()
}

func backoff(prev, base time.Duration) time.Duration {
	if prev < base {
		return base
	}
	if prev *= 2; prev > maxSSEBackoff {
		prev = maxSSEBackoff
	}
	return prev
}

// sleepCtx waits d unless ctx ends first; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}
