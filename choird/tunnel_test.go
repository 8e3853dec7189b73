package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	"choir/internal/config"
	"choir/internal/rpc"
)

type tunnelSessions map[string]rpc.ResourceBindings

func (s tunnelSessions) MCPEndpoints(_ context.Context, id string) []string {
	if _, ok := s[id]; !ok {
		return nil
	}
	return []string{"mcp.example.com:443"}
}

func (s tunnelSessions) TunnelBindings(id string) (string, rpc.ResourceBindings, bool) {
	b, ok := s[id]
	return "a1", b, ok
}

func tunnelConfig() *config.Config {
	c := config.Default()
	c.Search = map[string]config.Search{"brave": {Endpoint: "http://search.example.org:8080/res/v1", Secret: "brave"}}
	c.TTS = map[string]config.TTS{"el": {Endpoint: "https://TTS.example.org/v1"}}
	c.VoiceProfiles = map[string]config.VoiceProfile{"calm": {TTS: "el", VoiceID: "v"}}
	c.NotionIntegrations = map[string]config.Notion{"wiki": {Endpoint: config.DefaultNotionAPI}}
	c.EmailAccounts = map[string]config.EmailAccount{"mail": {IMAPHost: "imap.example.org", IMAPPort: 993, SMTPHost: "smtp.example.org", SMTPPort: 587}}
	return &c
}

// The endpoints are those of the resources the session is bound to, as
// config.json writes them (the scheme's port when none is written).
func TestTunnelEndpoints(t *testing.T) {
	c := tunnelConfig()
	got := tunnelEndpoints(c, rpc.ResourceBindings{VoiceProfile: "calm", Notion: "wiki", Email: "mail"})
	want := []string{"api.notion.com:443", "imap.example.org:993", "search.example.org:8080", "smtp.example.org:587", "tts.example.org:443"}
	if !slices.Equal(got, want) {
		t.Errorf("tunnelEndpoints(all bound) = %v; want %v", got, want)
	}
	if got := tunnelEndpoints(c, rpc.ResourceBindings{}); !slices.Equal(got, []string{"search.example.org:8080"}) {
		t.Errorf("tunnelEndpoints(nothing bound) = %v; want the search provider only", got)
	}
	c.Search = map[string]config.Search{"brave": {Secret: "brave"}}
	if got := tunnelEndpoints(c, rpc.ResourceBindings{}); !slices.Equal(got, []string{"api.search.brave.com:443"}) {
		t.Errorf("tunnelEndpoints(default search endpoint) = %v", got)
	}
}

// A prompt-injected agent asks choird for everything but its endpoints:
// another host, another port, an IP address (even the one its endpoint
// resolves to), a name that resolves to the same address, a session not
// carried. None is dialled; the configured one is, by its name.
func TestTunnelPolicyRefuses(t *testing.T) {
	var dialled []string
	p := &tunnelPolicy{
		config:   func() *config.Loaded { return &config.Loaded{Config: tunnelConfig()} },
		sessions: tunnelSessions{"s1": {Email: "mail"}},
		dial: func(_ context.Context, _, addr string) (net.Conn, error) {
			dialled = append(dialled, addr)
			a, b := net.Pipe()
			b.Close()
			return a, nil
		},
		log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	ctx := context.Background()
	for _, tc := range []struct{ name, session, target string }{
		{"another host", "s1", "evil.example.net:443"},
		{"another port", "s1", "imap.example.org:22"},
		{"the SMTP host on another port", "s1", "smtp.example.org:25"},
		{"an IP literal", "s1", "93.184.216.34:993"},
		{"loopback", "s1", "127.0.0.1:993"},
		{"a name resolving to loopback", "s1", "localhost:993"},
		{"a subdomain", "s1", "x.imap.example.org:993"},
		{"the Notion API, not bound", "s1", "api.notion.com:443"},
		{"a session not carried", "s9", "imap.example.org:993"},
		{"the MCP server on another port", "s1", "mcp.example.com:80"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.DialTunnel(ctx, rpc.TunnelCall{SessionID: tc.session, Target: tc.target})
			var rerr *rpc.Error
			if !errors.As(err, &rerr) || rerr.Status != http.StatusForbidden {
				t.Fatalf("DialTunnel(%s) = %v; want 403", tc.target, err)
			}
		})
	}
	if len(dialled) != 0 {
		t.Fatalf("dialled %v for refused targets", dialled)
	}
	conn, err := p.DialTunnel(ctx, rpc.TunnelCall{SessionID: "s1", Target: "imap.example.org:993"})
	if err != nil {
		t.Fatalf("DialTunnel(the IMAP server) = %v", err)
	}
	conn.Close()
	conn, err = p.DialTunnel(ctx, rpc.TunnelCall{SessionID: "s1", Target: "mcp.example.com:443"})
	if err != nil {
		t.Fatalf("DialTunnel(the image's MCP server) = %v", err)
	}
	conn.Close()
	if strings.Join(dialled, ",") != "imap.example.org:993,mcp.example.com:443" {
		t.Errorf("dialled %v; want the configured names", dialled)
	}
}
