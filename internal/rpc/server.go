package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"

	"time"

	"choir/internal/jsonlimit"
)

// Header names of the envelope.
const (
	HeaderRequestID = "X-Choir-Request-Id"
	HeaderSessionID = "X-Choir-Session-Id"
)

// Server is the agent-facing endpoint: one http.Handler mounted unchanged on
// every transport. It owns the table of open sessions (their lease tokens,
// rate limits and push channels); the lifecycle opens a session when it
// starts a container and closes it when the session ends.
type Server struct {
	handler ControlPlaneHandler
	limits  Limits
	log     *slog.Logger
	now     func() time.Time
	verbs   map[Verb]func(ctx context.Context, body []byte) (any, error)
	// Observe, when set before serving, is told of every call of a verb the
	// server serves, refused or answered: the verb, "ok" or the error code
	// the caller got (unauthorized, rate_limited, bad_request, ...) and how
	// long it took. Paths that name no served verb are not observed (they
	// are the caller's text).
	Observe func(verb Verb, code string, took time.Duration)
	// Models, when set before serving, carries the sessions' model calls
	// (POST /v1/model/..., modelproxy.go); nil answers them 404.
	Models ModelProxy
	// Tunnels, when set before serving, carries the sessions' connections
	// (CONNECT host:port, tunnel.go); nil answers them 404.
	Tunnels TunnelDialer
	// Certs, when set before serving, issues the sessions' client
	// certificates (RENEW_CERT, certs.go); nil answers that verb 404.
	Certs   CertIssuer
	tunnels tunnels
	sessions
	serving
}

// NewServer returns a Server dispatching to h.
func NewServer(h ControlPlaneHandler, limits Limits, log *slog.Logger) *Server {
	s := &Server{handler: h, limits: limits, log: log, now: time.Now, sessions: sessions{m: map[string]*session{}}}
	s.base, s.endAll = context.WithCancel(context.Background())
	s.endpoints = map[*endpoint]struct{}{}
	s.total = &counter{max: limits.MaxConnsTotal}
	s.verbs = map[Verb]func(context.Context, []byte) (any, error){
		VerbInitHello:          bind(h.HandleInitHello),
		VerbGetSecrets:         bind(h.HandleSecrets),
		VerbHeartbeat:          bind(h.HandleHeartbeat),
		VerbRequestApproval:    bind(h.HandleApproval),
		VerbReportStatus:       bind(h.HandleStatus),
		VerbTerminateSelf:      bind(h.HandleTerminate),
		VerbFetchDynamicConfig: bind(h.HandleFetchConfig),
		VerbExecuteHostTool:    bind(h.HandleHostTool),
		VerbFetchEvents:        bind(h.HandleFetchEvents),
	}
	if sh, ok := h.(SpendHandler); ok {
		s.verbs[VerbSpend] = bind(sh.HandleSpend)
	}
	s.verbs[VerbRenewCert] = bind(s.renewCert) // certs.go; 404 while Certs is nil
	return s
}

// bind adapts a typed handler method to the generic dispatch table.
func bind[Req, Resp any](f func(context.Context, Req) (Resp, error)) func(context.Context, []byte) (any, error) {
	return func(ctx context.Context, body []byte) (any, error) {
		var req Req
		if err := DecodeStrict(body, &req); err != nil {
			return nil, Errorf(http.StatusBadRequest, CodeBadRequest, "%v", err)
		}
		if c, ok := any(req).(checker); ok {
			if err := c.check(); err != nil {
				return nil, err
			}
		}
		return f(ctx, req)
	}
}

// DecodeStrict decodes one JSON value into v, refusing unknown fields and
// trailing data. It is the request decoder of every verb. The body must be
// valid UTF-8 (encoding/json would silently replace what is not) and nest at
// most 128 levels (twice choir's other JSON readers: a heartbeat's events
// carry tool inputs a few levels down); its size is bounded by the caller
// (the server reads at most Limits.MaxPayload bytes).
func DecodeStrict(body []byte, v any) error {
	if r, ok := v.(*HeartbeatReq); ok && decodeIdleBeat(body, r) { // idlebeat.go
		return nil
	}
	return decodeStrict(body, v)
}

