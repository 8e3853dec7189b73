package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"choir/internal/config"
	"choir/internal/openai"
	"choir/internal/rpc"
)

// BenchmarkModelCall is the cost of carrying a model call through choird:
// the same chat completion sent by internal/openai straight to the
// provider (direct) and through the agent's socket, rpc.Server and
// modelProxy (proxied), with a short prompt and one of 256 KiB (a long
// context). The provider answers at once, so the difference is the hop.
//
//	go test -run '^$' -bench BenchmarkModelCall -benchmem ./choird/
func BenchmarkModelCall(b *testing.B) {
	answer := `{"id":"c1","model":"fast-1","choices":[{"index":0,"message":{"role":"assistant","content":"` + strings.Repeat("word ", 200) + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":200,"total_tokens":203}}`
	prov := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	defer prov.Close()
	cfg := &config.Config{Models: map[string]config.Model{
		"fast": {Provider: "openai", Model: "fast-1", Endpoint: prov.URL + "/v1", Secret: "fast-key"},
	}}
	loaded := &config.Loaded{Config: cfg, Secrets: config.Secrets{"fast-key": mpKey}}
	sessions := mpSessions{"s1": {agent: "a1", b: rpc.ResourceBindings{LLM: "fast"}}}
	limits := rpc.DefaultLimits()
	limits.Rate, limits.Burst = 1e9, 1e9 // measure the hop, not the session's rate limit
	rs := rpc.NewServer(fakeHandler{}, limits, slog.New(slog.DiscardHandler))
	rs.Models = &modelProxy{config: func() *config.Loaded { return loaded }, sessions: sessions, client: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(), CheckRedirect: newModelHTTP().CheckRedirect}, log: slog.New(slog.DiscardHandler)}
	rs.Open("s1", "a1", "tok-1")
	sock := filepath.Join(b.TempDir(), "a1", "choird.sock")
	ln, err := rs.ListenAgent(sock, "a1")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	cp, err := rpc.Dial(rpc.Options{Transport: rpc.TransportUDS, Socket: sock, SessionID: "s1", LeaseToken: "tok-1"})
	if err != nil {
		b.Fatal(err)
	}
	defer cp.Close()
	direct, _ := openai.New(openai.Config{Endpoint: prov.URL + "/v1", APIKey: mpKey})
	proxied, _ := openai.New(openai.Config{Endpoint: cp.ModelBase("fast"), HTTPClient: &http.Client{Transport: cp.ModelTransport()}})
	for _, size := range []struct {
		name   string
		prompt string
	}{{"short", "hello"}, {"256KiB", strings.Repeat("a long context ", 256<<10/15)}} {
		req := openai.ChatRequest{Model: "fast-1", Messages: []openai.Message{{Role: "user", Content: size.prompt}}}
		for _, c := range []struct {
			name string
			c    *openai.Client
		}{{"direct", direct}, {"proxied", proxied}} {
			b.Run(size.name+"/"+c.name, func(b *testing.B) {
				for b.Loop() {
					if _, err := c.c.Chat(context.Background(), req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
