package netfetch

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"choir/internal/netpolicy"
	"choir/internal/rpc"
)

// fakeResolver answers names from a table.
type fakeResolver map[string][]netip.Addr

func (r fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

var loop = netip.MustParseAddr("127.0.0.1")

// server is an httptest server that records what reached it.
type server struct {
	*httptest.Server
	hits atomic.Int64
	mu   sync.Mutex
	reqs []*http.Request
}

func newServer(t testing.TB, h http.HandlerFunc) *server {
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.mu.Lock()
		s.reqs = append(s.reqs, r.Clone(context.Background()))
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) port() string { u, _ := url.Parse(s.URL); return u.Port() }

func (s *server) last() *http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) == 0 {
		return nil
	}
	return s.reqs[len(s.reqs)-1]
}

func policy(t testing.TB, entries ...any) *netpolicy.Policy {
	t.Helper()
	b, _ := json.Marshal(entries)
	var es []netpolicy.Entry
	if err := json.Unmarshal(b, &es); err != nil {
		t.Fatal(err)
	}
	p, err := netpolicy.Compile("agents.nf.network.allow", es)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var lim = Limits{MaxBytes: 1 << 20, Timeout: 10 * time.Second}

// A name that resolves to the test server: the fetcher treats loopback as
// public here only, so a policy by host name can be tested on one machine.
func namedFetcher(names ...string) *Fetcher {
	r := fakeResolver{}
	for _, n := range names {
		r[n] = []netip.Addr{loop}
	}
	f := New(Options{Resolver: r})
	f.special = func(ip netip.Addr) string { return "" }
	return f
}

func TestFetchAllowedText(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: "secret"})
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "hello from the page")
	})
	f := namedFetcher("api.test")
	defer f.Close()
	p := policy(t, "http://api.test:"+s.port()+"/v1/")
	res, err := f.Do(context.Background(), p, lim, rpc.NetFetch{URL: "http://API.test:" + s.port() + "/v1/a/../page?q=1#x",
		Headers: map[string]string{"accept": "text/plain", "Accept-Language": "fr"}})
	if err != nil {
		t.Fatalf("Do = %v", err)
	}
	a := res.Answer
	if a.Text != "hello from the page" || a.HTTPStatus != 200 || a.Binary != nil || a.Untrusted == "" {
		t.Errorf("answer = %+v; want the page's text, status 200, marked untrusted", a)
	}
	r := s.last()
	if r.URL.Path != "/v1/page" || r.URL.RawQuery != "q=1" {
		t.Errorf("server saw %s; want /v1/page?q=1 (the checked form)", r.URL)
	}
	if r.Header.Get("User-Agent") != UserAgent || r.Header.Get("Accept") != "text/plain" || r.Header.Get("Accept-Language") != "fr" {
		t.Errorf("headers sent = %v", r.Header)
	}
	// A second fetch: the cookie the server set is not sent back.
	if _, err := f.Do(context.Background(), p, lim, rpc.NetFetch{URL: "http://api.test:" + s.port() + "/v1/again"}); err != nil {
		t.Fatal(err)
	}
	for k := range s.last().Header {
		if k == "Cookie" || k == "Authorization" || k == "Proxy-Authorization" {
			t.Errorf("header %s sent; a fetch sends no cookie or credential", k)
		}
	}
}

