package egress

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Through sends every connection of HTTPClient and DialContext through
// its dialer, which sees the name and port the client asked for (never
// an address the agent resolved); Through(nil) goes direct again.
func TestConnectionsGoThroughTheTunnel(t *testing.T) {
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello "+r.Host) }))
	defer svc.Close()
	var mu sync.Mutex
	var asked []string
	Through(func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		asked = append(asked, network+" "+addr)
		mu.Unlock()
		if addr != "search.example.org:80" {
			return nil, errors.New("refused by choird")
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", svc.Listener.Addr().String())
	})
	defer Through(nil)
	if !Tunnelled() {
		t.Fatal("Tunnelled() = false after Through")
	}
	resp, err := HTTPClient().Get("http://search.example.org/q")
	if err != nil {
		t.Fatalf("GET through the tunnel: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "hello search.example.org" {
		t.Errorf("body = %q", b)
	}
	if _, err := HTTPClient().Get("http://" + svc.Listener.Addr().String() + "/"); err == nil || !strings.Contains(err.Error(), "refused by choird") {
		t.Errorf("GET of an address choird refuses = %v; want its refusal", err)
	}
	if _, err := DialContext(context.Background(), "tcp", "mail.example.org:993"); err == nil {
		t.Error("DialContext(mail) succeeded; the tunnel refuses it")
	}
	mu.Lock()
	got := strings.Join(asked, ",")
	mu.Unlock()
	if want := "tcp search.example.org:80,tcp " + svc.Listener.Addr().String() + ",tcp mail.example.org:993"; got != want {
		t.Errorf("the tunnel was asked %s; want %s", got, want)
	}
	Through(nil)
	if Tunnelled() {
		t.Fatal("Tunnelled() = true after Through(nil)")
	}
	c, err := DialContext(context.Background(), "tcp", svc.Listener.Addr().String())
	if err != nil {
		t.Fatalf("direct dial: %v", err)
	}
	c.Close()
}
