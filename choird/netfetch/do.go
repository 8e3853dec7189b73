package netfetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"choir/internal/netpolicy"
	"choir/internal/rpc"
)

// Limits bound one fetch.
type Limits struct {
	MaxBytes int64         // body bytes read at most
	Timeout  time.Duration // the whole fetch, redirects and body included
}

// Input limits.
const (
	MaxBodyBytes   = 1 << 20 // a POST body
	maxHeaderValue = 1024
)

// ModelHeaders are the request headers the model may set.
var ModelHeaders = []string{"Accept", "Accept-Language", "Content-Type"}

// Tool error codes (ToolCode).
const (
	CodeDenied    = "denied"
	CodeRedirects = "too_many_redirects"
	CodeBadInput  = "bad_input"
	CodeDNS       = "dns_error"
	CodeNetwork   = "network_error"
	CodeTimeout   = "timeout"
	CodeNoPolicy  = "no_policy"
)

// Denial is a request the policy refused: which list, what, why, and what
// the operator can do.
type Denial struct {
	Code   string // CodeDenied or CodeRedirects
	Policy string // the list's config.json path
	Method string
	URL    string
	Reason string
}

func (d *Denial) Error() string {
	what := strings.TrimSpace(d.Method + " " + d.URL)
	if d.Code == CodeRedirects {
		return fmt.Sprintf("%s: %s; fetch the final URL directly if it is allowed", what, d.Reason)
	}
	return fmt.Sprintf("%s refused by the network policy %s: %s. Do not try another way out: if this request is needed, "+
		"ask the operator to add an entry admitting it to %s in config.json", what, d.Policy, d.Reason, d.Policy)
}

// ToolCode is the tool error's code.
func (d *Denial) ToolCode() string { return d.Code }

// NetError is a fetch that was allowed but failed.
type NetError struct {
	Code string
	Msg  string
}

func (e *NetError) Error() string    { return e.Msg }
func (e *NetError) ToolCode() string { return e.Code }

func badInput(format string, args ...any) error {
	return &NetError{Code: CodeBadInput, Msg: fmt.Sprintf(format, args...)}
}

// Result is one fetch as the Recorder sees it.
type Result struct {
	Method     string
	URL        string // as asked (canonical when it parsed)
	Allowed    bool
	Reason     string // why refused or failed
	Rule       string // the admitting rule
	Status     int
	Bytes      int64
	Truncated  bool
	Duration   time.Duration
	Redirects  []string
	Body       []byte // the body read (nil for HEAD, refusals, failures)
	Answer     rpc.NetFetchAnswer
	ContentTyp string
}

// Do makes the request in if p admits it. err is a *Denial, a *NetError
// or the context's error; res is filled in every case.
func (f *Fetcher) Do(ctx context.Context, p *netpolicy.Policy, lim Limits, in rpc.NetFetch) (res Result, err error) {
	start := time.Now()
	defer func() { res.Duration = time.Since(start) }()
	if in.Method == "" {
		in.Method = http.MethodGet
	}
	res.Method, res.URL = in.Method, in.URL
	hdr, max, err := checkInput(&in, lim)
	if err != nil {
		res.Reason = err.Error()
		return res, err
	}
	d := p.Check(in.Method, in.URL)
	if d.URL != nil {
		res.URL = d.URL.String()
	}
	if !d.Allowed {
		res.Reason = d.Reason
		return res, &Denial{Code: CodeDenied, Policy: policyName(p), Method: in.Method, URL: res.URL, Reason: d.Reason}
	}
	res.Allowed, res.Rule = true, d.Rule.String()

	h := &hops{policy: p, origin: map[string]bool{}}
	h.admit(d.URL, d.Rule.Private)
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, hopsKey{}, h), lim.Timeout)
	defer cancel()
	var body io.Reader
	if in.Method == http.MethodPost {
		body = strings.NewReader(in.Body)
	}
	req, err := http.NewRequestWithContext(ctx, in.Method, d.URL.String(), body)
	if err != nil {
		return res, badInput("url: %v", err)
	}
	req.Header = hdr
	resp, err := f.client.Do(req)
	h.mu.Lock()
	for _, x := range h.trail {
		res.Redirects = append(res.Redirects, x.URL)
	}
	h.mu.Unlock()
	if err != nil {
		return res, f.failure(&res, h, err, lim)
	}
	defer resp.Body.Close()
	res.Status = resp.StatusCode
	res.URL = resp.Request.URL.String()
	if in.Method != http.MethodHead {
		buf, rerr := io.ReadAll(io.LimitReader(resp.Body, max+1))
		if int64(len(buf)) > max {
			buf, res.Truncated = buf[:max], true
		}
		res.Body = buf
		if rerr != nil && !res.Truncated {
			return res, f.failure(&res, h, rerr, lim)
		}
	}
	res.Bytes = int64(len(res.Body))
	res.ContentTyp = resp.Header.Get("Content-Type")
	res.Answer = answer(&res, resp)
	return res, nil
}