// decodeStrict is DecodeStrict with encoding/json alone.
func decodeStrict(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errors.New("empty body: want a JSON object")
	}
	const maxDepth = 2 * jsonlimit.DefaultMaxDepth
	if err := jsonlimit.Check(body, jsonlimit.Limits{MaxDepth: maxDepth}); err != nil {
		return fmt.Errorf("refused JSON payload: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("malformed JSON payload: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("malformed JSON payload: data after the JSON value")
	}
	return nil
}

// Open admits a session of agentID: calls bearing token for sessionID are
// accepted, on agentID's own listener (ListenAgent) or a shared one (Serve),
// until Close. Only a hash of the token is kept.
func (s *Server) Open(sessionID, agentID, token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.m[sessionID]; old != nil {
		old.events.close()
		old.end()
	}
	sess := &session{tokenHash: sha256Sum(token), agentID: agentID, events: newEventLog(s.limits.EventBacklog)}
	sess.ended, sess.end = context.WithCancel(context.Background())
	s.m[sessionID] = sess
}

// Close revokes a session's token and ends its push streams. Calls with the
// token afterwards get 401.
func (s *Server) Close(sessionID string) {
	s.mu.Lock()
	sess := s.m[sessionID]
	delete(s.m, sessionID)
	s.mu.Unlock()
	if sess != nil {
		sess.events.close()
		sess.end() // heartbeats.go
	}
	s.tunnels.closeSession(sessionID) // tunnel.go
}

// Publish queues a push event for a session and returns its id; false when
// the session is not open.
func (s *Server) Publish(sessionID, typ string, data any) (string, bool) {
	raw, err := json.Marshal(data)
	if err != nil {
		return "", false
	}
	s.mu.Lock()
	sess := s.m[sessionID]
	s.mu.Unlock()
	if sess == nil {
		return "", false
	}
	return sess.events.publish(typ, raw)
}

// ServeHTTP routes POST /rpc/<VERB>, GET /events and POST /heartbeats.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.Observe != nil {
		v, ok := strings.CutPrefix(r.URL.Path, "/rpc/")
		ok = ok && s.verbs[Verb(v)] != nil
		if strings.HasPrefix(r.URL.Path, ModelPathPrefix) {
			v, ok = string(VerbModel), true // modelproxy.go
		}
		if r.Method == http.MethodConnect {
			v, ok = string(VerbTunnel), true // tunnel.go
		}
		if ok {
			verb := Verb(v)
			ow := &observedWriter{ResponseWriter: w}
			start := time.Now()
			defer func() { s.Observe(verb, ow.code(), time.Since(start)) }()
			w = ow
		}
	}
	if r.URL.Path == HeartbeatsPath && r.Method == http.MethodPost {
		// heartbeats.go: the body of a stream, refused or served, is not
		// waited for (net/http would read it before a refusal, and after
		// the stream); its connection closes with it.
		rc := http.NewResponseController(w)
		rc.EnableFullDuplex()
		w.Header().Set("Connection", "close")
		defer rc.SetReadDeadline(time.Unix(1, 0))
	}
	sess, sessionID, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	if !s.admit(w, sess) || !s.attribute(w, r, sess) {
		return
	}
	switch {
	case r.Method == http.MethodConnect:
		s.serveTunnel(w, r, sessionID) // tunnel.go
	case r.URL.Path == "/events":
		if r.Method != http.MethodGet {
			writeError(w, Errorf(http.StatusMethodNotAllowed, CodeMethod, "GET /events"))
			return
		}
		s.serveEvents(w, r, sess)
	case strings.HasPrefix(r.URL.Path, "/rpc/"):
		s.serveVerb(w, r, sessionID)
	case r.URL.Path == HeartbeatsPath:
		s.serveHeartbeats(w, r, sess, sessionID) // heartbeats.go
	case strings.HasPrefix(r.URL.Path, ModelPathPrefix):
		s.serveModel(w, r, sessionID) // modelproxy.go
	default:
		writeError(w, Errorf(http.StatusNotFound, CodeNotFound, "no such endpoint %s: use POST /rpc/<VERB>, GET /events or POST /heartbeats", r.URL.Path))
	}
}

