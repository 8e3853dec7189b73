package rpc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeTunnels lets sessions reach the targets of allow (each a local
// listener's address), refusing the rest with 403, and records what it
// was asked.
type fakeTunnels struct {
	allow map[string]string // target → the address dialled
	mu    sync.Mutex
	asked []string
}

func (f *fakeTunnels) DialTunnel(ctx context.Context, c TunnelCall) (net.Conn, error) {
	f.mu.Lock()
	f.asked = append(f.asked, c.SessionID+" "+c.Target)
	f.mu.Unlock()
	addr, ok := f.allow[c.Target]
	if !ok {
		return nil, Forbidden("%s is not an endpoint of this session", c.Target)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// echoServer answers each connection with greeting, then echoes lines;
// without a greeting it echoes bytes.
func echoServer(t *testing.T, greeting string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if greeting == "" {
					io.Copy(c, c)
					return
				}
				io.WriteString(c, greeting+"\n")
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					fmt.Fprintf(c, "echo %s\n", sc.Text())
				}
			}()
		}
	}()
	return l.Addr().String()
}

// A tunnel carries bytes both ways on either transport, the service's
// greeting included (SMTP and IMAP servers speak first), and is counted
// by Observe as TUNNEL.
func TestTunnelCarriesBytes(t *testing.T) {
	tun := &fakeTunnels{allow: map[string]string{
		"mail.example.org:587": echoServer(t, "220 hello"),
		"api.example.org:443":  echoServer(t, ""),
	}}
	srv := NewServer(&fakeHandler{}, DefaultLimits(), quietLogger())
	srv.Tunnels = tun
	var mu sync.Mutex
	var seen []string
	srv.Observe = func(v Verb, code string, _ time.Duration) {
		mu.Lock()
		seen = append(seen, string(v)+" "+code)
		mu.Unlock()
	}
	srv.Open("s1", testAgent, "t1")
	for _, tr := range serve(t, srv) {
		t.Run(tr.name, func(t *testing.T) {
			c := tr.dial(t, "s1", "t1")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, err := c.DialTunnel(ctx, "tcp", "MAIL.example.org:587")
			if err != nil {
				t.Fatalf("DialTunnel(mail) = %v", err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(conn)
			if l, _ := br.ReadString('\n'); l != "220 hello\n" {
				t.Fatalf("greeting = %q; want 220 hello", l)
			}
			io.WriteString(conn, "EHLO x\n")
			if l, _ := br.ReadString('\n'); l != "echo EHLO x\n" {
				t.Fatalf("echo = %q", l)
			}
			conn2, err := c.DialTunnel(ctx, "tcp", "api.example.org:443")
			if err != nil {
				t.Fatalf("DialTunnel(api) = %v", err)
			}
			defer conn2.Close()
			conn2.SetDeadline(time.Now().Add(10 * time.Second))
			big := strings.Repeat("0123456789abcdef", 16<<10) // 256 KiB
			go io.WriteString(conn2, big)
			back := make([]byte, len(big))
			if _, err := io.ReadFull(conn2, back); err != nil || string(back) != big {
				t.Fatalf("256 KiB sent, %v back (%v)", len(back), err)
			}
		})
	}
	// A tunnel is observed when it ends.
	waitFor(t, "4 tunnels observed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Count(strings.Join(seen, ","), "TUNNEL ok") == 4
	})
}

// What a prompt-injected agent can send: every CONNECT outside the
// session's endpoints, or without its token, is refused before or by
// choird's dialer, and nothing is dialled for it.
func TestTunnelRefuses(t *testing.T) {
	tun := &fakeTunnels{allow: map[string]string{"api.example.org:443": echoServer(t, "")}}
	srv := NewServer(&fakeHandler{}, DefaultLimits(), quietLogger())
	srv.Tunnels = tun
	srv.Open("s1", testAgent, "t1")
	srv.Open("s2", "a2", "t2") // another agent's session
	trs := serve(t, srv)
	uds := trs[0]
	raw := func(t *testing.T, session, token, target string) (int, string) {
		conn, err := uds.hc.Transport.(*http.Transport).DialContext(context.Background(), "tcp", "choird:80")
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s: %s\r\nAuthorization: Bearer %s\r\n\r\n", target, target, HeaderSessionID, session, token)
		resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: http.MethodConnect})
		if err != nil {
			return 0, err.Error()
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name, session, token, target string
		status                       int
	}{
		{"another host", "s1", "t1", "evil.example.org:443", 403},
		{"another port", "s1", "t1", "api.example.org:22", 403},
		{"an IP literal", "s1", "t1", "93.184.216.34:443", 403},
		{"an IPv6 literal", "s1", "t1", "[2606:4700::1]:443", 403},
		{"loopback", "s1", "t1", "127.0.0.1:443", 403},
		{"a subdomain", "s1", "t1", "x.api.example.org:443", 403},
		{"a suffix", "s1", "t1", "api.example.org.evil.net:443", 403},
		{"a trailing dot", "s1", "t1", "api.example.org.:443", 403},
		{"no port", "s1", "t1", "api.example.org", 400},
		{"a leading zero", "s1", "t1", "api.example.org:0443", 400},
		{"port 0", "s1", "t1", "api.example.org:0", 400},
		{"port too big", "s1", "t1", "api.example.org:65979", 400},
		{"a user", "s1", "t1", "user@api.example.org:443", 400},
		{"a path", "s1", "t1", "api.example.org:443/x", 400},
		{"an escape", "s1", "t1", "api.example.org%2e:443", 400},
		{"no token", "s1", "", "api.example.org:443", 401},
		{"a wrong token", "s1", "t9", "api.example.org:443", 401},
		{"another agent's session on this socket", "s2", "t2", "api.example.org:443", 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(tun.asked)
			status, body := raw(t, tc.session, tc.token, tc.target)
			if status != tc.status {
				t.Fatalf("CONNECT %s = %d %s; want %d", tc.target, status, body, tc.status)
			}
			tun.mu.Lock()
			asked := tun.asked[before:]
			tun.mu.Unlock()
			if tc.status != 403 && len(asked) > 0 {
				t.Errorf("the dialer was asked %v", asked)
			}
		})
	}
	// Through the client, the refusal is choird's error.
	c := uds.dial(t, "s1", "t1")
	_, err := c.DialTunnel(context.Background(), "tcp", "evil.example.org:443")
	var rerr *Error
	if !errors.As(err, &rerr) || rerr.Status != 403 || !strings.Contains(err.Error(), "evil.example.org:443") {
		t.Errorf("DialTunnel(evil) = %v; want choird's 403 naming it", err)
	}
	if _, err := c.DialTunnel(context.Background(), "udp", "api.example.org:443"); err == nil {
		t.Error("DialTunnel over udp succeeded; choird carries TCP only")
	}
}

