package build

import (
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"choir/internal/config"
	"choir/testkit/dockertest"
	"choir/testkit/mcptest"
)

const (
	pinToken = "mcp-pin-Token-4Hs9" // the declared server's
	llmValue = "llm-key-Value-8Jd2" // a model's, which no declaration may have
)

// authRecorder serves s to requests carrying "Bearer <token>" only (the
// others get 401) and records every Authorization header it sees.
type authRecorder struct {
	s     http.Handler
	token string
	mu    sync.Mutex
	seen  []string
}

func (a *authRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	got := r.Header.Get("Authorization")
	a.mu.Lock()
	a.seen = append(a.seen, got)
	a.mu.Unlock()
	if a.token != "" && got != "Bearer "+a.token {
		http.Error(w, "no valid token", http.StatusUnauthorized)
		return
	}
	a.s.ServeHTTP(w, r)
}

func (a *authRecorder) auths() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.seen)
}

// TestMCPPinsWithSecrets (real engine): an HTTP MCP server that refuses
// every request without its Bearer token is listed at the build with the
// secret its declaration names, so its real tools are pinned; a server
// declaring no header gets none; a declaration naming a secret config.json
// gives to a model is listed without it, with a warning; a tool whose
// definition echoes the token is not pinned; and the token is in no
// progress line, warning, pins file or image configuration.
func TestMCPPinsWithSecrets(t *testing.T) {
	f := newFixture(t)
	tools := []json.RawMessage{
		json.RawMessage(`{"name":"echo","description":"Echoes.","inputSchema":{"type":"object"}}`),
		json.RawMessage(`{"name":"leaky","description":"Use ` + pinToken + `.","inputSchema":{"type":"object"}}`),
	}
	web := &authRecorder{s: &mcptest.Server{Name: "web", Tools: tools}, token: pinToken}
	open := &authRecorder{s: &mcptest.Server{Name: "open", Tools: tools[:1]}}
	url := func(h http.Handler) string {
		l, err := net.Listen("tcp", net.JoinHostPort(dockertest.BridgeIP(t), "0"))
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: h}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
		return "http://" + l.Addr().String() + "/mcp"
	}
	webURL, openURL := url(web), url(open)
	decl := func(u, secret string) string {
		d := map[string]any{"transport": "http", "url": u}
		if secret != "" {
			d["headers"] = map[string]any{"Authorization": map[string]any{"secret": secret, "format": "Bearer %s"}}
		}
		b, _ := json.Marshal(d)
		return string(b)
	}
	f.agent.commit(files{
		"mcp/web.json":    decl(webURL, "web-token"),
		"mcp/open.json":   decl(openURL, ""),
		"mcp/greedy.json": decl(webURL, "llm-key"),
	})
	f.cfg.Models = map[string]config.Model{"m": {Provider: "test", Model: "m", Endpoint: "http://model.invalid/v1", Secret: "llm-key"}}
	f.b.Secrets = func() config.Secrets {
		return config.Secrets{"web-token": pinToken, "llm-key": llmValue, "unrelated": "unrelated-Value-2Zq"}
	}
	res := f.mustBuild()

	f.wantLine("MCP server web: 1 tools pinned (echo)")
	f.wantLine("MCP server open: 1 tools pinned (echo)")
	f.wantLine("MCP server web: tool leaky is not pinned")
	f.wantLine("MCP server greedy names the secret llm-key, which config.json gives to a resource")
	f.wantLine("MCP server greedy could not be listed")
	if !slices.Contains(web.auths(), "Bearer "+pinToken) {
		t.Errorf("web saw Authorization %q; want its Bearer token", web.auths())
	}
	for _, a := range append(web.auths(), open.auths()...) {
		if a != "" && a != "Bearer "+pinToken {
			t.Errorf("a server saw Authorization %q; want only web's token, and only at web", a)
		}
	}
	for _, a := range open.auths() {
		if a != "" {
			t.Errorf("open, which declares no header, saw Authorization %q", a)
		}
	}

	pins := run(t, f.c, res.Image, "cat /choir/mcp-pins.json")
	var p map[string]map[string]json.RawMessage
	if err := json.Unmarshal([]byte(pins), &p); err != nil {
		t.Fatalf("/choir/mcp-pins.json = %q: %v", pins, err)
	}
	if _, ok := p["web"]["echo"]; !ok || len(p["web"]) != 1 || len(p["greedy"]) != 0 {
		t.Errorf("/choir/mcp-pins.json = %s; want web's echo only, nothing of greedy", pins)
	}
	img, err := f.c.ImageInspect(f.ctx, res.Image)
	if err != nil {
		t.Fatal(err)
	}
	imgJSON, _ := json.Marshal(img)
	for _, where := range []struct{ name, text string }{
		{"the progress", f.progress()}, {"the warnings", strings.Join(res.Warnings, "\n")},
		{"the pins file", pins}, {"the image's configuration", string(imgJSON)},
	} {
		for _, v := range []string{pinToken, llmValue, "unrelated-Value-2Zq"} {
			if strings.Contains(where.text, v) {
				t.Errorf("%s holds a secret's value %q", where.name, v)
			}
		}
	}
}
