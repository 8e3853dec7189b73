package netpolicy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func mustCompile(t testing.TB, entries ...Entry) *Policy {
	t.Helper()
	p, err := Compile("test", entries)
	if err != nil {
		t.Fatalf("Compile = %v", err)
	}
	return p
}

func TestCheckAdmits(t *testing.T) {
	p := mustCompile(t,
		Entry{Prefix: "https://api.example.org/v1/"},
		Entry{Prefix: "http://127.0.0.1:8080/hook", Methods: []string{"POST"}},
		Entry{Prefix: "HTTPS://Docs.Example.ORG"},
	)
	for _, tc := range []struct {
		method, url, sent string
	}{
		{"GET", "https://api.example.org/v1/items", "https://api.example.org/v1/items"},
		{"HEAD", "https://api.example.org/v1/", "https://api.example.org/v1/"},
		{"GET", "https://API.EXAMPLE.ORG:443/v1/items?q=1#frag", "https://api.example.org/v1/items?q=1"},
		{"GET", "https://api.example.org./v1/x", "https://api.example.org/v1/x"},
		{"GET", "https://api.example.org/v1/a/./b/../c", "https://api.example.org/v1/a/c"},
		{"GET", "https://api.example.org/v1/%61bc", "https://api.example.org/v1/abc"},
		{"GET", "https://api.example.org/v1/a%20b", "https://api.example.org/v1/a%20b"},
		{"GET", "https://api.example.org/v1/a%3Fb", "https://api.example.org/v1/a%3Fb"},
		{"POST", "http://127.0.0.1:8080/hook", "http://127.0.0.1:8080/hook"},
		{"POST", "http://127.0.0.1:8080/hook/sub", "http://127.0.0.1:8080/hook/sub"},
		{"GET", "https://docs.example.org/anything", "https://docs.example.org/anything"},
		{"GET", "https://docs.example.org", "https://docs.example.org/"},
	} {
		d := p.Check(tc.method, tc.url)
		if !d.Allowed {
			t.Errorf("Check(%s, %s) refused: %s; want admitted", tc.method, tc.url, d.Reason)
			continue
		}
		if got := d.URL.String(); got != tc.sent {
			t.Errorf("Check(%s, %s).URL = %s; want %s", tc.method, tc.url, got, tc.sent)
		}
	}
}

