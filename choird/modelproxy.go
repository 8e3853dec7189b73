package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"choir/internal/config"
	"choir/internal/rpc"
)

// modelProxy carries the agents' model calls (issue 25 item 1): a run
// container has no network, and an agent with agents.<id>.model_proxy
// holds no model key, so choird, which holds the endpoints and the keys,
// makes the call. It is rpc.Server.Models: the server has authenticated
// the session, checked the path and bounded the body.
//
// A session may call only its own models: its llm, core_llm and
// summary_llm as bound now (a model set included) and their fallbacks,
// the same set whose keys GET_SECRETS would grant it (MCP sampling uses
// one of them). The body's "model" must be that model's id, so a cheap
// model's name cannot carry an expensive one's id on the same key.
// choird adds the configured endpoint, the key and the request
// template's headers; from the agent only the body crosses. Redirects are
// not followed (a 502 says so), the answer is bounded, and the provider's
// status, Content-Type and Retry-After go back with its body, in which
// every secret value choird added is redacted.
type modelProxy struct {
	config   func() *config.Loaded
	sessions interface {
		SessionBindings(sessionID string) (agentID string, b rpc.ResourceBindings, ok bool)
	}
	client *http.Client // nil: newModelHTTP()
	// timeout bounds one call, answer included; zero means
	// defaultModelProxyTimeout.
	timeout time.Duration
	log     *slog.Logger
}

var _ rpc.ModelProxy = (*modelProxy)(nil)

// defaultModelProxyTimeout bounds a carried call when the config's
// llm_call_timeout_ms is unset; with it set, that plus a minute (the agent
// gives up first and its cancel reaches the provider at once).
const defaultModelProxyTimeout = 10 * time.Minute

// maxModelAnswer bounds a provider's answer as internal/openai does.
const maxModelAnswer = 64 << 20

// newModelHTTP is the client of carried calls: the standard transport,
// never following a redirect.
func newModelHTTP() *http.Client {
	return &http.Client{
		Transport:     http.DefaultTransport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// ProxyModel makes one carried call.
func (p *modelProxy) ProxyModel(ctx context.Context, call rpc.ModelCall) (*rpc.ModelAnswer, error) {
	agentID, b, ok := p.sessions.SessionBindings(call.SessionID)
	if !ok {
		return nil, rpc.Errorf(http.StatusGone, rpc.CodeFailedPrecondition, "session %s has ended: its model calls are no longer carried", call.SessionID)
	}
	l := p.config()
	cfg := l.Config
	allowed := sessionModels(cfg, b)
	if !slices.Contains(allowed, call.Model) {
		p.log.Warn("model call refused: not one of the session's models", "agent_id", agentID, "session_id", call.SessionID, "model", call.Model)
		return nil, rpc.Forbidden("model %q is not one this session may use (its models: %s): the models are the agent's llm, core_llm and summary_llm and their fallbacks; change them with choirctl model set or in config.json",
			call.Model, strings.Join(allowed, ", "))
	}
	m := cfg.Models[call.Model]
	if err := checkModelBody(call, m); err != nil {
		return nil, err
	}
	target, err := url.Parse(m.Endpoint)
	if err != nil {
		return nil, rpc.Errorf(http.StatusBadGateway, rpc.CodeUnavailable, "models.%s.endpoint is not a URL: fix config.json", call.Model)
	}
	target = target.JoinPath(call.Op)
	timeout := p.timeout
	if timeout == 0 {
		timeout = defaultModelProxyTimeout
		if ms := cfg.Tunables.Budgets.LLMCallTimeoutMS; ms > 0 {
			timeout = time.Duration(ms)*time.Millisecond + time.Minute
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), bytes.NewReader(call.Body))
	if err != nil {
		return nil, rpc.Errorf(http.StatusBadGateway, rpc.CodeUnavailable, "models.%s: request not built: %v", call.Model, err)
	}
	secrets, err := addModelHeaders(req.Header, call.Model, m, l.Secrets)
	if err != nil {
		return nil, err
	}
	redact := func(s []byte) []byte {
		for _, v := range secrets {
			s = bytes.ReplaceAll(s, []byte(v), []byte("[redacted]"))
		}
		return s
	}
	where := target.Host + target.EscapedPath()
	hc := p.client
	if hc == nil {
		hc = newModelHTTP()
	}
	began := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is named below, without its query
		}
		status := http.StatusBadGateway
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			status = http.StatusGatewayTimeout
		}
		return nil, rpc.Errorf(status, rpc.CodeUnavailable, "model %s at %s did not answer: %s", call.Model, where, redact([]byte(err.Error())))
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		p.log.Warn("model endpoint answered a redirect; not followed", "agent_id", agentID, "model", call.Model, "endpoint", where, "status", resp.StatusCode)
		return nil, rpc.Errorf(http.StatusBadGateway, rpc.CodeUnavailable, "model %s at %s answered a redirect (HTTP %d), which choird does not follow: set models.%s.endpoint to the address that answers",
			call.Model, where, resp.StatusCode, call.Model)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxModelAnswer+1))
	if err != nil {
		return nil, rpc.Errorf(http.StatusBadGateway, rpc.CodeUnavailable, "model %s at %s: the answer broke off: %s", call.Model, where, redact([]byte(err.Error())))
	}
	if len(body) > maxModelAnswer {
		return nil, rpc.Errorf(http.StatusBadGateway, rpc.CodeUnavailable, "model %s at %s answered more than %d MiB", call.Model, where, maxModelAnswer>>20)
	}
	p.log.Debug("model call carried", "agent_id", agentID, "session_id", call.SessionID, "model", call.Model, "status", resp.StatusCode, "latency_ms", time.Since(began).Milliseconds())
	h := http.Header{}
	for _, name := range rpc.ModelAnswerHeaders {
		if v := resp.Header.Get(name); v != "" {
			h.Set(name, string(redact([]byte(v))))
		}
	}
	return &rpc.ModelAnswer{Status: resp.StatusCode, Header: h, Body: redact(body)}, nil
}

