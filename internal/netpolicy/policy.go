// Package netpolicy is the allowlist of choir.net.fetch (seed 002 §3: all
// outbound network goes through a policy-enforced tool): which URLs, with
// which methods, a fetch may request.
//
// An entry is a URL prefix, "https://api.example.org/v1/" (scheme, host,
// optional port, path prefix), or {"prefix": …, "methods": [...]} (GET and
// HEAD when methods is absent). A request is admitted when some entry has
// its scheme, host and port exactly and a path prefix that the request's
// path starts with at a segment boundary ("/v1" admits "/v1" and "/v1/x",
// never "/v10"), and names its method.
//
// Matching is done on a canonical form of both sides: scheme and host in
// lowercase (no trailing dot), the port always explicit (80 and 443 by
// default), the path percent-decoded once with dot segments removed. URLs
// that a server could read otherwise than this package does are refused,
// not guessed at: userinfo, encoded or literal backslashes and encoded
// slashes in the path, double-encoded dots and slashes, "..;" segments,
// control characters, non-ASCII hosts, IPv6 zones. The fragment is never
// sent and is dropped. Canonical.URL is what the fetch must request, so
// the server sees exactly the path that was checked.
//
// The package is standard library only: internal/config uses it to check
// config.json, choird to enforce it.
package netpolicy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Methods a policy may admit: the ones choir.net.fetch sends.
var Methods = []string{"GET", "HEAD", "POST"}

// DefaultMethods are an entry's methods when it names none.
var DefaultMethods = []string{"GET", "HEAD"}

// MaxURLBytes bounds a URL or a prefix.
const MaxURLBytes = 8192

// MaxEntries bounds one allowlist.
const MaxEntries = 256

// Entry is one allowlist entry as config.json writes it.
type Entry struct {
	Prefix  string
	Methods []string // nil: DefaultMethods
	object  bool     // read from the object form
}

type entryObject struct {
	Prefix  string   `json:"prefix"`
	Methods []string `json:"methods,omitempty"`
}

// UnmarshalJSON takes a string or a {"prefix", "methods"} object (unknown
// members refused). It does not check the prefix: Compile does, naming the
// entry's path.
func (e *Entry) UnmarshalJSON(b []byte) error {
	*e = Entry{}
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &e.Prefix)
	}
	var o entryObject
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return errors.New(`an allow entry is a URL prefix string or {"prefix": "https://host/path/", "methods": ["GET", "POST"]}`)
	}
	e.Prefix, e.Methods, e.object = o.Prefix, o.Methods, true
	return nil
}

// MarshalJSON writes the form the entry was read in (the string form when
// it names no methods).
func (e Entry) MarshalJSON() ([]byte, error) {
	if e.Methods == nil && !e.object {
		return json.Marshal(e.Prefix)
	}
	return json.Marshal(entryObject{Prefix: e.Prefix, Methods: e.Methods})
}

// Rule is a compiled entry.
type Rule struct {
	Index   int       // the entry's position in its list
	Prefix  Canonical // scheme, host, port, path prefix
	Methods []string
	// Private: the entry names a literal IP address or "localhost", so a
	// request it admits may connect to a loopback, link-local or private
	// address (every other rule refuses those, whatever DNS says).
	Private bool
}

// String is the rule as the operator wrote it, canonically.
func (r Rule) String() string {
	return fmt.Sprintf("%s %s", strings.Join(r.Methods, ","), r.Prefix.Origin()+r.Prefix.Path)
}

// Policy is a compiled allowlist. The zero Policy (and nil) admits nothing.
type Policy struct {
	// Name says where the list came from, for denials and receipts
	// ("agents.a1.network.allow", "headless.moods.CURIOUS.allow").
	Name  string
	Rules []Rule
}

// EntryError is a problem with one entry: Path is its JSON path below the
// list (like "[2].methods[0]"), Value the offending text.
type EntryError struct {
	Path  string
	Value string
	Msg   string
}

