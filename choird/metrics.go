package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"choir/choird/control"
	"choir/choird/lifecycle"
	"choir/choird/store"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/metrics"
	"choir/internal/rpc"
)

// metricsSources are what choird's function families read at each scrape;
// run sets them once its parts exist. A nil source reports nothing.
type metricsSources struct {
	Agents   func() []ctl.AgentStatus               // every configured agent's status
	Running  func() int                             // running sessions
	Pending  func(ctx context.Context) (int, error) // approvals waiting for a decision
	Gateways func() []ctl.GatewayStatus             // each bot's counters
	// Outbox is every (agent, DM) outbox with messages in it.
	Outbox func(ctx context.Context) ([]store.OutboxStat, error)
}

var (
	sourcesMu    sync.Mutex
	sources      metricsSources
	registerOnce sync.Once
)

// agentStates are the states agent status reports; each is always shown.
var agentStates = []string{"starting", "running", "stopping", "stopped"}

// pendingTimeout bounds the approvals query of one scrape.
const pendingTimeout = 2 * time.Second

func currentSources() metricsSources {
	sourcesMu.Lock()
	defer sourcesMu.Unlock()
	return sources
}

// registerFunctionFamilies adds, once per process, the families computed
// at scrape time from choird's parts.
func registerFunctionFamilies() {
	registerOnce.Do(func() {
		r := metrics.Default
		r.GaugeFunc("choir_agents", "Configured agents by state (starting, running, stopping, stopped).", []string{"state"}, func() []metrics.Sample {
			src := currentSources()
			if src.Agents == nil {
				return nil
			}
			out := make([]metrics.Sample, 0, len(agentStates))
			for _, s := range agentStates {
				out = append(out, metrics.Sample{Labels: []string{s}})
			}
			for _, a := range src.Agents() {
				out = append(out, metrics.Sample{Value: 1, Labels: []string{a.State}})
			}
			return out
		})
		r.GaugeFunc("choir_heartbeat_age_seconds", "Seconds since each running agent's last heartbeat.", []string{"agent"}, func() []metrics.Sample {
			src := currentSources()
			if src.Agents == nil {
				return nil
			}
			var out []metrics.Sample
			now := time.Now()
			for _, a := range src.Agents() {
				if a.State == "running" && !a.LastHeartbeat.IsZero() {
					out = append(out, metrics.Sample{Value: now.Sub(a.LastHeartbeat).Seconds(), Labels: []string{a.AgentID}})
				}
			}
			return out
		})
		r.GaugeFunc("choir_sessions_active", "Agent sessions running now.", nil, func() []metrics.Sample {
			if src := currentSources(); src.Running != nil {
				return []metrics.Sample{{Value: float64(src.Running())}}
			}
			return nil
		})
		r.GaugeFunc("choir_approvals_pending", "Approval requests waiting for a decision (absent when Postgres does not answer).", nil, func() []metrics.Sample {
			src := currentSources()
			if src.Pending == nil {
				return nil
			}
			ctx, cancel := context.WithTimeout(context.Background(), pendingTimeout)
			defer cancel()
			n, err := src.Pending(ctx)
			if err != nil {
				return nil
			}
			return []metrics.Sample{{Value: float64(n)}}
		})
		r.GaugeFunc("choir_outbox_depth", "Messages waiting in a Telegram DM's outbox, by agent and DM (absent when Postgres does not answer).", []string{"agent", "dm"}, func() []metrics.Sample {
			src := currentSources()
			if src.Outbox == nil {
				return nil
			}
			ctx, cancel := context.WithTimeout(context.Background(), pendingTimeout)
			defer cancel()
			stats, err := src.Outbox(ctx)
			if err != nil {
				return nil
			}
			out := make([]metrics.Sample, 0, len(stats))
			for _, o := range stats {
				out = append(out, metrics.Sample{Value: float64(o.Queued), Labels: []string{o.AgentID, o.DM}})
			}
			return out
		})
		r.CounterFunc("choir_telegram_updates_total", "Telegram updates received and handed on, by gateway.", []string{"gateway"}, func() []metrics.Sample {
			src := currentSources()
			if src.Gateways == nil {
				return nil
			}
			var out []metrics.Sample
			for _, g := range src.Gateways() {
				out = append(out, metrics.Sample{Value: float64(g.Updates), Labels: []string{g.Gateway}})
			}
			return out
		})
	})
}

// startMetrics serves /metrics on the configured address, or does nothing
// when metrics are off. It returns the address it listens on ("" when
// off) and a function that stops the server.
func startMetrics(c *config.Config, src metricsSources, log *slog.Logger) (addr string, stop func(), err error) {
	registerFunctionFamilies()
	sourcesMu.Lock()
	sources = src
	sourcesMu.Unlock()
	var m *config.Metrics
	if c != nil {
		m = c.Metrics
	}
	want, on, remote, err := config.MetricsAddress(m)
	switch {
	case err != nil:
		return "", nil, fmt.Errorf("config.json metrics.listen %q: %v", m.Listen, err)
	case !on:
		return "", func() {}, nil
	case remote && !m.AllowRemote:
		return "", nil, fmt.Errorf("config.json metrics.listen %q is not a loopback address: set metrics.allow_remote: true to serve /metrics to the network", m.Listen)
	}
	l, err := net.Listen("tcp", want)
	if err != nil {
		return "", nil, fmt.Errorf("serve /metrics on %s (config.json metrics.listen): %w; choose a free port or remove the metrics block", want, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics.Default.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute, MaxHeaderBytes: 8 << 10,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			log.Error("the /metrics server stopped", "error", err.Error())
		}
	}()
	log.Info("serving /metrics", "address", l.Addr().String(), "remote", remote)
	return l.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close()
		}
		<-done
	}, nil
}