// Every way a URL could slip past a prefix: each is refused, and the
// reason says why.
func TestCheckHostile(t *testing.T) {
	p := mustCompile(t,
		Entry{Prefix: "https://api.example.org/v1/"},
		Entry{Prefix: "https://files.example.org/pub"},
		Entry{Prefix: "http://127.0.0.1:8080/ok/", Methods: []string{"GET"}},
	)
	for _, tc := range []struct {
		name, method, url, reason string
	}{
		{"other host", "GET", "https://evil.example/v1/", "no allow entry names host evil.example"},
		{"suffix host", "GET", "https://api.example.org.evil.example/v1/", "names host"},
		{"prefix host", "GET", "https://xapi.example.org/v1/", "names host"},
		{"userinfo host confusion", "GET", "https://api.example.org@evil.example/v1/", "userinfo"},
		{"userinfo on the right host", "GET", "https://user:pw@api.example.org/v1/", "userinfo"},
		{"other scheme", "GET", "http://api.example.org/v1/", "scheme http"},
		{"ftp", "GET", "ftp://api.example.org/v1/", "want http or https"},
		{"javascript", "GET", "javascript:alert(1)", "want http or https"},
		{"file", "GET", "file:///etc/passwd", "want http or https"},
		{"opaque", "GET", "https:api.example.org/v1/", "opaque"},
		{"other port", "GET", "https://api.example.org:8443/v1/", "port 8443"},
		{"port 0-padded", "GET", "https://api.example.org:0443/v1/", "port"},
		{"port too big", "GET", "https://api.example.org:65536/v1/", "port"},
		{"empty port", "GET", "https://api.example.org:/v1/", "empty port"},
		{"sibling path v10", "GET", "https://api.example.org/v10", "outside every allowed prefix"},
		{"prefix without slash, sibling", "GET", "https://files.example.org/public", "outside"},
		{"parent", "GET", "https://api.example.org/v1/../admin", "outside"},
		{"parent many", "GET", "https://api.example.org/v1/../../../../admin", "outside"},
		{"encoded dots", "GET", "https://api.example.org/v1/%2e%2e/admin", "outside"},
		{"mixed encoded dots", "GET", "https://api.example.org/v1/.%2E/admin", "outside"},
		{"encoded slash", "GET", "https://api.example.org/v1%2f..%2fadmin", "encoded slash"},
		{"encoded slash upper", "GET", "https://api.example.org/v1/..%2Fadmin", "encoded slash"},
		{"encoded backslash", "GET", "https://api.example.org/v1/..%5cadmin", "encoded slash"},
		{"backslash", "GET", `https://api.example.org/v1/..\admin`, "backslash"},
		{"backslash authority", "GET", `https://evil.example\@api.example.org/v1/`, "backslash"},
		{"double-encoded dots", "GET", "https://api.example.org/v1/%252e%252e/admin", "twice"},
		{"double-encoded slash", "GET", "https://api.example.org/v1/..%252fadmin", "twice"},
		{"tomcat ..;", "GET", "https://api.example.org/v1/..;/admin", "dot segment with parameters"},
		{"tomcat .;x", "GET", "https://api.example.org/v1/.;x/../../admin", "dot segment with parameters"},
		{"encoded NUL", "GET", "https://api.example.org/v1/%00/x", "NUL"},
		{"encoded newline", "GET", "https://api.example.org/v1/%0d%0aHost:evil", "control"},
		{"space", "GET", "https://api.example.org/v1/a b", "space"},
		{"tab", "GET", "https://api.example.org/v1/\tx", "control"},
		{"non-ASCII host", "GET", "https://аpi.example.org/v1/", "non-ASCII"},
		{"percent host", "GET", "https://api%2eexample.org/v1/", ""},
		{"decimal IP", "GET", "http://2130706433:8080/ok/", "non-standard form"},
		{"short IP", "GET", "http://127.1:8080/ok/", "non-standard form"},
		{"hex IP", "GET", "http://0x7f.0.0.1:8080/ok/", "non-standard form"},
		{"IPv6 zone", "GET", "http://[fe80::1%25eth0]:8080/ok/", "zones"},
		{"IPv6 loopback for 127.0.0.1", "GET", "http://[::1]:8080/ok/", "names host ::1"},
		{"method not admitted", "POST", "https://api.example.org/v1/x", "method POST is not allowed"},
		{"method unknown", "DELETE", "https://api.example.org/v1/x", "sends only GET, HEAD, POST"},
		{"method lowercase", "get", "https://api.example.org/v1/x", "sends only"},
		{"HEAD where only GET", "HEAD", "http://127.0.0.1:8080/ok/x", "method HEAD"},
		{"relative", "GET", "/v1/x", "want http or https"},
		{"scheme-relative", "GET", "//api.example.org/v1/", "want http or https"},
		{"empty", "GET", "", "empty URL"},
		{"too long", "GET", "https://api.example.org/v1/" + strings.Repeat("a", MaxURLBytes), "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := p.Check(tc.method, tc.url)
			if d.Allowed {
				t.Fatalf("Check(%s, %q) admitted as %s by %s; want refused", tc.method, tc.url, d.URL, d.Rule)
			}
			if !strings.Contains(d.Reason, tc.reason) {
				t.Errorf("Check(%s, %q).Reason = %q; want it to say %q", tc.method, tc.url, d.Reason, tc.reason)
			}
		})
	}
}

func TestNilAndEmptyPolicyAdmitNothing(t *testing.T) {
	var nilp *Policy
	for _, p := range []*Policy{nilp, mustCompile(t)} {
		if d := p.Check("GET", "https://example.org/"); d.Allowed || !strings.Contains(d.Reason, "empty") {
			t.Errorf("Check on an empty policy = %+v; want refused as empty", d)
		}
	}
}