// Closing the session ends its tunnels, and a session holds at most
// MaxTunnelsPerSession at once.
func TestTunnelEndsWithItsSession(t *testing.T) {
	tun := &fakeTunnels{allow: map[string]string{"api.example.org:443": echoServer(t, "")}}
	srv := NewServer(&fakeHandler{}, DefaultLimits(), quietLogger())
	srv.Tunnels = tun
	srv.Open("s1", testAgent, "t1")
	c := serve(t, srv)[0].dial(t, "s1", "t1")
	ctx := context.Background()
	var conns []net.Conn
	for i := 0; i < MaxTunnelsPerSession; i++ {
		conn, err := c.DialTunnel(ctx, "tcp", "api.example.org:443")
		if err != nil {
			t.Fatalf("tunnel %d: %v", i+1, err)
		}
		conns = append(conns, conn)
	}
	// The server registers a tunnel once it answered: wait for all.
	waitFor(t, "every tunnel registered", func() bool { return srv.tunnels.count("s1") == MaxTunnelsPerSession })
	_, err := c.DialTunnel(ctx, "tcp", "api.example.org:443")
	var rerr *Error
	if !errors.As(err, &rerr) || rerr.Status != http.StatusTooManyRequests {
		t.Fatalf("tunnel %d = %v; want 429", MaxTunnelsPerSession+1, err)
	}
	srv.Close("s1")
	for i, conn := range conns {
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := conn.Read(make([]byte, 1)); err == nil || errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			t.Fatalf("tunnel %d after its session closed: read = %v; want it closed", i+1, err)
		}
		conn.Close()
	}
}

func TestTunnelTarget(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"api.example.org:443", "api.example.org:443"},
		{"API.Example.ORG:443", "api.example.org:443"},
		{"[2001:DB8::1]:443", "[2001:db8::1]:443"},
		{"10.0.0.1:25", "10.0.0.1:25"},
		{"api.example.org", ""},
		{"api.example.org:", ""},
		{":443", ""},
		{"api.example.org:+443", ""},
		{"api.example.org:0443", ""},
		{"api.example.org:65536", ""},
		{"a b:443", ""},
		{"x@y:443", ""},
		{"y:443#", ""},
		{strings.Repeat("a", 300) + ":443", ""},
	} {
		got, ok := TunnelTarget(tc.in)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("TunnelTarget(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
	}
}