// sessionModels are the models a session with bindings b may call: its
// llm, core_llm and summary_llm and their fallbacks that the config
// holds, each once, in that order.
func sessionModels(cfg *config.Config, b rpc.ResourceBindings) []string {
	var out []string
	for _, name := range []string{b.LLM, b.CoreLLM, b.SummaryLLM} {
		m, ok := cfg.Models[name]
		if !ok {
			continue
		}
		for _, n := range append([]string{name}, m.Fallback...) {
			if _, ok := cfg.Models[n]; ok && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// checkModelBody refuses a body that is not a JSON object naming the
// model's id, or that asks for a stream (choir-agent never streams and
// choird does not carry one).
func checkModelBody(call rpc.ModelCall, m config.Model) error {
	var head struct {
		Model  *string `json:"model"`
		Stream *bool   `json:"stream"`
	}
	if err := json.Unmarshal(call.Body, &head); err != nil {
		return rpc.Errorf(http.StatusBadRequest, rpc.CodeBadRequest, "the model request is not a JSON object with a string \"model\": %v", err)
	}
	switch {
	case head.Model == nil:
		return rpc.Errorf(http.StatusBadRequest, rpc.CodeBadRequest, "the model request names no \"model\": send models.%s.model (%q)", call.Model, m.Model)
	case *head.Model != m.Model:
		return rpc.Forbidden("the request's \"model\" %q is not models.%s.model (%q): a model's name carries only its own id", *head.Model, call.Model, m.Model)
	case head.Stream != nil && *head.Stream:
		return rpc.Errorf(http.StatusBadRequest, rpc.CodeBadRequest, "streamed model calls are not carried by choird: send \"stream\": false or leave it out")
	}
	return nil
}

// addModelHeaders sets what choird adds to a carried call, as
// internal/openai would for a direct one: the request template's headers
// (each secret rendered in its format), Content-Type, Accept, and the key
// as the bearer (over a template's Authorization). It returns the secret
// values it put in, for redaction.
func addModelHeaders(h http.Header, name string, m config.Model, secrets config.Secrets) ([]string, error) {
	var used []string
	if m.Request != nil {
		for k, v := range m.Request.Headers {
			val := ""
			if v.Secret != "" {
				var ok bool
				if val, ok = secrets[v.Secret]; !ok {
					return nil, rpc.Errorf(http.StatusServiceUnavailable, rpc.CodeUnavailable, "the secret %s of models.%s.request.headers.%s is not in secrets.json: add it with choirctl secret set, then choirctl secret apply", v.Secret, name, k)
				}
				used = append(used, val)
			}
			h.Set(k, v.Render(val))
		}
	}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json")
	if m.Secret != "" {
		key, ok := secrets[m.Secret]
		if !ok {
			return nil, rpc.Errorf(http.StatusServiceUnavailable, rpc.CodeUnavailable, "the key of models.%s (secret %s) is not in secrets.json: add it with choirctl secret set, then choirctl secret apply", name, m.Secret)
		}
		h.Set("Authorization", "Bearer "+key)
		used = append(used, key)
	}
	slices.SortFunc(used, func(a, b string) int { return len(b) - len(a) }) // longest first
	return slices.DeleteFunc(used, func(s string) bool { return s == "" }), nil
}
