package mcp

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"choir/testkit/mcptest"
)

const listToken = "mcp-list-Token-7Rw2"

// bearerOnly serves s only to requests carrying "Bearer <token>"; the
// others get a 401 that echoes what they sent, as careless servers do. It
// records every Authorization header it sees.
func bearerOnly(s http.Handler, token string) (http.Handler, func() []string) {
	var mu sync.Mutex
	var seen []string
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got := r.Header.Get("Authorization")
			mu.Lock()
			seen = append(seen, got)
			mu.Unlock()
			if got != "Bearer "+token {
				http.Error(w, "bad credentials: "+got, http.StatusUnauthorized)
				return
			}
			s.ServeHTTP(w, r)
		}), func() []string {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(seen)
		}
}

// serveSecrets serves secrets once on a unix socket, as choird's build
// does, and returns its path.
func serveSecrets(t *testing.T, secrets map[string]string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.sock")
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		json.NewEncoder(c).Encode(secrets)
		c.Close()
	}()
	return p
}

// TestListWithSecrets: the build's listing gives an HTTP server that
// refuses tools/list without its Bearer token the declared header, so its
// real tools are pinned; another server gets no Authorization; a tool
// whose definition carries the token is withheld, not pinned; and the
// token is in neither the listing nor the log, even when a wrong one is
// echoed by the server's refusal.
func TestListWithSecrets(t *testing.T) {
	tools := []json.RawMessage{
		json.RawMessage(`{"name":"echo","description":"Echoes.","inputSchema":{"type":"object"}}`),
		json.RawMessage(`{"name":"leaky","description":"Use token ` + listToken + `.","inputSchema":{"type":"object"}}`),
	}
	web, webAuth := bearerOnly(&mcptest.Server{Name: "web", Tools: tools}, listToken)
	webSrv := httptest.NewServer(web)
	defer webSrv.Close()
	openMCP := &mcptest.Server{Name: "open", Tools: tools[:1]}
	var openMu sync.Mutex
	var openSeen []string
	openSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		openMu.Lock()
		openSeen = append(openSeen, r.Header.Get("Authorization"))
		openMu.Unlock()
		openMCP.ServeHTTP(w, r)
	}))
	defer openSrv.Close()

	dir := t.TempDir()
	decl := func(name, url string, auth bool) {
		d := map[string]any{"transport": "http", "url": url + "/mcp"}
		if auth {
			d["headers"] = map[string]any{"Authorization": map[string]any{"secret": "web-token", "format": "Bearer %s"}}
		}
		b, _ := json.Marshal(d)
		if err := os.WriteFile(filepath.Join(dir, name+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	decl("web", webSrv.URL, true)
	decl("open", openSrv.URL, false)

	list := func(args ...string) (Listing, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := ListMain(dir, args, &stdout, &stderr); code != 0 {
			t.Fatalf("ListMain = %d; stderr %s", code, stderr.String())
		}
		var l Listing
		if err := json.Unmarshal(stdout.Bytes(), &l); err != nil {
			t.Fatalf("the listing %q: %v", stdout.String(), err)
		}
		return l, stdout.String() + stderr.String()
	}

	// Without secrets, as before: web cannot be listed, open can.
	l, _ := list()
	if _, ok := l.Pins["web"]; ok || !strings.Contains(l.Errors["web"], "401") {
		t.Errorf("without secrets: pins %v, errors %v; want web unlisted with its 401", l.Pins, l.Errors)
	}
	if _, ok := l.Pins["open"]["echo"]; !ok {
		t.Errorf("without secrets: pins %v; want open's echo", l.Pins)
	}

	// With the token: web's echo is pinned, leaky withheld.
	l, out := list(SecretsArg + serveSecrets(t, map[string]string{"web-token": listToken}))
	if _, ok := l.Pins["web"]["echo"]; !ok || l.Errors["web"] != "" {
		t.Fatalf("with the token: pins %v, errors %v; want web's echo pinned", l.Pins, l.Errors)
	}
	if _, ok := l.Pins["web"]["leaky"]; ok || !slices.Equal(l.Withheld["web"], []string{"leaky"}) {
		t.Errorf("with the token: pins %v, withheld %v; want leaky withheld, not pinned", l.Pins["web"], l.Withheld)
	}
	if !slices.Contains(webAuth(), "Bearer "+listToken) {
		t.Errorf("web saw Authorization %q; want the declared Bearer token", webAuth())
	}
	openMu.Lock()
	for _, a := range openSeen {
		if a != "" {
			t.Errorf("open, which declares no header, got Authorization %q", a)
		}
	}
	openMu.Unlock()
	if strings.Contains(out, listToken) {
		t.Errorf("the listing's output holds the token:\n%s", out)
	}

	// A wrong token, echoed by the server's refusal: redacted in the error.
	const wrong = "wrong-Token-9Kx4"
	l, out = list(SecretsArg + serveSecrets(t, map[string]string{"web-token": wrong}))
	if _, ok := l.Pins["web"]; ok || !strings.Contains(l.Errors["web"], "401") {
		t.Errorf("with a wrong token: pins %v, errors %v; want web unlisted with its 401", l.Pins, l.Errors)
	}
	if strings.Contains(out, wrong) {
		t.Errorf("the listing's output holds the wrong token:\n%s", out)
	}
}
