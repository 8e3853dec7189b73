package docker

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

func TestNegotiate(t *testing.T) {
	tests := []struct {
		engine, engineMin string
		want              string
		wantErr           string
	}{
		{"1.41", "1.12", "1.41", ""},
		{"1.45", "1.24", "1.41", ""},
		{"2.3", "", "1.41", ""},
		{"1.40", "1.12", "", "engine speaks API 1.40, choir needs API 1.41 or newer"},
		{"1.9", "1.9", "", "needs API 1.41 or newer"},
		{"1.52", "1.44", "", "engine serves API 1.44 to 1.52 only"},
		{"one", "", "", "not an API version"},
	}
	for _, tt := range tests {
		got, err := negotiate(tt.engine, tt.engineMin)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("negotiate(%q, %q) = %q, %v; want error containing %q", tt.engine, tt.engineMin, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("negotiate(%q, %q) = %q, %v; want %q", tt.engine, tt.engineMin, got, err, tt.want)
		}
	}
}

// TestNewNegotiatesAndPrefixes checks that a newer engine is spoken to at
// the client's highest version, sent as the path prefix.
func TestNewNegotiatesAndPrefixes(t *testing.T) {
	var got []string
	host := fakeEngine(t, "1.47", func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.Path)
		w.Write([]byte("OK"))
	})
	c, err := New(context.Background(), host)
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	defer c.Close()
	if v := c.APIVersion(); v != "1.41" {
		t.Errorf("APIVersion() = %q; want 1.41", v)
	}
	if v := c.Engine().Version; v != "99.0.0-fake" {
		t.Errorf("Engine().Version = %q; want 99.0.0-fake", v)
	}
	c.Ping(context.Background())
	c.ContainerStart(context.Background(), "abc")
	want := []string{"GET /_ping", "POST /v1.41/containers/abc/start"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("requests = %q; want %q", got, want)
	}
}

func TestNewRefusesOldEngine(t *testing.T) {
	host := fakeEngine(t, "1.40", func(w http.ResponseWriter, r *http.Request) {})
	_, err := New(context.Background(), host)
	if err == nil || !strings.Contains(err.Error(), "API 1.40") || !strings.Contains(err.Error(), "upgrade the engine") {
		t.Fatalf("New against API 1.40 = %v; want a refusal naming 1.40 and what to do", err)
	}
}

func TestParseHost(t *testing.T) {
	tests := []struct {
		in, network, addr string
		bad               bool
	}{
		{"unix:///var/run/docker.sock", "unix", "/var/run/docker.sock", false},
		{"tcp://127.0.0.1:2375", "tcp", "127.0.0.1:2375", false},
		{"tcp://docker", "tcp", "docker:2375", false},
		{"tcp://[::1]:2376/", "tcp", "[::1]:2376", false},
		{"/var/run/docker.sock", "", "", true},
		{"unix://relative.sock", "", "", true},
		{"ssh://host", "", "", true},
		{"tcp://host/path", "", "", true},
	}
	for _, tt := range tests {
		n, a, err := ParseHost(tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("ParseHost(%q) = %q, %q, nil; want an error", tt.in, n, a)
			}
			continue
		}
		if err != nil || n != tt.network || a != tt.addr {
			t.Errorf("ParseHost(%q) = %q, %q, %v; want %q, %q", tt.in, n, a, err, tt.network, tt.addr)
		}
	}
}