func policyName(p *netpolicy.Policy) string {
	if p == nil {
		return "(none)"
	}
	return p.Name
}

// failure maps a client error to a *Denial or *NetError and fills res.
func (f *Fetcher) failure(res *Result, h *hops, err error, lim Limits) error {
	var den *Denial
	var ne *NetError
	switch {
	case errors.As(err, &den):
		res.Allowed = false
		res.Reason = den.Reason
		return den
	case errors.As(err, &ne):
		res.Reason = ne.Msg
		return ne
	case errors.Is(err, context.DeadlineExceeded):
		ne = &NetError{Code: CodeTimeout, Msg: fmt.Sprintf("the fetch took longer than its limit of %s (timeout_s of the network policy)", lim.Timeout)}
	case errors.Is(err, context.Canceled):
		res.Reason = "cancelled"
		return err
	default:
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		ne = &NetError{Code: CodeNetwork, Msg: "the request failed: " + err.Error()}
	}
	res.Reason = ne.Msg
	return ne
}

// checkInput validates the model's input and returns the request's
// headers and the byte cap.
func checkInput(in *rpc.NetFetch, lim Limits) (http.Header, int64, error) {
	switch in.Method {
	case http.MethodGet, http.MethodHead:
		if in.Body != "" {
			return nil, 0, badInput("body: only a POST carries a body")
		}
	case http.MethodPost:
		if len(in.Body) > MaxBodyBytes {
			return nil, 0, badInput("body: %d bytes; at most %d", len(in.Body), MaxBodyBytes)
		}
	default:
		return nil, 0, badInput("method %q: want GET, HEAD or POST", in.Method)
	}
	h := http.Header{}
	h.Set("User-Agent", UserAgent)
	names := make([]string, 0, len(in.Headers))
	for k := range in.Headers {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		v := in.Headers[k]
		ck := http.CanonicalHeaderKey(k)
		if !slices.Contains(ModelHeaders, ck) {
			return nil, 0, badInput("headers.%s: not a header you may set (only %s; no credential or cookie is ever sent)", k, strings.Join(ModelHeaders, ", "))
		}
		if len(v) > maxHeaderValue || strings.ContainsAny(v, "\r\n\x00") {
			return nil, 0, badInput("headers.%s: at most %d bytes on one line", k, maxHeaderValue)
		}
		if ck == "Content-Type" && in.Method != http.MethodPost {
			return nil, 0, badInput("headers.Content-Type: only a POST has a body to describe")
		}
		h.Set(ck, v)
	}
	max := lim.MaxBytes
	if in.MaxBytes < 0 {
		return nil, 0, badInput("max_bytes: want a positive number")
	}
	if in.MaxBytes > 0 && in.MaxBytes < max {
		max = in.MaxBytes
	}
	return h, max, nil
}
