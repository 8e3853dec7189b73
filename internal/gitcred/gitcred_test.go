package gitcred

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestReadGitRequests(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Request
	}{
		{"https", "protocol=https\nhost=github.com\n\n", Request{Protocol: "https", Host: "github.com"}},
		{"with port and path", "protocol=https\nhost=git.example.com:8443\npath=org/repo.git\nusername=bob\n\n",
			Request{Protocol: "https", Host: "git.example.com:8443", Path: "org/repo.git", Username: "bob"}},
		{"EOF without blank line", "protocol=https\nhost=github.com", Request{Protocol: "https", Host: "github.com"}},
		{"empty", "", Request{}},
		{"CRLF like git", "protocol=https\r\nhost=github.com\r\n\r\n", Request{Protocol: "https", Host: "github.com"}},
		{"value with =", "protocol=https\nhost=github.com\npath=a=b\n\n", Request{Protocol: "https", Host: "github.com", Path: "a=b"}},
		{"arrays and unknown keys", "capability[]=authtype\ncapability[]=state\nwwwauth[]=Basic realm=\"x\"\nprotocol=https\nhost=h\nfuture=1\n\n",
			Request{Protocol: "https", Host: "h"}},
		{"stops at the blank line", "protocol=https\nhost=github.com\n\nhost=evil.example\n", Request{Protocol: "https", Host: "github.com"}},
		{"missing host", "protocol=https\n\n", Request{Protocol: "https"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Read(strings.NewReader(tc.in))
			if err != nil || got != tc.want {
				t.Errorf("Read(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestReadRefusesHostileInput(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"huge line", "protocol=https\nhost=" + strings.Repeat("a", MaxLine+10) + "\n\n", "line longer"},
		{"huge line without newline", "host=" + strings.Repeat("a", 1<<20), "line longer"},
		{"huge request", strings.Repeat("capability[]="+strings.Repeat("x", 1000)+"\n", 63) + strings.Repeat("y", 8000) + "=1\n", "more than"},
		{"too many attributes", strings.Repeat("capability[]=x\n", MaxAttrs+1) + "\n", "more than 64 attributes"},
		{"no =", "protocol=https\nhost github.com\n\n", "want key=value"},
		{"empty key", "=github.com\n\n", "empty key"},
		{"NUL in value", "protocol=https\nhost=github.com\x00.evil.example\n\n", "NUL"},
		{"carriage return inside", "protocol=https\nhost=github.com\rhost=evil\n\n", "carriage return"},
		{"host twice", "protocol=https\nhost=github.com\nhost=evil.example\n\n", `"host" given twice`},
		{"protocol twice", "protocol=https\nprotocol=http\nhost=github.com\n\n", `"protocol" given twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Read(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Read(%.60q...) = %+v, %v; want an error with %q", tc.in, got, err, tc.want)
			}
		})
	}
	if _, err := Read(strings.NewReader(strings.Repeat("capability[]=b\n", MaxRequest))); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Read(%d capability lines) = %v; want ErrTooLarge", MaxRequest, err)
	}
}

func TestParseHost(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"github.com", "github.com"},
		{"GitHub.COM", "github.com"},
		{"git.example.com:8443", "git.example.com:8443"},
		{"172.17.0.1:3000", "172.17.0.1:3000"},
		{"[2001:DB8::1]:443", "[2001:db8::1]:443"},
		{"[::1]", "[::1]"},
	} {
		h, err := ParseHost(tc.in)
		if err != nil || h.String() != tc.want {
			t.Errorf("ParseHost(%q) = %v, %v; want %s", tc.in, h, err, tc.want)
		}
	}
	for _, in := range []string{"", "https://github.com", "git@github.com", "github.com/org", "*.github.com", "github.com:", "github.com:0",
		"github.com:65536", "github.com:08", "github.com:ssh", "2001:db8::1", "[1.2.3.4]", "[::1", "[::1]x", "github.com.", "-github.com", "git hub.com",
		"github..com", "gïthub.com", strings.Repeat("a", 64) + ".com"} {
		if h, err := ParseHost(in); err == nil {
			t.Errorf("ParseHost(%q) = %v; want an error", in, h)
		} else if !strings.Contains(err.Error(), "want") {
			t.Errorf("ParseHost(%q) error %q does not say what to write", in, err)
		}
	}
}

func TestHostMatches(t *testing.T) {
	any, _ := ParseHost("github.com")
	port, _ := ParseHost("172.17.0.1:3000")
	for _, tc := range []struct {
		h      Host
		remote string
		want   bool
	}{
		{any, "github.com", true},
		{any, "GITHUB.com", true},
		{any, "github.com:443", true},
		{any, "github.com.evil.example", false},
		{any, "evil.example", false},
		{any, "evilgithub.com", false},
		{any, "github.com@evil.example", false},
		{any, "github.com/../evil", false},
		{any, "github.com.", false},
		{any, "github.com:", false},
		{any, "", false},
		{port, "172.17.0.1:3000", true},
		{port, "172.17.0.1", false},
		{port, "172.17.0.1:3001", false},
		{port, "172.17.0.1:03000", false},
	} {
		if got := tc.h.Matches(tc.remote); got != tc.want {
			t.Errorf("Host(%s).Matches(%q) = %v; want %v", tc.h, tc.remote, got, tc.want)
		}
	}
}

func TestWriteRefusesInjection(t *testing.T) {
	var b bytes.Buffer
	if err := (Credential{Username: "x", Password: "tok\nhost=evil"}).Write(&b); err == nil || b.Len() != 0 {
		t.Errorf("Write(a password with a newline) = %v, wrote %q; want an error and nothing written", err, b.String())
	}
	b.Reset()
	if err := (Credential{Username: "x-access-token", Password: "tok"}).Write(&b); err != nil || b.String() != "username=x-access-token\npassword=tok\n\n" {
		t.Errorf("Write = %q, %v", b.String(), err)
	}
	b.Reset()
	if err := (Request{Protocol: "https", Host: "h\nhost=evil"}).Write(&b); err == nil {
		t.Errorf("Request.Write(a host with a newline) = nil; want an error")
	}
}
