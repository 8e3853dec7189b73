package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"choir/internal/config"
	"choir/internal/rpc"
)

// The secret values of the proxy tests: none may reach an agent.
const (
	mpKey    = "sk-mp-fast-0123456789abcdef"
	mpOrgKey = "org-mp-secret-fedcba9876543210"
)

// mpProvider is a pretend model endpoint: it records each request and
// answers by the model id in the body.
type mpProvider struct {
	mu   sync.Mutex
	reqs []*http.Request
	body []string
}

func (p *mpProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	p.reqs = append(p.reqs, r)
	p.body = append(p.body, string(data))
	p.mu.Unlock()
	var req struct {
		Model string `json:"model"`
	}
	json.Unmarshal(data, &req)
	switch req.Model {
	case "limited-1":
		w.Header().Set("Retry-After", "7")
		w.Header().Set("Set-Cookie", "tracker=1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"message":"slow down","type":"rate_limit"}}`)
	case "echo-1": // an error page that echoes the credentials it was sent
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"bad key `+r.Header.Get("Authorization")+` for `+r.Header.Get("X-Org")+`"}}`)
	case "moved-1":
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	default:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","model":"`+req.Model+`","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	}
}

func (p *mpProvider) last() (*http.Request, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.reqs) == 0 {
		return nil, ""
	}
	return p.reqs[len(p.reqs)-1], p.body[len(p.body)-1]
}

func (p *mpProvider) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.reqs)
}

// mpSessions is the lifecycle's view of open sessions.
type mpSessions map[string]struct {
	agent string
	b     rpc.ResourceBindings
}

func (s mpSessions) SessionBindings(id string) (string, rpc.ResourceBindings, bool) {
	e, ok := s[id]
	return e.agent, e.b, ok
}

type mpFixture struct {
	prov *mpProvider
	rs   *rpc.Server
	url  string // the shared listener
}

// newMPFixture serves an rpc.Server with the model proxy over a shared
// listener: session s1 of agent a1 (llm fast, its fallback backup, core
// limited, summary echo, moved as limited's fallback), session s2 of
// agent a2 (llm other).
func newMPFixture(t *testing.T) *mpFixture {
	t.Helper()
	prov := &mpProvider{}
	ps := httptest.NewServer(prov)
	t.Cleanup(ps.Close)
	model := func(id string, fallback ...string) config.Model {
		return config.Model{Provider: "openai", Model: id, Endpoint: ps.URL + "/v1", Secret: "fast-key", Fallback: fallback}
	}
	fast := model("fast-1", "backup")
	fast.Request = &config.ModelRequest{Headers: map[string]config.HeaderValue{
		"X-Title": {Value: "choir"},
		"X-Org":   {Secret: "org-key", Format: "org %s"},
	}}
	echo := model("echo-1")
	echo.Request = fast.Request
	cfg := &config.Config{Models: map[string]config.Model{
		"fast": fast, "backup": model("backup-1"), "limited": model("limited-1", "moved"), "moved": model("moved-1"),
		"echo": echo, "other": model("other-1"), "keyless": {Provider: "openai", Model: "k-1", Endpoint: ps.URL + "/v1"},
	}}
	loaded := &config.Loaded{Config: cfg, Secrets: config.Secrets{"fast-key": mpKey, "org-key": mpOrgKey}}
	sessions := mpSessions{}
	sessions["s1"] = struct {
		agent string
		b     rpc.ResourceBindings
	}{"a1", rpc.ResourceBindings{LLM: "fast", CoreLLM: "limited", SummaryLLM: "echo"}}
	sessions["s2"] = struct {
		agent string
		b     rpc.ResourceBindings
	}{"a2", rpc.ResourceBindings{LLM: "other"}}
	rs := rpc.NewServer(fakeHandler{}, rpc.DefaultLimits(), slog.New(slog.DiscardHandler))
	rs.Models = &modelProxy{config: func() *config.Loaded { return loaded }, sessions: sessions, log: slog.New(slog.DiscardHandler)}
	rs.Open("s1", "a1", "tok-1")
	rs.Open("s2", "a2", "tok-2")
	srv := httptest.NewServer(rs)
	t.Cleanup(srv.Close)
	return &mpFixture{prov: prov, rs: rs, url: srv.URL}
}

// call posts body to path with the session's envelope.
func (f *mpFixture) call(t *testing.T, path, session, token, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.url+path, strings.NewReader(body))
	req.Header.Set(rpc.HeaderSessionID, session)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-For", "10.0.0.1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var e struct {
		Error *struct{ Code, Message string }
	}
	if json.Unmarshal(data, &e) == nil && e.Error != nil { // the message, unescaped
		return resp, e.Error.Code + ": " + e.Error.Message
	}
	return resp, string(data)
}

func chatBody(model string) string {
	return `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]}`
}

// TestModelProxyCarriesTheCall: the session's model answers through
// choird, which sent the configured key and template headers and nothing
// of the agent's own headers.
func TestModelProxyCarriesTheCall(t *testing.T) {
	f := newMPFixture(t)
	resp, body := f.call(t, "/v1/model/fast/chat/completions", "s1", "tok-1", chatBody("fast-1"))
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"content":"hello"`) {
		t.Fatalf("POST fast = %d %s; want 200 with the model's answer", resp.StatusCode, body)
	}
	got, sent := f.prov.last()
	if got.URL.Path != "/v1/chat/completions" {
		t.Errorf("provider path = %q; want /v1/chat/completions", got.URL.Path)
	}
	for h, want := range map[string]string{"Authorization": "Bearer " + mpKey, "X-Title": "choir", "X-Org": "org " + mpOrgKey, "Content-Type": "application/json"} {
		if v := got.Header.Get(h); v != want {
			t.Errorf("provider header %s = %q; want %q", h, v, want)
		}
	}
	for _, h := range []string{rpc.HeaderSessionID, "X-Forwarded-For"} {
		if v := got.Header.Get(h); v != "" {
			t.Errorf("provider received the agent's header %s = %q; want none", h, v)
		}
	}
	if strings.Contains(got.Header.Get("Authorization"), "tok-1") {
		t.Error("the lease token reached the provider")
	}
	if sent != chatBody("fast-1") {
		t.Errorf("provider body = %s; want the agent's body unchanged", sent)
	}
	// A fallback of the session's model is allowed too.
	if resp, body := f.call(t, "/v1/model/backup/chat/completions", "s1", "tok-1", chatBody("backup-1")); resp.StatusCode != http.StatusOK {
		t.Errorf("POST backup (fast's fallback) = %d %s; want 200", resp.StatusCode, body)
	}
}

