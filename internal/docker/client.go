package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"choir/internal/metrics"
)

// DefaultHost is the engine address used when DOCKER_HOST is unset.
const DefaultHost = "unix:///var/run/docker.sock"

// HostEnv is the environment variable naming the engine address.
const HostEnv = "DOCKER_HOST"

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// Client talks to one Docker engine. It is safe for concurrent use. Every
// method takes a context, which bounds the whole call including a streamed
// response; the Client itself sets no timeouts.
type Client struct {
	host    string // as given: unix:///var/run/docker.sock, tcp://h:2375
	addr    string // URL host: "docker" for a unix socket, else host:port
	tr      *http.Transport
	hc      *http.Client
	version string // negotiated API version, e.g. "1.41"
	engine  Version
}

// HostFromEnv returns DOCKER_HOST, or DefaultHost when it is unset.
func HostFromEnv() string {
	if h := os.Getenv(HostEnv); h != "" {
		return h
	}
	return DefaultHost
}

// New connects to the engine at host (unix:///path or tcp://host:port; ""
// means HostFromEnv), asks it for its version and negotiates the API version:
// the lower of the engine's and MaxAPIVersion, refusing engines older than
// MinAPIVersion. Call Close when done to release idle connections.
func New(ctx context.Context, host string) (*Client, error) {
	if host == "" {
		host = HostFromEnv()
	}
	network, address, err := ParseHost(host)
	if err != nil {
		return nil, err
	}
	c := &Client{host: host}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	c.tr = &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, address)
		},
		MaxIdleConns:        16,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	c.hc = &http.Client{Transport: metrics.Observe(c.tr, metrics.CountEngineErrors)} // choir_engine_errors_total
	if network == "unix" {
		c.addr = "docker" // any name will do; the dialer ignores it
	} else {
		c.addr = address
	}
	v, err := c.ServerVersion(ctx)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("docker engine at %s: %w", host, err)
	}
	c.version, err = negotiate(v.APIVersion, v.MinAPIVersion)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("docker engine at %s (Docker %s): %w", host, v.Version, err)
	}
	c.engine = v
	return c, nil
}

// ParseHost splits a DOCKER_HOST value into a network ("unix" or "tcp") and
// an address. TLS (DOCKER_TLS_VERIFY) is not supported.
func ParseHost(host string) (network, address string, err error) {
	proto, rest, ok := strings.Cut(host, "://")
	if !ok {
		return "", "", fmt.Errorf("docker host %q: want unix:///path/to/docker.sock or tcp://host:port", host)
	}
	switch proto {
	case "unix":
		if rest == "" || !strings.HasPrefix(rest, "/") {
			return "", "", fmt.Errorf("docker host %q: unix socket path must be absolute", host)
		}
		return "unix", rest, nil
	case "tcp":
		rest = strings.TrimSuffix(rest, "/")
		if rest == "" || strings.Contains(rest, "/") {
			return "", "", fmt.Errorf("docker host %q: want tcp://host:port", host)
		}
		if _, _, err := net.SplitHostPort(rest); err != nil {
			rest = net.JoinHostPort(rest, "2375")
		}
		return "tcp", rest, nil
	default:
		return "", "", fmt.Errorf("docker host %q: unsupported scheme %q (want unix or tcp)", host, proto)
	}
}

// Host returns the engine address the client was made for.
func (c *Client) Host() string { return c.host }

// APIVersion returns the negotiated API version, e.g. "1.41".
func (c *Client) APIVersion() string { return c.version }

// Engine returns what the engine said about itself when the client connected.
func (c *Client) Engine() Version { return c.engine }

// Close releases idle connections. Calls in flight are not interrupted; the
// client stays usable and opens new connections when needed.
func (c *Client) Close() error {
	c.tr.CloseIdleConnections()
	return nil
}

// request describes one API call. path is the endpoint without the version
// prefix, e.g. "/containers/abc/json".
type request struct {
	method      string
	path        string
	query       url.Values
	body        io.Reader
	contentType string
	header      http.Header // extra headers, e.g. X-Registry-Auth
	unversioned bool        // /_ping and /version are served without /v1.xx
}

// send performs r. A status below 400 returns the open response, whose body
// the caller must close. A status of 400 or more is read, closed and turned
// into an *APIError.
func (c *Client) send(ctx context.Context, r request) (*http.Response, error) {
	p := r.path
	if !r.unversioned {
		p = "/v" + c.version + p
	}
	u := url.URL{Scheme: "http", Host: c.addr, Path: p}
	if len(r.query) > 0 {
		u.RawQuery = r.query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u.String(), r.body)
	if err != nil {
		return nil, fmt.Errorf("docker %s %s: %w", r.method, r.path, err)
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	for k, vs := range r.header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("User-Agent", "choir")
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr
		} else if ue, ok := err.(*url.Error); ok {
			err = ue.Err // drop `Get "http://docker/...":`, which says less than method and path
		}
		return nil, fmt.Errorf("docker %s %s: %w", r.method, r.path, err)
	}
	if resp.StatusCode >= 400 {
		defer resp.Body.Close()
		return nil, readAPIError(resp, r.method, r.path)
	}
	return resp, nil
}

// do performs r and decodes a JSON answer into out (when out is not nil),
// then drains and closes the body so the connection can be reused.
func (c *Client) do(ctx context.Context, r request, out any) error {
	resp, err := c.send(ctx, r)
	if err != nil {
		return err
	}
	defer closeBody(resp.Body)
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("docker %s %s: decode answer: %w", r.method, r.path, err)
	}
	return nil
}

// jsonRequest is a request whose body is v encoded as JSON.
func jsonRequest(method, path string, query url.Values, v any) (request, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return request{}, fmt.Errorf("docker %s %s: encode body: %w", method, path, err)
	}
	return request{method: method, path: path, query: query, body: bytes.NewReader(b), contentType: "application/json"}, nil
}

// closeBody drains what is left of a small body (so the keep-alive
// connection goes back to the pool) and closes it.
func closeBody(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, maxErrorBody))
	_ = body.Close()
}

// boolString is how the engine reads boolean query parameters.
func boolString(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// containerPath builds /containers/{id}{suffix}, refusing an id that is
// empty or would change the endpoint ("a/../b"). A leading "/" (as in the
// Names of a container list) is dropped.
func containerPath(id, suffix string) (string, error) {
	return objectPath("containers", strings.TrimPrefix(id, "/"), suffix)
}

// objectPath builds /{kind}/{id}{suffix} for a Swarm object (a node,
// service, task or secret) or a container, refusing an id that is empty or
// would change the endpoint.
func objectPath(kind, id, suffix string) (string, error) {
	if id == "" || strings.ContainsAny(id, "/?#") || id == "." || id == ".." {
		return "", fmt.Errorf("docker: invalid %s name or ID %q", strings.TrimSuffix(kind, "s"), id)
	}
	return "/" + kind + "/" + id + suffix, nil
}

// imagePath builds /images/{ref}{suffix}. An image reference may contain
// "/" (registry/namespace/name), but no empty, "." or ".." segment.
func imagePath(ref, suffix string) (string, error) {
	return refPath("/images/", ref, suffix)
}

// refPath builds prefix+ref+suffix for an image reference, refusing one
// with an empty, "." or ".." segment or a query.
func refPath(prefix, ref, suffix string) (string, error) {
	if ref == "" || strings.ContainsAny(ref, "?#") {
		return "", fmt.Errorf("docker: invalid image reference %q", ref)
	}
	for _, seg := range strings.Split(ref, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", fmt.Errorf("docker: invalid image reference %q", ref)
		}
	}
	return prefix + ref + suffix, nil
}