func TestLiteralHostsArePrivate(t *testing.T) {
	p := mustCompile(t,
		Entry{Prefix: "http://localhost:9000/"},
		Entry{Prefix: "http://[::1]:9000/"},
		Entry{Prefix: "http://10.0.0.7/"},
		Entry{Prefix: "https://example.org/"},
	)
	for url, private := range map[string]bool{
		"http://LOCALHOST.:9000/x":          true,
		"http://[0:0::1]:9000/x":            true,
		"http://10.0.0.7/x":                 true,
		"https://example.org/x":             false,
		"http://[::ffff:10.0.0.7]:80/a/../": true,
	} {
		d := p.Check("GET", url)
		if !d.Allowed || d.Rule.Private != private {
			t.Errorf("Check(GET, %s) = allowed %v, private %v (%s); want allowed, private %v", url, d.Allowed, d.Rule.Private, d.Reason, private)
		}
	}
}

func TestCompileErrorsNameTheEntry(t *testing.T) {
	var entries []Entry
	if err := json.Unmarshal([]byte(`[
		"https://ok.example/",
		"gopher://x/",
		{"prefix": "https://a.example/", "methods": ["GET", "GET"]},
		{"prefix": "https://a.example/x?q"},
		"https://a.example/x#f",
		"https://a.example//x/",
		"https://a.example/../x/"
	]`), &entries); err != nil {
		t.Fatal(err)
	}
	_, err := Compile("agents.a.network.allow", entries)
	var paths []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ee *EntryError
		if !errors.As(e, &ee) {
			t.Fatalf("error %v is not an *EntryError", e)
		}
		paths = append(paths, ee.Path)
	}
	want := []string{"[1]", "[2].methods[1]", "[3].prefix", "[4]", "[5]", "[6]"}
	if strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Errorf("Compile error paths = %v; want %v\n%v", paths, want, err)
	}
	var e Entry
	if err := json.Unmarshal([]byte(`{"prefix": "https://a/", "verbs": ["GET"]}`), &e); err == nil {
		t.Error("an entry with an unknown member was read; want refused")
	}
	if err := json.Unmarshal([]byte(`42`), &e); err == nil {
		t.Error("a number was read as an entry; want refused")
	}
}

// FuzzCheck: whatever the URL, an admitted request's canonical form is
// under the admitting prefix, re-checks as admitted, and holds nothing a
// server could resolve outside it.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		"https://api.example.org/v1/x", "https://api.example.org/v1/../x", "https://api.example.org/v1/%2e%2e/x",
		"https://api.example.org/v1/..;/x", "https://api.example.org/v10", "https://a@api.example.org/v1/",
		"http://127.0.0.1:8080/ok/a/./../b", "https://api.example.org/v1//../..//x",
	} {
		f.Add(s)
	}
	p := mustCompile(f,
		Entry{Prefix: "https://api.example.org/v1/"},
		Entry{Prefix: "http://127.0.0.1:8080/ok", Methods: []string{"GET"}},
	)
	f.Fuzz(func(t *testing.T, raw string) {
		d := p.Check("GET", raw)
		if !d.Allowed {
			return
		}
		sent := d.URL.String()
		again := p.Check("GET", sent)
		if !again.Allowed || again.URL.String() != sent {
			t.Fatalf("%q admitted as %q, which re-checks as %+v", raw, sent, again)
		}
		path := d.URL.Path
		if !pathHasPrefix(path, d.Rule.Prefix.Path) || d.URL.Host != d.Rule.Prefix.Host || d.URL.Port != d.Rule.Prefix.Port {
			t.Fatalf("%q admitted as %q outside %s", raw, sent, d.Rule)
		}
		for _, seg := range strings.Split(path, "/") {
			if seg == "." || seg == ".." || strings.HasPrefix(seg, "..;") {
				t.Fatalf("%q admitted with dot segment in %q", raw, path)
			}
		}
		if strings.ContainsAny(sent, "\\@#") && !strings.Contains(d.URL.Query, "@") && !strings.Contains(d.URL.Path, "@") {
			t.Fatalf("%q admitted as %q with a backslash, userinfo or fragment", raw, sent)
		}
	})
}