func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (*session, string, bool) {
	sessionID := r.Header.Get(HeaderSessionID)
	if sessionID == "" {
		sessionID = r.URL.Query().Get("session_id")
	}
	sess := s.check(sessionID, bearer(r.Header))
	if sess != nil {
		if err := certBinding(r.TLS, sessionID); err != nil {
			s.log.Warn("refused a call whose client certificate names another session", "session_id", sessionID, "error", err.Error())
			sess = nil
		}
	}
	if sess != nil {
		if ep, _ := r.Context().Value(endpointKey{}).(*endpoint); ep != nil && ep.agentID != "" && ep.agentID != sess.agentID {
			s.log.Warn("refused a session of another agent on an agent socket", "listener", ep.what, "session_id", sessionID, "session_agent_id", sess.agentID)
			sess = nil
		}
	}
	if sess == nil {
		writeError(w, &Error{Status: http.StatusUnauthorized, Code: CodeUnauthorized})
		return nil, "", false
	}
	return sess, sessionID, true
}

// bearer returns the token of the one Authorization header of the form
// "Bearer <token>" (that scheme exactly, one space, a non-empty token), or
// "" for anything else: no header, two headers, another scheme or case, a
// bare token.
func bearer(h http.Header) string {
	vals := h.Values("Authorization")
	if len(vals) != 1 {
		return ""
	}
	token, ok := strings.CutPrefix(vals[0], "Bearer ")
	if !ok {
		return ""
	}
	return token
}

func (s *Server) admit(w http.ResponseWriter, sess *session) bool {
	if err := s.take(sess); err != nil {
		w.Header().Set("Retry-After", strconv.Itoa(int(err.RetryAfter/time.Second)))
		writeError(w, err)
		return false
	}
	return true
}

// take spends one of the session's rate tokens: nil, or the 429 to answer
// (RetryAfter in whole seconds, at least one).
func (s *Server) take(sess *session) *Error {
	s.mu.Lock()
	ok, wait := sess.limiter.take(s.now(), s.limits.Rate, s.limits.Burst)
	s.mu.Unlock()
	if ok {
		return nil
	}
	secs := max(int(math.Ceil(wait.Seconds())), 1)
	e := Errorf(http.StatusTooManyRequests, CodeRateLimited, "more than %g requests per second from this session; retry after %ds", s.limits.Rate, secs)
	e.RetryAfter = time.Duration(secs) * time.Second
	return e
}

// requestID is the request's X-Choir-Request-Id, echoed on the answer; a
// request without one is answered 400 (ok false).
func requestID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.Header.Get(HeaderRequestID)
	if id == "" {
		writeError(w, Errorf(http.StatusBadRequest, CodeBadRequest, "missing %s header", HeaderRequestID))
		return "", false
	}
	w.Header().Set(HeaderRequestID, id)
	return id, true
}

