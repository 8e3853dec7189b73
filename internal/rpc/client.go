package rpc

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Transports an agent can pick at start (--control-plane).
const (
	TransportUDS  = "uds"
	TransportHTTP = "http"
)

// Options configure a Client. Only Dial looks at Transport.
type Options struct {
	Transport string // "uds" or "http"
	Socket    string // uds: the control socket, /run/choir.sock in a container
	Endpoint  string // http: https://host:port (http:// only for loopback)
	TLS       *tls.Config

	SessionID  string
	LeaseToken string
}

// Client is the agent's ControlPlane over either transport. It is safe for
// concurrent use.
type Client struct {
	base      string
	hc        *http.Client
	beatHC    *http.Client // the heartbeat stream's
	sessionID string
	token     string
	beats     beats // heartbeats_client.go
}

var _ ControlPlane = (*Client)(nil)

// ClientMaxConns bounds a Client's connections: calls beyond it wait for
// one to be free rather than open one the server would refuse (it holds
// Limits.MaxConnsPerAgent, 64 by default, per agent).
const ClientMaxConns = 32

// Dial builds the client for the chosen transport. It does not connect:
// every call is a stateless request.
func Dial(o Options) (*Client, error) {
	if o.SessionID == "" || o.LeaseToken == "" {
		return nil, errors.New("rpc: a session id and a lease token are required")
	}
	tr := &http.Transport{MaxIdleConns: 4, MaxIdleConnsPerHost: 4, MaxConnsPerHost: ClientMaxConns,
		IdleConnTimeout: 90 * time.Second, ForceAttemptHTTP2: false}
	var base string
	switch o.Transport {
	case TransportUDS:
		if o.Socket == "" {
			return nil, errors.New("rpc: --socket is required with --control-plane=uds")
		}
		socket := o.Socket
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}
		base = "http://choird"
	case TransportHTTP:
		u, err := url.Parse(o.Endpoint)
		if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			return nil, fmt.Errorf("rpc: --endpoint %q is not an http(s) URL", o.Endpoint)
		}
		if u.Scheme == "http" && !isLoopback(u.Hostname()) {
			return nil, fmt.Errorf("rpc: plaintext http to %s is refused: use https (plaintext is allowed only on loopback)", u.Host)
		}
		tr.TLSClientConfig = o.TLS
		base = strings.TrimSuffix(u.String(), "/")
	default:
		return nil, fmt.Errorf("rpc: unknown transport %q: want %q or %q", o.Transport, TransportUDS, TransportHTTP)
	}
	// The heartbeat stream dials its own connection each time it opens,
	// never one the pool kept (which the server may have closed).
	beats := tr.Clone()
	beats.DisableKeepAlives = true
	return &Client{base: base, hc: &http.Client{Transport: tr}, beatHC: &http.Client{Transport: beats}, sessionID: o.SessionID, token: o.LeaseToken}, nil
}

// Close ends the heartbeat stream and releases idle connections.
func (c *Client) Close() {
	c.closeBeats()
	c.hc.CloseIdleConnections()
}

func (c *Client) InitHello(ctx context.Context, req InitHelloReq) (InitHelloResp, error) {
	return call[InitHelloResp](ctx, c, VerbInitHello, req)
}
func (c *Client) GetSecrets(ctx context.Context, req SecretReq) (SecretResp, error) {
	return call[SecretResp](ctx, c, VerbGetSecrets, req)
}
func (c *Client) RequestApproval(ctx context.Context, req ApprovalReq) (ApprovalResp, error) {
	return call[ApprovalResp](ctx, c, VerbRequestApproval, req)
}
func (c *Client) ReportStatus(ctx context.Context, req StatusReq) (StatusResp, error) {
	return call[StatusResp](ctx, c, VerbReportStatus, req)
}
func (c *Client) Terminate(ctx context.Context, req TerminateReq) (TerminateResp, error) {
	return call[TerminateResp](ctx, c, VerbTerminateSelf, req)
}
func (c *Client) FetchDynamicConfig(ctx context.Context, req ConfigReq) (ConfigResp, error) {
	return call[ConfigResp](ctx, c, VerbFetchDynamicConfig, req)
}
func (c *Client) ExecuteHostTool(ctx context.Context, req HostToolReq) (HostToolResp, error) {
	return call[HostToolResp](ctx, c, VerbExecuteHostTool, req)
}

func (c *Client) FetchEvents(ctx context.Context, req FetchEventsReq) (FetchEventsResp, error) {
	return call[FetchEventsResp](ctx, c, VerbFetchEvents, req)
}

// Call sends any verb with a raw payload; it exists for conformance tests
// and tools that speak the protocol generically.
func (c *Client) Call(ctx context.Context, verb Verb, payload []byte) ([]byte, error) {
	resp, err := c.do(ctx, http.MethodPost, "/rpc/"+string(verb), payload, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

func call[Resp any](ctx context.Context, c *Client, verb Verb, req any) (Resp, error) {
	body, err := json.Marshal(req)
	if err != nil {
		var out Resp
		return out, fmt.Errorf("rpc %s: encode: %w", verb, err)
	}
	return post[Resp](ctx, c, verb, body)
}

// post sends a verb's encoded request as POST /rpc/<VERB>.
func post[Resp any](ctx context.Context, c *Client, verb Verb, body []byte) (Resp, error) {
	var out Resp
	resp, err := c.do(ctx, http.MethodPost, "/rpc/"+string(verb), body, nil)
	if err != nil {
		return out, fmt.Errorf("rpc %s: %w", verb, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return out, fmt.Errorf("rpc %s: decode response: %w", verb, err)
	}
	return out, nil
}

// do sends a request with the envelope headers; a non-200 answer becomes an
// *Error and the body is closed.
func (c *Client) do(ctx context.Context, method, path string, body []byte, hdr http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c.envelope(req.Header)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, decodeError(resp)
	}
	return resp, nil
}

// envelope sets a request's envelope headers: a new request id, the
// session and its lease token.
func (c *Client) envelope(h http.Header) {
	h.Set(HeaderRequestID, NewRequestID())
	h.Set(HeaderSessionID, c.sessionID)
	h.Set("Authorization", "Bearer "+c.token)
}

func decodeError(resp *http.Response) *Error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := errorFrom(resp.StatusCode, data)
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
		e.RetryAfter = time.Duration(secs) * time.Second
	}
	return e
}

// errorFrom reads an error answer's body, {"error": {...}} (with the head
// of a replication_refused), or keeps what else it is as the message.
func errorFrom(status int, data []byte) *Error {
	var eb errorBody
	e := &Error{Status: status, Code: CodeInternal}
	if json.Unmarshal(data, &eb) == nil && eb.Error != nil {
		e.Code, e.Message, e.Head = eb.Error.Code, eb.Error.Message, eb.Error.Head
	} else {
		e.Message = strings.TrimSpace(string(data))
	}
	return e
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