// countRPC is rpc.Server.Observe: every agent protocol call of a served
// verb, by verb and the code it was answered with (refusals before the
// handler, such as unauthorized or rate_limited, included), and its time.
func countRPC(verb rpc.Verb, code string, took time.Duration) {
	metrics.RPCSeconds.With(string(verb)).Observe(took.Seconds())
	metrics.RPCRequests.With(string(verb), code).Inc()
}

// countAdmin counts choirctl's requests by the route pattern that served
// them (never the path, which holds names and ids) and the status.
func countAdmin(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(sw, r)
		route := r.Pattern // set by the ServeMux on this request
		if route == "" {
			route = "none"
		}
		metrics.AdminRequests.With(route, strconv.Itoa(sw.code)).Inc()
	})
}

type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(p)
}

// Flush keeps the admin API's streams (log follow, chat) flushing.
func (w *statusWriter) Flush() {
	w.wrote = true
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// telegramHTTP is the Bot API's HTTP client, counting each call by method
// and status in choir_telegram_requests_total.
func telegramHTTP() *http.Client {
	return &http.Client{Transport: metrics.Observe(http.DefaultTransport, countTelegram)}
}

func countTelegram(req *http.Request, resp *http.Response, err error) {
	code := "error"
	switch {
	case err == nil:
		code = strconv.Itoa(resp.StatusCode)
	case req.Context().Err() != nil:
		return // stopped or cut short by the poll's watchdog, not Telegram's doing
	}
	metrics.TelegramRequests.With(telegramMethod(req.URL.Path), code).Inc()
}

var methodRE = regexp.MustCompile(`^[A-Za-z]{1,40}$`)

// telegramMethod is the Bot API method of a request path
// (`…/bot<token>/<method>`): never the token, never a file's path
// (`…/file/bot<token>/<path>` is "file"), "other" for anything else.
func telegramMethod(path string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if !strings.HasPrefix(s, "bot") {
			continue
		}
		switch {
		case i > 0 && segs[i-1] == "file":
			return "file"
		case i == len(segs)-2 && methodRE.MatchString(segs[i+1]):
			return segs[i+1]
		}
		return "other"
	}
	return "other"
}

// eventCounter counts, from the events choird stores for a session, the
// tool calls (ToolResultCommitted, with status and duration_ms) the agent
// made. Model calls are counted from the usage ledger's rows instead
// (metrics_calls.go). The agent writes these payloads, so nothing it says
// becomes a label unchecked: a tool name must look like one (else
// "other") and contain no secret value.
type eventCounter struct{ loaded func() *config.Loaded }

// stored counts the events after rev `after` (those before were stored,
// and counted, already).
func (c eventCounter) stored(agentID string, after int64, events []rpc.Event) {
	for _, e := range events {
		if e.Rev > after && e.Type == "ToolResultCommitted" {
			c.toolResult(e.Payload)
		}
	}
}

func (c eventCounter) toolResult(payload json.RawMessage) {
	var p struct {
		Tool       string `json:"tool"`
		Status     string `json:"status"`
		DurationMS int64  `json:"duration_ms"`
	}
	if json.Unmarshal(payload, &p) != nil {
		return
	}
	tool := c.toolLabel(p.Tool)
	metrics.ToolCalls.With(tool).Inc()
	if p.Status == "error" {
		metrics.ToolErrors.With(tool).Inc()
	}
	if p.DurationMS >= 0 {
		metrics.ToolSeconds.With(tool).Observe(float64(p.DurationMS) / 1000)
	}
}

// toolNameRE is the canonical tool name (agent/tool's rule), e.g. choir.fs.read.
var toolNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$`)

// toolLabel is name when it is shaped like a tool name, at most 64
// bytes, and holds no secret value (three bytes or longer, as the log
// redactor matches); else "other".
func (c eventCounter) toolLabel(name string) string {
	if len(name) > 64 || !toolNameRE.MatchString(name) {
		return "other"
	}
	if l := c.loaded(); l != nil {
		for _, v := range l.Secrets {
			if len(v) >= 3 && strings.Contains(name, v) {
				return "other"
			}
		}
	}
	return name
}

// serveMetrics starts /metrics when config.json asks for it, reading
// choird's parts at each scrape, and counts what choird's rooms report
// through their hooks (sessions ended, events stored).
func serveMetrics(plane *control.Plane, m *lifecycle.Manager, st *store.Store, log *slog.Logger) (stop func(), err error) {
	closed := m.SessionClosed
	m.SessionClosed = func(agentID, sessionID, status string) {
		metrics.SessionsEnded.With(status).Inc()
		if closed != nil {
			closed(agentID, sessionID, status)
		}
	}
	m.EventsStored = eventCounter{loaded: plane.Config}.stored
	src := metricsSources{
		Agents:  m.List,
		Running: m.Running,
		Pending: func(ctx context.Context) (int, error) {
			a, err := st.PendingApprovals(ctx, "")
			return len(a), err
		},
		Gateways: func() []ctl.GatewayStatus { return plane.Status().Gateways },
		Outbox:   func(ctx context.Context) ([]store.OutboxStat, error) { return st.OutboxStats(ctx, "") },
	}
	_, stop, err = startMetrics(plane.Config().Config, src, log)
	return stop, err
}