func (s *Server) serveVerb(w http.ResponseWriter, r *http.Request, sessionID string) {
	verb := Verb(strings.TrimPrefix(r.URL.Path, "/rpc/"))
	call, ok := s.verbs[verb]
	if !ok {
		writeError(w, Errorf(http.StatusNotFound, CodeUnknownVerb, "unknown verb %q", verb))
		return
	}
	if r.Method != http.MethodPost {
		writeError(w, Errorf(http.StatusMethodNotAllowed, CodeMethod, "use POST /rpc/%s", verb))
		return
	}
	reqID, ok := requestID(w, r)
	if !ok {
		return
	}
	rc := http.NewResponseController(w)
	if s.limits.BodyTimeout > 0 {
		rc.SetReadDeadline(s.now().Add(s.limits.BodyTimeout))
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.limits.MaxPayload))
	rc.SetReadDeadline(time.Time{})
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, Errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "payload larger than %d bytes", s.limits.MaxPayload))
			return
		}
		var nerr net.Error
		if errors.As(err, &nerr) && nerr.Timeout() {
			w.Header().Set("Connection", "close")
			writeError(w, Errorf(http.StatusRequestTimeout, CodeBadRequest, "request body not received within %s", s.limits.BodyTimeout))
			return
		}
		writeError(w, Errorf(http.StatusBadRequest, CodeBadRequest, "read body: %v", err))
		return
	}
	resp, rerr := s.invoke(r.Context(), verb, call, body, sessionID, reqID)
	if rerr != nil {
		writeError(w, rerr)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// invoke calls a verb's handler with a request body read whole: its
// answer, or the error to answer with (a handler's failure that is no
// *Error is logged and becomes a 500; a 400 is logged).
func (s *Server) invoke(ctx context.Context, verb Verb, call func(context.Context, []byte) (any, error), body []byte, sessionID, reqID string) (any, *Error) {
	resp, err := call(WithCall(ctx, Call{RequestID: reqID, SessionID: sessionID}), body)
	if err == nil {
		return resp, nil
	}
	var rerr *Error
	if !errors.As(err, &rerr) {
		s.log.Error("rpc handler failed", "verb", string(verb), "session_id", sessionID, "request_id", reqID, "error", err.Error())
		rerr = Errorf(http.StatusInternalServerError, CodeInternal, "%s failed: %v", verb, err)
	} else if rerr.Status == http.StatusBadRequest {
		s.log.Warn("rpc request refused", "verb", string(verb), "session_id", sessionID, "request_id", reqID, "status", rerr.Status, "error", clipTo(rerr.Message, 300))
	}
	return nil, rerr
}

func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request, sess *session) {
	var after uint64
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		n, err := strconv.ParseUint(last, 10, 64)
		if err != nil {
			writeError(w, Errorf(http.StatusBadRequest, CodeBadRequest, "Last-Event-ID %q is not an event id: send the id of the last event received, or none", last))
			return
		}
		if head := sess.events.head(); n > head {
			writeError(w, Errorf(http.StatusBadRequest, CodeBadRequest, "Last-Event-ID %d is beyond this session's newest event %d: resume from an event this session sent, or send none to start over", n, head))
			return
		}
		after = n
	}
	if !s.openStream(w, &sess.streams, "event streams, the limit: close one (GET /events) before opening another") {
		return
	}
	defer s.closeStream(&sess.streams)
	rc := http.NewResponseController(w)
	defer rc.SetWriteDeadline(time.Time{})
	// flush sends what is buffered within StreamWriteTimeout; false ends
	// the stream.
	flush := func() bool {
		if s.limits.StreamWriteTimeout > 0 {
			rc.SetWriteDeadline(time.Now().Add(s.limits.StreamWriteTimeout))
		}
		return rc.Flush() == nil
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if !flush() {
		return
	}
	keepalive := time.NewTicker(s.limits.Keepalive)
	defer keepalive.Stop()
	first := true
	for {
		evs, gap, wake, closed := sess.events.since(after)
		if gap && first {
			writeSSE(w, PushEvent{Type: EventGap, Data: json.RawMessage(`{}`)})
		}
		first = false
		for _, ev := range evs {
			writeSSE(w, ev)
			after, _ = strconv.ParseUint(ev.ID, 10, 64)
		}
		if !flush() || closed {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-wake:
		case <-keepalive.C:
			io.WriteString(w, ": keepalive\n\n")
			if !flush() {
				return
			}
		}
	}
}

// openStream counts a stream of the session (*count: its event streams
// or its heartbeat streams) against MaxStreamsPerSession; over it, a 429
// saying what to do (what).
func (s *Server) openStream(w http.ResponseWriter, count *int, what string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if *count >= s.limits.MaxStreamsPerSession {
		w.Header().Set("Retry-After", "5")
		writeError(w, Errorf(http.StatusTooManyRequests, CodeRateLimited,
			"this session already has %d open %s", *count, what))
		return false
	}
	*count++
	return true
}

func (s *Server) closeStream(count *int) {
	s.mu.Lock()
	*count--
	s.mu.Unlock()
}

func writeSSE(w io.Writer, ev PushEvent) {
	var b bytes.Buffer
	if ev.ID != "" {
		b.WriteString("id: " + ev.ID + "\n")
	}
	b.WriteString("event: " + ev.Type + "\n")
	b.WriteString("data: ")
	b.Write(compact(ev.Data))
	b.WriteString("\n\n")
	w.Write(b.Bytes())
}

func compact(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return []byte("null")
	}
	return b.Bytes()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, e *Error) {
	if e.Status == 0 {
		e.Status = http.StatusInternalServerError
	}
	if ow, ok := w.(*observedWriter); ok {
		ow.errCode = e.Code
	}
	writeJSON(w, e.Status, errorBody{Error: e})
}

// observedWriter keeps the error code a call was answered with, for
// Server.Observe.
type observedWriter struct {
	http.ResponseWriter
	errCode string
}

// Unwrap lets http.ResponseController reach the connection (read deadlines).
func (w *observedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *observedWriter) code() string {
	if w.errCode != "" {
		return w.errCode
	}
	return "ok"
}
