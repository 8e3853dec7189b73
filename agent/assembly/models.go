package assembly

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"choir/agent/lane"
	"choir/internal/config"
	"choir/internal/openai"
)

// The model roles (§7.1, issue 23): each names a lane's model in the config
// choird sent. The edge's is the session's llm (model set changes it); the
// core jobs' is core_llm and the session summary's and compaction's is
// summary_llm, each the edge's when absent.
func edgeModel(d config.Dynamic) string { return d.LLM }

func coreModel(d config.Dynamic) string {
	if d.CoreLLM != "" {
		return d.CoreLLM
	}
	return d.LLM
}

func summaryModel(d config.Dynamic) string {
	if d.SummaryLLM != "" {
		return d.SummaryLLM
	}
	return d.LLM
}

// settings snapshots the settings of a lane's model at the start of each
// call.
func (rt *Runtime) settings(pick func(config.Dynamic) string) lane.Settings {
	d := rt.dynamic()
	m := d.Models[pick(d)]
	s := lane.Settings{
		Model:         m.Model,
		RateLimitWait: time.Duration(d.Tunables.RateLimitRetryMS) * time.Millisecond,
		CallTimeout:   time.Duration(d.Tunables.Budgets.LLMCallTimeoutMS) * time.Millisecond,
		ContextWindow: m.ContextWindow,
	}
	if t, ok := m.EffectiveTemperature(); ok {
		s.Temperature = &t
	}
	if e, ok := m.ReasoningEffort.Get(); ok {
		s.ReasoningEffort = &e
	}
	return s
}

// client returns the OpenAI-compatible client of a named model in the
// current config: its endpoint and key can change with a config version.
func (rt *Runtime) client(d config.Dynamic, name string) (*openai.Client, error) {
	m, ok := d.Models[name]
	if !ok {
		return nil, fmt.Errorf("the model %q is not in the config choird sent", name)
	}
	if rt.proxied() {
		return rt.proxyClient(name) // modelproxy.go: choird holds the key
	}
	key := ""
	if m.Secret != "" {
		var ok bool
		if key, ok = rt.sess.Secrets.Get(m.Secret); !ok {
			return nil, fmt.Errorf("the key of model %q (secret %s) has not been granted", name, m.Secret)
		}
	}
	cacheKey := m.Endpoint + "\x00" + key
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if c := rt.clients[cacheKey]; c != nil {
		return c, nil
	}
	c, err := openai.New(openai.Config{Endpoint: m.Endpoint, APIKey: key, HTTPClient: rt.modelHTTP()})
	if err != nil {
		return nil, err
	}
	rt.clients[cacheKey] = c
	return c, nil
}

// withTemplate puts the named model's request template (§6.3) on req: its
// body fields as Extra, its headers with each named secret's value in its
// format. The template is read at each call, so a config apply or a
// rotated secret applies to the next one.
func (rt *Runtime) withTemplate(req openai.ChatRequest, name string, m config.Model) (openai.ChatRequest, error) {
	if m.Request == nil {
		return req, nil
	}
	req.Extra = m.Request.Body
	if len(m.Request.Headers) == 0 || rt.proxied() { // choird adds them (modelproxy.go)
		return req, nil
	}
	req.Header = http.Header{}
	for h, v := range m.Request.Headers {
		secret := ""
		if v.Secret != "" {
			var ok bool
			if secret, ok = rt.sess.Secrets.Get(v.Secret); !ok {
				return req, fmt.Errorf("the secret %s of models.%s.request.headers.%s has not been granted: check that secrets.json holds it, then run choirctl secret apply", v.Secret, name, h)
			}
		}
		req.Header.Set(h, v.Render(secret))
	}
	return req, nil
}

// modelClient is a lane's model (one role's): at every call it takes the
// role's model in the current config and, when that model answers a 5xx,
// times out, or is rate-limited again after §7.7's one retry, tries the
// model's fallbacks in order (models.<name>.fallback, one level deep:
// a fallback's own list is not followed). Without a fallback list a
// failure is returned as it is (§7.7 unchanged).
type modelClient struct {
	rt   *Runtime
	pick func(config.Dynamic) string
}

func (m modelClient) Chat(ctx context.Context, req openai.ChatRequest) (*openai.ChatResponse, error) {
	return m.call(ctx, req, nil)
}

func (m modelClient) ChatWithRateLimitRetry(ctx context.Context, req openai.ChatRequest, rl openai.RateLimitRetry) (*openai.ChatResponse, error) {
	return m.call(ctx, req, &rl)
}

// call makes the attempts: the role's model with req as the lane built it,
// then each fallback with its own model id, temperature, reasoning effort
// and template. A fallback is never a model outside the config choird
// sent. On a lane turn (rl set) each fallback gets llm_call_timeout_ms of
// its own even when the first attempt spent the lane's (a cancel still
// stops it); a summary or compaction call (rl nil) keeps its caller's
// deadline for every attempt.
func (m modelClient) call(ctx context.Context, req openai.ChatRequest, rl *openai.RateLimitRetry) (*openai.ChatResponse, error) {
	d := m.rt.dynamic()
	first := m.pick(d)
	chain := fallbackChain(d, first)
	var failures []string
	for i, name := range chain {
		r := req
		if i > 0 {
			r = asModel(req, d.Models[name])
		}
		attemptCtx, cancel := ctx, context.CancelFunc(func() {})
		if i > 0 && rl != nil {
			attemptCtx, cancel = freshDeadline(ctx, time.Duration(d.Tunables.Budgets.LLMCallTimeoutMS)*time.Millisecond)
		}
		resp, err := m.attempt(attemptCtx, d, name, r, rl)
		cancel()
		outcome := "ok"
		if err != nil {
			outcome = failure(err)
		}
		m.rt.log.Info("model attempt", "model", name, "attempt", i+1, "of", len(chain), "outcome", outcome)
		if err == nil {
			if i > 0 {
				m.rt.fallbackNotice(first, failures[0], name)
			}
			return resp, nil
		}
		if i == len(chain)-1 || !moveOn(ctx, err, rl != nil) {
			if i > 0 {
				return nil, fmt.Errorf("%s failed (%s); its fallback %s failed too: %w", first, failures[0], name, err)
			}
			return nil, err
		}
		failures = append(failures, outcome)
	}
	return nil, fmt.Errorf("no model to call") // chain is never empty
}