// TestModelProxyRefuses: hostile and mistaken calls are refused before
// any reaches the provider, each with a status and a message that says
// what to do.
func TestModelProxyRefuses(t *testing.T) {
	f := newMPFixture(t)
	for _, tc := range []struct {
		name, path, session, token, body string
		status                           int
		contains                         string
	}{
		{"unbound model", "/v1/model/other/chat/completions", "s1", "tok-1", chatBody("other-1"), 403, `model "other" is not one this session may use (its models: fast, backup, limited, moved, echo)`},
		{"keyless model not bound", "/v1/model/keyless/chat/completions", "s1", "tok-1", chatBody("k-1"), 403, "not one this session may use"},
		{"unknown model", "/v1/model/gpt-9/chat/completions", "s1", "tok-1", chatBody("gpt-9"), 403, "not one this session may use"},
		{"another agent's token for a1's model", "/v1/model/fast/chat/completions", "s2", "tok-2", chatBody("fast-1"), 403, "its models: other"},
		{"another session's token", "/v1/model/fast/chat/completions", "s1", "tok-2", chatBody("fast-1"), 401, "unauthorized"},
		{"no token", "/v1/model/fast/chat/completions", "s1", "", chatBody("fast-1"), 401, "unauthorized"},
		{"the model key as the token", "/v1/model/fast/chat/completions", "s1", mpKey, chatBody("fast-1"), 401, "unauthorized"},
		{"dot-dot", "/v1/model/../chat/completions", "s1", "tok-1", chatBody("fast-1"), 404, "no such model endpoint"},
		{"dot-dot inside", "/v1/model/fast/../other/chat/completions", "s1", "tok-1", chatBody("other-1"), 404, "no such model endpoint"},
		{"escaped slash", "/v1/model/fast%2F..%2Fother/chat/completions", "s1", "tok-1", chatBody("other-1"), 404, "no such model endpoint"},
		{"escaped name", "/v1/model/f%61st/chat/completions", "s1", "tok-1", chatBody("fast-1"), 404, "no such model endpoint"},
		{"empty name", "/v1/model//chat/completions", "s1", "tok-1", chatBody("fast-1"), 404, "no such model endpoint"},
		{"another operation", "/v1/model/fast/embeddings", "s1", "tok-1", `{"model":"fast-1","input":"x"}`, 404, "chat/completions"},
		{"operation with a suffix", "/v1/model/fast/chat/completions/x", "s1", "tok-1", chatBody("fast-1"), 404, "no such model endpoint"},
		{"a name's model with another id", "/v1/model/fast/chat/completions", "s1", "tok-1", chatBody("other-1"), 403, `"model" "other-1" is not models.fast.model ("fast-1")`},
		{"no model in the body", "/v1/model/fast/chat/completions", "s1", "tok-1", `{"messages":[]}`, 400, "names no \"model\""},
		{"not JSON", "/v1/model/fast/chat/completions", "s1", "tok-1", `model=fast-1`, 400, "not a JSON object"},
		{"a stream", "/v1/model/fast/chat/completions", "s1", "tok-1", `{"model":"fast-1","stream":true}`, 400, "streamed model calls are not carried"},
		{"oversize body", "/v1/model/fast/chat/completions", "s1", "tok-1", `{"model":"fast-1","pad":"` + strings.Repeat("x", rpc.MaxModelPayload) + `"}`, 413, "larger than 32 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.prov.count()
			resp, body := f.call(t, tc.path, tc.session, tc.token, tc.body)
			if resp.StatusCode != tc.status || !strings.Contains(body, tc.contains) {
				t.Errorf("POST %s = %d %s; want %d containing %q", tc.path, resp.StatusCode, body, tc.status, tc.contains)
			}
			if n := f.prov.count(); n != before {
				t.Errorf("the provider received %d requests; want none", n-before)
			}
		})
	}
	// GET is not a model call.
	req, _ := http.NewRequest(http.MethodGet, f.url+"/v1/model/fast/chat/completions", nil)
	req.Header.Set(rpc.HeaderSessionID, "s1")
	req.Header.Set("Authorization", "Bearer tok-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET a model = %d; want 405", resp.StatusCode)
	}
}