func TestFetchDenied(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "no") })
	f := namedFetcher("api.test", "other.test")
	defer f.Close()
	port := s.port()
	p := policy(t, "http://api.test:"+port+"/v1/", map[string]any{"prefix": "http://api.test:" + port + "/form", "methods": []string{"POST"}})
	for _, tc := range []struct {
		name string
		in   rpc.NetFetch
		code string
		says string
	}{
		{"method", rpc.NetFetch{URL: "http://api.test:" + port + "/v1/x", Method: "POST", Body: "a=1"}, CodeDenied, "method POST is not allowed"},
		{"method on the POST entry", rpc.NetFetch{URL: "http://api.test:" + port + "/form"}, CodeDenied, "method GET"},
		{"host", rpc.NetFetch{URL: "http://other.test:" + port + "/v1/x"}, CodeDenied, "no allow entry names host other.test"},
		{"port", rpc.NetFetch{URL: "http://api.test:1/v1/x"}, CodeDenied, "port 1"},
		{"path", rpc.NetFetch{URL: "http://api.test:" + port + "/v10"}, CodeDenied, "outside every allowed prefix"},
		{"traversal", rpc.NetFetch{URL: "http://api.test:" + port + "/v1/%2e%2e/admin"}, CodeDenied, "outside"},
		{"scheme", rpc.NetFetch{URL: "https://api.test:" + port + "/v1/"}, CodeDenied, "scheme https"},
		{"an Authorization header", rpc.NetFetch{URL: "http://api.test:" + port + "/v1/x", Headers: map[string]string{"Authorization": "Bearer x"}}, CodeBadInput, "not a header you may set"},
		{"a Cookie header", rpc.NetFetch{URL: "http://api.test:" + port + "/v1/x", Headers: map[string]string{"cookie": "a=b"}}, CodeBadInput, "not a header you may set"},
		{"header injection", rpc.NetFetch{URL: "http://api.test:" + port + "/v1/x", Headers: map[string]string{"Accept": "a\r\nAuthorization: x"}}, CodeBadInput, "one line"},
		{"a body on GET", rpc.NetFetch{URL: "http://api.test:" + port + "/v1/x", Body: "x"}, CodeBadInput, "only a POST"},
		{"method PUT", rpc.NetFetch{URL: "http://api.test:" + port + "/v1/x", Method: "PUT"}, CodeBadInput, "want GET, HEAD or POST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := s.hits.Load()
			res, err := f.Do(context.Background(), p, lim, tc.in)
			var c interface{ ToolCode() string }
			if !errors.As(err, &c) || c.ToolCode() != tc.code || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Do = %v; want a %s error saying %q", err, tc.code, tc.says)
			}
			if tc.code == CodeDenied && (!strings.Contains(err.Error(), "agents.nf.network.allow") || !strings.Contains(err.Error(), "ask the operator")) {
				t.Errorf("denial %q does not name the policy and what to ask the operator", err)
			}
			if res.Allowed {
				t.Errorf("result Allowed for a refused request")
			}
			if s.hits.Load() != before {
				t.Errorf("the server was reached by a refused request")
			}
		})
	}
}

func TestFetchRedirects(t *testing.T) {
	evil := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "exfiltrated") })
	var s *server
	s = newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/to-evil":
			http.Redirect(w, r, "http://evil.test:"+evil.port()+"/steal", http.StatusFound)
		case "/v1/to-outside":
			http.Redirect(w, r, "/admin", http.StatusMovedPermanently)
		case "/v1/hop":
			http.Redirect(w, r, "/v1/final", http.StatusFound)
		case "/v1/loop":
			http.Redirect(w, r, "/v1/loop", http.StatusFound)
		case "/v1/final":
			io.WriteString(w, "arrived")
		default:
			http.Error(w, "never", 500)
		}
	})
	f := namedFetcher("api.test", "evil.test")
	defer f.Close()
	p := policy(t, "http://api.test:"+s.port()+"/v1/")
	base := "http://api.test:" + s.port()

	res, err := f.Do(context.Background(), p, lim, rpc.NetFetch{URL: base + "/v1/hop"})
	if err != nil || res.Answer.Text != "arrived" || len(res.Redirects) != 1 || !strings.HasSuffix(res.Answer.URL, "/v1/final") {
		t.Errorf("redirect within the prefix: %+v, %v; want followed to /v1/final", res.Answer, err)
	}
	_, err = f.Do(context.Background(), p, lim, rpc.NetFetch{URL: base + "/v1/to-evil"})
	if !strings.Contains(err.Error(), "redirect to no allow entry names host evil.test") {
		t.Errorf("redirect to another host: %v; want denied", err)
	}
	if evil.hits.Load() != 0 {
		t.Error("the redirect's denied host was reached")
	}
	if _, err = f.Do(context.Background(), p, lim, rpc.NetFetch{URL: base + "/v1/to-outside"}); err == nil || !strings.Contains(err.Error(), "outside every allowed prefix") {
		t.Errorf("redirect outside the prefix: %v; want denied", err)
	}
	_, err = f.Do(context.Background(), p, lim, rpc.NetFetch{URL: base + "/v1/loop"})
	var d *Denial
	if !errors.As(err, &d) || d.Code != CodeRedirects {
		t.Errorf("redirect loop: %v; want %s", err, CodeRedirects)
	}
}