// attempt is one call to one model: its client and template, and §7.7's
// 429 retry when the lane asked for it.
func (m modelClient) attempt(ctx context.Context, d config.Dynamic, name string, req openai.ChatRequest, rl *openai.RateLimitRetry) (*openai.ChatResponse, error) {
	c, err := m.rt.client(d, name)
	if err != nil {
		return nil, err
	}
	if req, err = m.rt.withTemplate(req, name, d.Models[name]); err != nil {
		return nil, err
	}
	// spend.go: reserved against the caps, recorded in the usage ledger.
	return m.rt.meter(ctx, name, req, func(ctx context.Context) (*openai.ChatResponse, error) {
		if rl != nil {
			return c.ChatWithRateLimitRetry(ctx, req, *rl)
		}
		return c.Chat(ctx, req)
	})
}

// fallbackChain is the model then its fallbacks that the config holds, each
// once.
func fallbackChain(d config.Dynamic, first string) []string {
	chain := []string{first}
	for _, f := range d.Models[first].Fallback {
		if _, ok := d.Models[f]; ok && !slices.Contains(chain, f) {
			chain = append(chain, f)
		}
	}
	return chain
}

// asModel is req sent to another model: its id, temperature and reasoning
// effort (the template is added per attempt).
func asModel(req openai.ChatRequest, m config.Model) openai.ChatRequest {
	req.Model, req.Temperature, req.ReasoningEffort = m.Model, nil, nil
	if t, ok := m.EffectiveTemperature(); ok {
		req.Temperature = &t
	}
	if e, ok := m.ReasoningEffort.Get(); ok {
		req.ReasoningEffort = &e
	}
	return req
}

// fallsBack says whether a failure moves to the next model: a 5xx (or an
// error object in a 200 answer), a timeout, or, after §7.7's retry, a
// 429 again. A 429 without that retry (summary, compaction), a refused
// request, a bad key, a content filter or a cancel does not.
func fallsBack(err error, retried bool) bool {
	e, ok := errors.AsType[*openai.APIError](err)
	if !ok {
		return false
	}
	switch e.Kind {
	case openai.KindServerError, openai.KindTimeout:
		return true
	case openai.KindRateLimited:
		return retried
	}
	return false
}

// moveOn says whether a failed attempt passes the call to the next model:
// the failure is one a fallback mends and the caller still waits. A lane
// turn whose own deadline passed still waits (its fallback has time of its
// own); a canceled call, or a summary or compaction past its deadline,
// does not.
func moveOn(ctx context.Context, err error, retried bool) bool {
	switch {
	case !fallsBack(err, retried):
		return false
	case ctx.Err() == nil:
		return true
	}
	return retried && errors.Is(ctx.Err(), context.DeadlineExceeded)
}

// failure names an attempt's failure in a few words for the log and the
// DM: "HTTP 503", "timeout", "rate-limited".
func failure(err error) string {
	e, ok := errors.AsType[*openai.APIError](err)
	switch {
	case !ok:
		return "error"
	case e.Kind == openai.KindRateLimited:
		return "rate-limited (HTTP 429)"
	case e.Status >= 300:
		return fmt.Sprintf("HTTP %d", e.Status)
	}
	return e.Kind.String()
}

// freshDeadline is parent's values and cancellation without its deadline,
// bounded by limit instead (none when limit is zero): a fallback after a
// timeout has time of its own, and a cancel of the lane still stops it.
func freshDeadline(parent context.Context, limit time.Duration) (context.Context, context.CancelFunc) {
	var ctx context.Context
	var cancel context.CancelFunc
	if limit > 0 {
		ctx, cancel = context.WithTimeout(context.WithoutCancel(parent), limit)
	} else {
		ctx, cancel = context.WithCancel(context.WithoutCancel(parent))
	}
	stop := context.AfterFunc(parent, func() {
		if !errors.Is(parent.Err(), context.DeadlineExceeded) {
			cancel()
		}
	})
	return ctx, func() { stop(); cancel() }
}

// fallbackNotice tells the DM which model failed and which answered, once
// per turn for each pair (the set is cleared with every edge reply).
func (rt *Runtime) fallbackNotice(failed, why, answered string) {
	key := failed + "\x00" + answered
	rt.mu.Lock()
	if rt.fallbacksTold == nil {
		rt.fallbacksTold = map[string]bool{}
	}
	told := rt.fallbacksTold[key]
	rt.fallbacksTold[key] = true
	rt.mu.Unlock()
	if !told {
		rt.notify(fmt.Sprintf("The model %s failed (%s); its fallback %s answered instead.", failed, why, answered))
	}
}

// turnEnded forgets the fallback notices given, so the next turn tells
// again.
func (rt *Runtime) turnEnded() {
	rt.mu.Lock()
	clear(rt.fallbacksTold)
	rt.mu.Unlock()
}
