// Package netfetch is choir.net.fetch, the host tool that is an agent's
// only way out when its container has no network (seed 002 §3: all
// outbound network goes through a policy-enforced tool): choird makes the
// HTTP request itself, within the session's allowlist (internal/netpolicy).
//
// The rules of a fetch: the method and URL must be admitted by the
// policy, and so must every redirect hop (at most MaxRedirects); the
// connection goes to an address the fetch resolved and checked itself, and
// never to a loopback, private, link-local or otherwise special address
// unless the admitting entry names that literal IP or "localhost" (so DNS
// rebinding finds nothing to reach); no cookies, no proxy, no credential
// and no Authorization of any kind; a fixed User-Agent and only Accept,
// Accept-Language and Content-Type from the model; the body capped in size
// and the whole fetch in time; the body returned as untrusted data (text,
// or a summary of a binary type). Every request, denied ones included, is
// told to a Recorder.
package netfetch

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"time"

	"choir/internal/netpolicy"
)

// UserAgent is sent with every request.
const UserAgent = "choir-net-fetch/1"

// MaxRedirects is how many redirects a fetch follows.
const MaxRedirects = 5

// Resolver finds a host's addresses (net.DefaultResolver in choird; a
// fake in tests, which is how rebinding is tested).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Fetcher makes the requests. The zero value is not usable: call New.
type Fetcher struct {
	resolver Resolver
	client   *http.Client
	special  func(netip.Addr) string // Special; tests' hook
}

// Options configure a Fetcher.
type Options struct {
	Resolver Resolver    // nil: net.DefaultResolver
	TLS      *tls.Config // nil: the system's roots
}

// New returns a Fetcher. Its transport keeps connections for reuse; every
// new connection is dialled by dial, which admits only checked addresses.
func New(o Options) *Fetcher {
	f := &Fetcher{resolver: o.Resolver, special: Special}
	if f.resolver == nil {
		f.resolver = net.DefaultResolver
	}
	tr := &http.Transport{
		Proxy:                  nil, // never the environment's proxy
		DialContext:            f.dial,
		TLSClientConfig:        o.TLS,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        60 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  0, // the request's deadline bounds it
		MaxResponseHeaderBytes: 64 << 10,
	}
	f.client = &http.Client{
		Transport: tr,
		Jar:       nil, // no cookies, ever
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			return checkRedirect(req, via)
		},
	}
	return f
}

// Close drops idle connections.
func (f *Fetcher) Close() { f.client.CloseIdleConnections() }

// hops are the origins a fetch checked against its policy, with whether
// their rule lets the connection reach a special address. dial refuses an
// origin not in it: nothing is dialled that the policy did not see.
type hops struct {
	policy *netpolicy.Policy
	mu     sync.Mutex
	origin map[string]bool // host:port → private allowed
	trail  []hop           // every hop checked, in order
	denied *Denial         // the hop the policy refused, if any
	dialed []string        // addresses connected to
}

type hop struct {
	Method, URL string
}

type hopsKey struct{}

func (h *hops) admit(c *netpolicy.Canonical, private bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.origin[c.HostPort()] = private
}

func (h *hops) lookup(addr string) (private, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	private, ok = h.origin[addr]
	return
}

// checkRedirect checks a redirect hop against the fetch's policy.
func checkRedirect(req *http.Request, via []*http.Request) error {
	h, _ := req.Context().Value(hopsKey{}).(*hops)
	if h == nil {
		return errors.New("netfetch: a redirect outside a fetch")
	}
	if len(via) > MaxRedirects {
		return &Denial{Code: CodeRedirects, Policy: h.policy.Name, URL: req.URL.String(),
			Reason: fmt.Sprintf("more than %d redirects", MaxRedirects)}
	}
	d := h.policy.Check(req.Method, req.URL.String())
	h.mu.Lock()
	h.trail = append(h.trail, hop{req.Method, req.URL.String()})
	h.mu.Unlock()
	if !d.Allowed {
		den := &Denial{Code: CodeDenied, Policy: h.policy.Name, Method: req.Method, URL: req.URL.String(), Reason: "redirect to " + d.Reason}
		h.mu.Lock()
		h.denied = den
		h.mu.Unlock()
		return den
	}
	// Send exactly the checked form.
	req.URL = mustURL(d.URL.String())
	req.Host = ""
	h.admit(d.URL, d.Rule.Private)
	// Nothing the model set but the allowed headers survives a redirect
	// (the client copies them; there is no credential among them).
	return nil
}

// dial connects to addr (host:port of a checked origin) through an
// address it resolved and checked itself.
func (f *Fetcher) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	h, _ := ctx.Value(hopsKey{}).(*hops)
	if h == nil {
		return nil, errors.New("netfetch: dial outside a fetch")
	}
	private, ok := h.lookup(addr)
	if !ok {
		return nil, &Denial{Code: CodeDenied, Policy: h.policy.Name, URL: addr, Reason: "connection to an origin the policy did not check"}
	}
	host, portS, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(portS)
	if err != nil {
		return nil, err
	}
	var ips []netip.Addr
	switch ip, err := netip.ParseAddr(host); {
	case err == nil:
		ips = []netip.Addr{ip.Unmap()}
	case host == "localhost":
		ips = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}
	default:
		ips, err = f.resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, &NetError{Code: CodeDNS, Msg: fmt.Sprintf("cannot resolve %s: %v", host, err)}
		}
	}
	var refused []string
	var lastErr error
	d := net.Dialer{}
	for _, ip := range ips {
		ip = ip.Unmap()
		if why := f.special(ip); why != "" && !private {
			refused = append(refused, ip.String()+" ("+why+")")
			continue
		}
		ap := netip.AddrPortFrom(ip, uint16(port)).String()
		c, err := d.DialContext(ctx, network, ap)
		if err != nil {
			lastErr = err
			continue
		}
		h.mu.Lock()
		h.dialed = append(h.dialed, ap)
		h.mu.Unlock()
		return c, nil
	}
	if lastErr != nil {
		return nil, lastErr
	}
	if len(refused) > 0 {
		return nil, &Denial{Code: CodeDenied, Policy: h.policy.Name, URL: addr,
			Reason: fmt.Sprintf("%s resolves only to addresses a fetch may not reach: %v (only an allow entry naming the literal IP or localhost reaches those)", host, refused)}
	}
	return nil, &NetError{Code: CodeDNS, Msg: "no address for " + host}
}

var specialPrefixes = []struct {
	p   netip.Prefix
	why string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this network"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "NAT64"},
	{netip.MustParsePrefix("2002::/16"), "6to4"},
}

// Special says why ip is not a public unicast address ("" when it is).
func Special(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid():
		return "invalid"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast():
		return "link-local"
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsMulticast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast"
	case ip == netip.MustParseAddr("255.255.255.255"):
		return "broadcast"
	}
	for _, s := range specialPrefixes {
		if s.p.Contains(ip) {
			return s.why
		}
	}
	return ""
}

// mustURL parses a canonical URL, which always parses.
func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic("netfetch: a canonical URL does not parse: " + err.Error())
	}
	return u
}