func TestFetchRebindingAndSpecialAddresses(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "internal") })
	// The real Special check: a name that resolves to loopback (or to a
	// private address) is refused even though its entry admits it.
	f := New(Options{Resolver: fakeResolver{
		"rebind.test":  {loop},
		"private.test": {netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("fe80::1")},
		"mapped.test":  {netip.MustParseAddr("::ffff:127.0.0.1")},
	}})
	defer f.Close()
	for _, host := range []string{"rebind.test", "private.test", "mapped.test"} {
		p := policy(t, "http://"+host+":"+s.port()+"/")
		_, err := f.Do(context.Background(), p, lim, rpc.NetFetch{URL: "http://" + host + ":" + s.port() + "/"})
		var d *Denial
		if !errors.As(err, &d) || !strings.Contains(d.Reason, "resolves only to addresses a fetch may not reach") {
			t.Errorf("%s: Do = %v; want denied for its address", host, err)
		}
	}
	if s.hits.Load() != 0 {
		t.Error("a name resolving to loopback reached the server")
	}
	// An entry naming the literal address reaches it.
	p := policy(t, "http://127.0.0.1:"+s.port()+"/")
	res, err := f.Do(context.Background(), p, lim, rpc.NetFetch{URL: "http://127.0.0.1:" + s.port() + "/"})
	if err != nil || res.Answer.Text != "internal" {
		t.Errorf("literal 127.0.0.1 entry: %+v, %v; want reached", res.Answer, err)
	}
	// localhost likewise, without asking DNS.
	p = policy(t, "http://localhost:"+s.port()+"/")
	if _, err := f.Do(context.Background(), p, lim, rpc.NetFetch{URL: "http://localhost:" + s.port() + "/"}); err != nil {
		t.Errorf("localhost entry: %v; want reached", err)
	}
	for ip, want := range map[string]string{"169.254.169.254": "link-local", "100.64.0.1": "shared address space", "8.8.8.8": "",
		"::1": "loopback", "fc00::1": "private", "::ffff:192.168.0.1": "private", "0.0.0.0": "unspecified", "0.1.2.3": "this network"} {
		if got := Special(netip.MustParseAddr(ip)); got != want {
			t.Errorf("Special(%s) = %q; want %q", ip, got, want)
		}
	}
}

func TestFetchLimits(t *testing.T) {
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, strings.Repeat("é", 5000)) // 10000 bytes
		case "/slow":
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			select {
			case <-block:
			case <-r.Context().Done():
			}
		case "/huge":
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, strings.Repeat("ü", MaxTextBytes)) // twice the text cap
		case "/png":
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00binary"))
		}
	})
	f := New(Options{})
	defer f.Close()
	p := policy(t, "http://127.0.0.1:"+s.port()+"/")
	base := "http://127.0.0.1:" + s.port()

	res, err := f.Do(context.Background(), p, Limits{MaxBytes: 4097, Timeout: 10 * time.Second}, rpc.NetFetch{URL: base + "/big"})
	if err != nil || !res.Truncated || res.Bytes != 4097 || len(res.Answer.Text) != 4096 || !strings.Contains(res.Answer.Summary, "cut") {
		t.Errorf("oversize: bytes %d truncated %v text %d bytes, %v; want 4097 bytes read, cut at a character", res.Bytes, res.Truncated, len(res.Answer.Text), err)
	}
	res, err = f.Do(context.Background(), p, lim, rpc.NetFetch{URL: base + "/big", MaxBytes: 10})
	if err != nil || res.Bytes != 10 || !res.Truncated {
		t.Errorf("max_bytes 10: %d bytes, %v", res.Bytes, err)
	}
	_, err = f.Do(context.Background(), p, Limits{MaxBytes: 100, Timeout: 300 * time.Millisecond}, rpc.NetFetch{URL: base + "/slow"})
	var ne *NetError
	if !errors.As(err, &ne) || ne.Code != CodeTimeout {
		t.Errorf("slow: %v; want %s", err, CodeTimeout)
	}
	// Read whole (the run's source object keeps it), shown up to the cap.
	res, err = f.Do(context.Background(), p, lim, rpc.NetFetch{URL: base + "/huge"})
	if err != nil || res.Truncated || res.Bytes != 2*MaxTextBytes || !res.Answer.TextTruncated || len(res.Answer.Text) != MaxTextBytes ||
		!utf8.ValidString(res.Answer.Text) {
		t.Errorf("huge text: read %d, truncated %v, text %d bytes (cut %v); want all read and the text cut at %d on a character",
			res.Bytes, res.Truncated, len(res.Answer.Text), res.Answer.TextTruncated, MaxTextBytes)
	}
	res, err = f.Do(context.Background(), p, lim, rpc.NetFetch{URL: base + "/png"})
	if err != nil || res.Answer.Text != "" || res.Answer.Binary == nil || res.Answer.Binary.ContentType != "image/png" || len(res.Answer.Binary.SHA256) != 64 {
		t.Errorf("binary: %+v, %v; want a summary and no text", res.Answer, err)
	}
	res, err = f.Do(context.Background(), p, lim, rpc.NetFetch{URL: base + "/png", Method: "HEAD"})
	if err != nil || res.Bytes != 0 || res.Answer.HTTPStatus != 200 {
		t.Errorf("HEAD: %+v, %v", res.Answer, err)
	}
}