func (e *EntryError) Error() string {
	if e.Value != "" {
		return fmt.Sprintf("%s: %q: %s", e.Path, e.Value, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// Compile checks every entry and returns the policy, or every problem as
// *EntryError values joined (their paths relative to the list, "[i]…").
func Compile(name string, entries []Entry) (*Policy, error) {
	p := &Policy{Name: name}
	var errs []error
	if len(entries) > MaxEntries {
		errs = append(errs, &EntryError{Path: "", Value: strconv.Itoa(len(entries)), Msg: fmt.Sprintf("at most %d entries", MaxEntries)})
	}
	for i, e := range entries {
		r, es := compileEntry(i, e)
		errs = append(errs, es...)
		if len(es) == 0 {
			p.Rules = append(p.Rules, r)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

func compileEntry(i int, e Entry) (Rule, []error) {
	at := fmt.Sprintf("[%d]", i)
	prefixPath := at
	if e.Methods != nil || e.object {
		prefixPath += ".prefix"
	}
	var errs []error
	c, err := canonical(e.Prefix, true)
	if err != nil {
		errs = append(errs, &EntryError{Path: prefixPath, Value: clip(e.Prefix), Msg: err.Error()})
	}
	methods := DefaultMethods
	if e.Methods != nil {
		methods = nil
		if len(e.Methods) == 0 {
			errs = append(errs, &EntryError{Path: at + ".methods", Msg: "names no method; leave methods out for GET and HEAD, or list some of " + strings.Join(Methods, ", ")})
		}
		for j, m := range e.Methods {
			switch {
			case !slices.Contains(Methods, m):
				errs = append(errs, &EntryError{Path: fmt.Sprintf("%s.methods[%d]", at, j), Value: clip(m), Msg: "choir.net.fetch sends only " + strings.Join(Methods, ", ") + " (in capitals)"})
			case slices.Contains(methods, m):
				errs = append(errs, &EntryError{Path: fmt.Sprintf("%s.methods[%d]", at, j), Value: m, Msg: "named twice; keep one"})
			default:
				methods = append(methods, m)
			}
		}
	}
	if len(errs) > 0 {
		return Rule{}, errs
	}
	return Rule{Index: i, Prefix: c, Methods: slices.Clone(methods), Private: c.Literal}, nil
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// Decision is the answer of Check.
type Decision struct {
	Allowed bool
	// URL is the canonical request (valid when the URL parsed): what the
	// fetch must send.
	URL *Canonical
	// Rule is the admitting rule when Allowed.
	Rule Rule
	// Reason says why a request was refused, in words for the model and
	// the operator: which part of the URL or which method no rule admits.
	Reason string
}

// Check decides whether method on rawURL is admitted. A nil policy admits
// nothing.
func (p *Policy) Check(method, rawURL string) Decision {
	c, err := Canon(rawURL)
	if err != nil {
		return Decision{Reason: err.Error()}
	}
	d := Decision{URL: &c}
	if !slices.Contains(Methods, method) {
		d.Reason = fmt.Sprintf("method %q: choir.net.fetch sends only %s", method, strings.Join(Methods, ", "))
		return d
	}
	if p == nil || len(p.Rules) == 0 {
		d.Reason = "the allowlist is empty: no URL is admitted"
		return d
	}
	// The nearest miss makes the most useful reason.
	best, bestScore := "", -1
	for _, r := range p.Rules {
		score, why := r.match(c, method)
		if score == 5 {
			d.Allowed, d.Rule = true, r
			return d
		}
		if score > bestScore {
			best, bestScore = why, score
		}
	}
	d.Reason = best
	return d
}

// match scores how far r admits c: 0 host differs, 1 scheme, 2 port,
// 3 path, 4 method, 5 admitted.
func (r Rule) match(c Canonical, method string) (int, string) {
	switch {
	case r.Prefix.Host != c.Host:
		return 0, fmt.Sprintf("no allow entry names host %s", c.Host)
	case r.Prefix.Scheme != c.Scheme:
		return 1, fmt.Sprintf("no allow entry admits scheme %s on host %s", c.Scheme, c.Host)
	case r.Prefix.Port != c.Port:
		return 2, fmt.Sprintf("no allow entry admits port %d on %s", c.Port, c.Host)
	case !pathHasPrefix(c.Path, r.Prefix.Path):
		return 3, fmt.Sprintf("path %s is outside every allowed prefix on %s", c.Path, c.Origin())
	case !slices.Contains(r.Methods, method):
		return 4, fmt.Sprintf("method %s is not allowed on %s (entry [%d] admits %s)", method, r.Prefix.Origin()+r.Prefix.Path, r.Index, strings.Join(r.Methods, ", "))
	}
	return 5, ""
}

// pathHasPrefix: prefix ends in "/" and p starts with it, or p equals
// prefix, or p continues prefix with "/".
func pathHasPrefix(p, prefix string) bool {
	if strings.HasSuffix(prefix, "/") {
		return strings.HasPrefix(p, prefix)
	}
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}

// Canonical is a URL in the form the policy matches and the fetch sends.
type Canonical struct {
	Scheme string // "http" or "https"
	Host   string // lowercase name without a trailing dot, or an IP address (IPv6 without brackets)
	Port   int
	Path   string // decoded, dot segments removed, starting with "/"
	Query  string // raw query as given (not matched)
	// Literal: Host is an IP address or "localhost".
	Literal bool
}

// Origin is scheme://host:port.
func (c Canonical) Origin() string {
	h := c.Host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	return fmt.Sprintf("%s://%s:%d", c.Scheme, h, c.Port)
}

// HostPort is host:port for dialling.
func (c Canonical) HostPort() string {
	h := c.Host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	return h + ":" + strconv.Itoa(c.Port)
}

// String is the URL to request: the canonical path re-escaped, the query
// as given, no userinfo, no fragment.
func (c Canonical) String() string {
	u := url.URL{Scheme: c.Scheme, Host: c.hostForURL(), Path: c.Path, RawQuery: c.Query}
	return u.String()
}

func (c Canonical) hostForURL() string {
	if (c.Scheme == "http" && c.Port == 80) || (c.Scheme == "https" && c.Port == 443) {
		if strings.Contains(c.Host, ":") {
			return "[" + c.Host + "]"
		}
		return c.Host
	}
	return c.HostPort()
}

// Canon parses a URL a fetch was asked for.
func Canon(raw string) (Canonical, error) { return canonical(raw, false) }

// canonical parses raw; a prefix (an allow entry) may carry no query.
func canonical(raw string, prefix bool) (Canonical, error) {
	var c Canonical
	what := "URL"
	if prefix {
		what = "prefix"
	}
	switch {
	case raw == "":
		return c, fmt.Errorf("empty %s; want like https://api.example.org/v1/", what)
	case len(raw) > MaxURLBytes:
		return c, fmt.Errorf("%s longer than %d bytes", what, MaxURLBytes)
	}
	for _, r := range raw {
		if r < 0x21 || r == 0x7f || r > 0x7e {
			return c, fmt.Errorf("%s holds a space, a control or a non-ASCII character; percent-encode it (hosts in punycode)", what)
		}
	}
	if strings.Contains(raw, `\`) {
		return c, fmt.Errorf("%s holds a backslash, which servers and browsers read as a slash; write '/' or %%5C is refused too", what)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return c, fmt.Errorf("not a URL: %v", unwrapURLError(err))
	}
	c.Scheme = strings.ToLower(u.Scheme)
	switch {
	case c.Scheme != "http" && c.Scheme != "https":
		return c, fmt.Errorf("scheme %q: want http or https (an absolute URL like https://host/path)", u.Scheme)
	case u.Opaque != "":
		return c, errors.New("want scheme://host/path (an opaque URL has no host)")
	case u.User != nil:
		return c, errors.New("userinfo (user:password@) is refused: choir.net.fetch sends no credential")
	case u.Host == "":
		return c, errors.New("no host")
	case prefix && (u.RawQuery != "" || u.ForceQuery):
		return c, errors.New("a prefix has no query: an entry admits paths, whatever their query")
	case prefix && (u.Fragment != "" || strings.Contains(raw, "#")):
		return c, errors.New("a prefix has no fragment")
	}
	host, port := u.Hostname(), u.Port()
	if strings.HasSuffix(u.Host, ":") {
		return c, errors.New("empty port after ':'")
	}
	if port == "" {
		c.Port = 443
		if c.Scheme == "http" {
			c.Port = 80
		}
	} else {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || port[0] == '0' {
			return c, fmt.Errorf("port %q: want 1 to 65535", port)
		}
		c.Port = n
	}
	if c.Host, c.Literal, err = canonHost(host); err != nil {
		return c, err
	}
	if c.Path, err = canonPath(u, prefix); err != nil {
		return c, err
	}
	if !prefix {
		c.Query = u.RawQuery
	}
	return c, nil
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// canonHost lowercases a name and checks it is a DNS name, or normalises
// an IP literal. literal reports an IP address or localhost.
func canonHost(h string) (host string, literal bool, err error) {
	if strings.Contains(h, "%") {
		return "", false, errors.New("a host is written without percent-encoding or IPv6 zones")
	}
	if strings.Contains(h, ":") { // IPv6 (url.Parse kept it from brackets)
		a, err := netip.ParseAddr(h)
		if err != nil {
			return "", false, fmt.Errorf("host [%s] is not an IPv6 address", h)
		}
		if a.Is4In6() {
			a = a.Unmap()
		}
		return a.String(), true, nil
	}
	h = strings.ToLower(h)
	h = strings.TrimSuffix(h, ".")
	if a, err := netip.ParseAddr(h); err == nil {
		return a.String(), true, nil
	}
	if h == "" || len(h) > 253 {
		return "", false, errors.New("host is empty or longer than 253 characters")
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return "", false, fmt.Errorf("host %q has an empty or over-long label", h)
		}
		for i := 0; i < len(l); i++ {
			b := l[i]
			if !(b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '-' || b == '_') {
				return "", false, fmt.Errorf("host %q: want letters, digits, '-' and '.' (non-ASCII names in punycode)", h)
			}
		}
	}
	// A name of digits only (and hex forms) is what some resolvers read as
	// an IPv4 address (127.1, 0x7f.1, 2130706433): refused, write the
	// address in dotted form.
	last := labels[len(labels)-1]
	if allDigitsOrHex(last) {
		return "", false, fmt.Errorf("host %q looks like an IPv4 address in a non-standard form; write it as a.b.c.d", h)
	}
	return h, h == "localhost", nil
}

func allDigitsOrHex(l string) bool {
	if strings.HasPrefix(l, "0x") {
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}

// canonPath decodes the path once, refuses what a server might decode
// further or split otherwise, and removes dot segments.
func canonPath(u *url.URL, prefix bool) (string, error) {
	raw := u.EscapedPath()
	if raw == "" {
		return "/", nil
	}
	low := strings.ToLower(raw)
	for _, bad := range []string{"%2f", "%5c", "%00"} {
		if strings.Contains(low, bad) {
			return "", fmt.Errorf("path holds %s (an encoded slash, backslash or NUL), which servers read differently; refused", strings.ToUpper(bad))
		}
	}
	p := u.Path
	if strings.ContainsAny(p, "\\") {
		return "", errors.New("path holds a backslash; refused")
	}
	for i := 0; i < len(p); i++ {
		if p[i] < 0x20 || p[i] == 0x7f {
			return "", errors.New("path holds a control character; refused")
		}
	}
	lp := strings.ToLower(p)
	for _, bad := range []string{"%2e", "%2f", "%5c", "%25"} {
		if strings.Contains(lp, bad) {
			return "", fmt.Errorf("path is percent-encoded twice (%s after decoding), which a server may decode again; refused", strings.ToUpper(bad))
		}
	}
	if !strings.HasPrefix(p, "/") {
		return "", errors.New("path must start with '/'")
	}
	segs := strings.Split(p[1:], "/")
	var out []string
	for i, s := range segs {
		name := s
		if j := strings.IndexByte(s, ';'); j >= 0 {
			name = s[:j]
			if name == "." || name == ".." {
				return "", fmt.Errorf("path segment %q is a dot segment with parameters, which some servers resolve; refused", s)
			}
		}
		if prefix && (s == "." || s == "..") {
			return "", fmt.Errorf("prefix path holds the dot segment %q; write the path it means", s)
		}
		switch s {
		case ".":
			if i == len(segs)-1 {
				out = append(out, "")
			}
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if i == len(segs)-1 {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	clean := "/" + strings.Join(out, "/")
	if prefix && strings.Contains(clean, "//") {
		return "", errors.New("prefix path holds an empty segment ('//')")
	}
	return clean, nil
}
