package rpc

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"
)

// DialTunnel connects to addr ("host:port", network "tcp", "tcp4" or
// "tcp6") through choird (tunnel.go): it opens a connection of its own
// to choird over this client's transport (the agent's socket, or the
// HTTPS endpoint with its CA), asks CONNECT with the session's envelope,
// and returns the connection once choird answers 200. Its signature is a
// DialContext's: give it to an http.Transport, an IMAP or SMTP dialer.
// choird's refusal is an *Error (403 for a destination outside the
// session's configuration).
func (c *Client) DialTunnel(ctx context.Context, network, addr string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("rpc: tunnel to %s over %s refused: choird carries TCP only", addr, network)
	}
	target, ok := TunnelTarget(addr)
	if !ok {
		return nil, fmt.Errorf("rpc: tunnel target %q is not host:port", addr)
	}
	conn, err := c.dialChoird(ctx)
	if err != nil {
		return nil, fmt.Errorf("rpc: tunnel to %s: reach choird: %w", target, err)
	}
	if d, ok := ctx.Deadline(); ok {
		conn.SetDeadline(d)
	} else {
		conn.SetDeadline(time.Now().Add(time.Minute))
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: target}, Host: target, Header: http.Header{}}
	req.Header.Set(HeaderRequestID, NewRequestID())
	req.Header.Set(HeaderSessionID, c.sessionID)
	req.Header.Set("Authorization", "Bearer "+c.token)
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("rpc: tunnel to %s: %w", target, ctxErr(ctx, err))
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("rpc: tunnel to %s: choird's answer: %w", target, ctxErr(ctx, err))
	}
	if resp.StatusCode != http.StatusOK {
		e := decodeError(resp)
		resp.Body.Close()
		conn.Close()
		return nil, fmt.Errorf("rpc: tunnel to %s: %w", target, e)
	}
	if !stop() {
		conn.Close()
		return nil, ctx.Err()
	}
	conn.SetDeadline(time.Time{})
	if br.Buffered() > 0 { // the service spoke first (an SMTP or IMAP greeting)
		return &bufferedConn{Conn: conn, r: br}, nil
	}
	return conn, nil
}

// dialChoird opens a raw connection to choird as this client's transport
// would: the socket, or TLS (HTTP/1.1) to the endpoint with its CA.
func (c *Client) dialChoird(ctx context.Context) (net.Conn, error) {
	tr, ok := c.hc.Transport.(*http.Transport)
	if !ok {
		return nil, errors.New("this client's transport cannot carry a tunnel")
	}
	u, err := url.Parse(c.base)
	if err != nil {
		return nil, err
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), map[string]string{"https": "443", "http": "80"}[u.Scheme])
	}
	dial := tr.DialContext
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	conn, err := dial(ctx, "tcp", host)
	if err != nil || u.Scheme != "https" {
		return conn, err
	}
	cfg := &tls.Config{}
	if tr.TLSClientConfig != nil {
		cfg = tr.TLSClientConfig.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = u.Hostname()
	}
	cfg.NextProtos = []string{"http/1.1"}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return tc, nil
}

// bufferedConn is a tunnel whose first bytes the CONNECT's reader took.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