// TestModelProxyPassesTheProviderBack: a 429 comes back with its
// Retry-After (and not the provider's other headers); a redirect is not
// followed; an error page echoing the credentials comes back redacted.
func TestModelProxyPassesTheProviderBack(t *testing.T) {
	f := newMPFixture(t)
	resp, body := f.call(t, "/v1/model/limited/chat/completions", "s1", "tok-1", chatBody("limited-1"))
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "7" || !strings.Contains(body, "slow down") {
		t.Errorf("a provider's 429 = %d Retry-After %q %s; want 429, Retry-After 7 and its error", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if c := resp.Header.Get("Set-Cookie"); c != "" {
		t.Errorf("the provider's Set-Cookie crossed: %q", c)
	}

	n := f.prov.count()
	resp, body = f.call(t, "/v1/model/moved/chat/completions", "s1", "tok-1", chatBody("moved-1"))
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "redirect (HTTP 302), which choird does not follow") || resp.Header.Get("Location") != "" {
		t.Errorf("a provider's redirect = %d Location %q %s; want 502 saying it is not followed, no Location", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	if got := f.prov.count() - n; got != 1 {
		t.Errorf("the redirect made %d requests; want 1 (not followed)", got)
	}

	resp, body = f.call(t, "/v1/model/echo/chat/completions", "s1", "tok-1", chatBody("echo-1"))
	if resp.StatusCode != http.StatusUnauthorized || strings.Contains(body, mpKey) || strings.Contains(body, mpOrgKey) || !strings.Contains(body, "[redacted]") {
		t.Errorf("an error page echoing the key = %d %s; want 401 with the key and the template secret redacted", resp.StatusCode, body)
	}
}

// TestModelProxyOnTheAgentSocket: on an agent's own socket, another
// agent's valid session is refused like a wrong token, and the agent's
// own call is carried.
func TestModelProxyOnTheAgentSocket(t *testing.T) {
	f := newMPFixture(t)
	sock := filepath.Join(t.TempDir(), "a1", "choird.sock")
	ln, err := f.rs.ListenAgent(sock, "a1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	post := func(session, token, model string) int {
		req, _ := http.NewRequest(http.MethodPost, "http://choird/v1/model/"+model+"/chat/completions", strings.NewReader(chatBody(model+"-1")))
		req.Header.Set(rpc.HeaderSessionID, session)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post("s2", "tok-2", "other"); got != http.StatusUnauthorized {
		t.Errorf("a2's session on a1's socket = %d; want 401", got)
	}
	if got := post("s1", "tok-1", "fast"); got != http.StatusOK {
		t.Errorf("a1's own call on its socket = %d; want 200", got)
	}
}