func TestHandleRecordsEveryRequest(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "body") })
	p := policy(t, "http://127.0.0.1:"+s.port()+"/ok/")
	var recs []Record
	var bodies []string
	tool := &Tool{
		Fetcher: New(Options{}),
		Policy: func(_ context.Context, agent, session string) (Source, error) {
			if agent != "nf" {
				return Source{}, &NetError{Code: CodeNoPolicy, Msg: "agent " + agent + " has no network policy"}
			}
			return Source{Policy: p, Limits: lim, RunID: "r-000000000001"}, nil
		},
		Record: func(_ context.Context, agent, session string, src Source, rec Record, body []byte) (string, error) {
			recs = append(recs, rec)
			bodies = append(bodies, string(body))
			if rec.Allowed && len(body) > 0 {
				return strings.Repeat("a", 64), nil
			}
			return "", nil
		},
	}
	defer tool.Fetcher.Close()
	h := tool.HostTools()[rpc.HostToolNetFetch]
	out, err := h(context.Background(), "nf", "s1", json.RawMessage(`{"url":"http://127.0.0.1:`+s.port()+`/ok/x"}`))
	if err != nil {
		t.Fatal(err)
	}
	var a rpc.NetFetchAnswer
	if err := json.Unmarshal(out, &a); err != nil || a.Text != "body" || a.Source != strings.Repeat("a", 64) {
		t.Errorf("answer %s, %v; want the body and its source hash", out, err)
	}
	_, err = h(context.Background(), "nf", "s1", json.RawMessage(`{"url":"http://127.0.0.1:`+s.port()+`/secret"}`))
	if err == nil {
		t.Fatal("denied URL answered")
	}
	if _, err := h(context.Background(), "nf", "s1", json.RawMessage(`{"url":"http://x/","cookie":"a"}`)); err == nil {
		t.Error("an unknown input member was accepted")
	}
	if _, err := h(context.Background(), "other", "s2", json.RawMessage(`{"url":"http://127.0.0.1:`+s.port()+`/ok/x"}`)); err == nil || !strings.Contains(err.Error(), "no network policy") {
		t.Errorf("an agent without a policy: %v", err)
	}
	if len(recs) != 2 || !recs[0].Allowed || recs[0].Status != 200 || recs[0].Bytes != 4 || bodies[0] != "body" ||
		recs[1].Allowed || recs[1].Code != CodeDenied || !strings.Contains(recs[1].Reason, "outside") || recs[1].Policy != "agents.nf.network.allow" {
		t.Errorf("records = %+v; want the allowed request and the denied one", recs)
	}
	// A request that cannot be recorded is not answered.
	tool.Record = func(context.Context, string, string, Source, Record, []byte) (string, error) {
		return "", errors.New("store down")
	}
	if _, err := h(context.Background(), "nf", "s1", json.RawMessage(`{"url":"http://127.0.0.1:`+s.port()+`/ok/x"}`)); err == nil || !strings.Contains(err.Error(), "withheld") {
		t.Errorf("unrecorded request: %v; want withheld", err)
	}
}

func TestText(t *testing.T) {
	for _, tc := range []struct {
		ct, body, want string
		text           bool
	}{
		{"text/html; charset=utf-8", "<p>hi</p>", "<p>hi</p>", true},
		{"application/json", `{"a":1}`, `{"a":1}`, true},
		{"application/vnd.api+json", `{}`, `{}`, true},
		{"text/plain; charset=iso-8859-1", "caf\xe9", "café", true},
		{"", "plain words", "plain words", true},
		{"application/octet-stream", "text-looking", "", false},
		{"image/png", "\x89PNG", "", false},
		{"text/plain", "bad \xff byte", "bad \uFFFD byte", true},
	} {
		got, ok := Text(tc.ct, []byte(tc.body))
		if got != tc.want || ok != tc.text {
			t.Errorf("Text(%q, %q) = %q, %v; want %q, %v", tc.ct, tc.body, got, ok, tc.want, tc.text)
		}
	}
}

// BenchmarkNetFetch and BenchmarkDirectFetch fetch the same 4 KiB page
// from the same loopback server: the difference is choir.net.fetch's
// overhead (policy check, checked dial, answer), without the RPC hop.
func BenchmarkNetFetch(b *testing.B) {
	s := newServer(b, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, strings.Repeat("x", 4096)) })
	f := New(Options{})
	defer f.Close()
	p := policy(b, "http://127.0.0.1:"+s.port()+"/page")
	in := rpc.NetFetch{URL: s.URL + "/page"}
	b.ResetTimer()
	for b.Loop() {
		res, err := f.Do(context.Background(), p, lim, in)
		if err != nil || res.Bytes != 4096 {
			b.Fatal(err)
		}
		if _, err := json.Marshal(res.Answer); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDirectFetch(b *testing.B) {
	s := newServer(b, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, strings.Repeat("x", 4096)) })
	c := &http.Client{Transport: &http.Transport{}}
	defer c.CloseIdleConnections()
	b.ResetTimer()
	for b.Loop() {
		resp, err := c.Get(s.URL + "/page")
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if n != 4096 {
			b.Fatal(n)
		}
	}
}
