package rpc

import (
	"context"
	"io"
	"net"
	"testing"
)

// The tunnel's cost against a direct connection to the same loopback
// echo server: opening a connection (CONNECT over the agent's socket and
// choird's dial, against a TCP dial), and a 4 KiB round trip over an
// open one (two splices more).
func BenchmarkTunnel(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	addr := l.Addr().String()
	lim := DefaultLimits()
	lim.Rate, lim.Burst = 1e9, 1e9 // a tunnel's CONNECT is rate-limited like a verb: not what is measured
	srv := NewServer(&fakeHandler{}, lim, quietLogger())
	srv.Tunnels = &fakeTunnels{allow: map[string]string{"svc.example.org:443": addr}}
	srv.Open("s1", testAgent, "t1")
	c := serve(b, srv)[0].dial(b, "s1", "t1")
	ctx := context.Background()
	direct := func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	for _, bc := range []struct {
		name string
		dial func(ctx context.Context, network, addr string) (net.Conn, error)
	}{{"direct", direct}, {"tunnel", c.DialTunnel}} {
		b.Run("dial/"+bc.name, func(b *testing.B) {
			for b.Loop() {
				conn, err := bc.dial(ctx, "tcp", "svc.example.org:443")
				if err != nil {
					b.Fatal(err)
				}
				conn.Close()
				// The server frees the tunnel's slot once both ends are
				// done: not part of the dial.
				b.StopTimer()
				waitFor(b, "the tunnel closed", func() bool { return srv.tunnels.count("s1") == 0 })
				b.StartTimer()
			}
		})
		b.Run("roundtrip4k/"+bc.name, func(b *testing.B) {
			conn, err := bc.dial(ctx, "tcp", "svc.example.org:443")
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			msg, back := make([]byte, 4096), make([]byte, 4096)
			b.SetBytes(4096)
			for b.Loop() {
				if _, err := conn.Write(msg); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(conn, back); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
