// Package gitcred speaks git's credential-helper protocol (gitcredentials(7),
// git-credential(1)) and matches the hosts a git identity may authenticate
// to.
//
// A request is a list of attribute lines, "key=value\n", ended by a blank
// line or the end of the input. The key is everything before the first
// "="; the value everything after it, and may hold "=". Keys ending in "[]"
// (capability[], wwwauth[]) may repeat; any other key may appear once.
// Read is strict where git is lenient, because a helper's input may come
// from a hostile process: a line without "=", a NUL, a carriage return, a
// line longer than MaxLine, more than MaxAttrs attributes or more than
// MaxRequest bytes fail the request instead of being guessed at.
package gitcred

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
)

// Limits on a request.
const (
	MaxLine    = 8 << 10  // bytes in one attribute line
	MaxRequest = 64 << 10 // bytes in a whole request
	MaxAttrs   = 64       // attribute lines in a request
)

// ErrTooLarge is returned for a request beyond the limits.
var ErrTooLarge = errors.New("credential request too large")

// Request is what git asks a helper: the attributes that name the remote.
// Other attributes are read, checked and dropped.
type Request struct {
	Protocol string // "https", "http", "ssh", ...
	Host     string // host name, with ":port" when the URL has one
	Path     string // only with credential.useHttpPath
	Username string // when the URL names a user
}

// Read reads one request from r, up to its blank line or EOF.
func Read(r io.Reader) (Request, error) {
	var req Request
	br := bufio.NewReaderSize(io.LimitReader(r, MaxRequest+1), 4096)
	total, attrs := 0, 0
	seen := map[string]bool{}
	for {
		line, err := readLine(br)
		if total += len(line); err == nil {
			total++ // the newline
		}
		if total > MaxRequest {
			return Request{}, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, MaxRequest)
		}
		if err == io.EOF && line == "" {
			return req, nil
		}
		if err != nil && err != io.EOF {
			return Request{}, err
		}
		if line == "" {
			return req, nil
		}
		if attrs++; attrs > MaxAttrs {
			return Request{}, fmt.Errorf("%w: more than %d attributes", ErrTooLarge, MaxAttrs)
		}
		key, value, ok := strings.Cut(line, "=")
		switch {
		case !ok:
			return Request{}, fmt.Errorf("credential line %d %q: want key=value", attrs, clip(line))
		case key == "":
			return Request{}, fmt.Errorf("credential line %d: empty key", attrs)
		case strings.ContainsAny(line, "\x00\r"):
			return Request{}, fmt.Errorf("credential line %d (%s): NUL or carriage return in the line", attrs, clip(key))
		}
		if !strings.HasSuffix(key, "[]") {
			if seen[key] {
				return Request{}, fmt.Errorf("credential attribute %q given twice", clip(key))
			}
			seen[key] = true
		}
		switch key {
		case "protocol":
			req.Protocol = value
		case "host":
			req.Host = value
		case "path":
			req.Path = value
		case "username":
			req.Username = value
		}
		if err == io.EOF {
			return req, nil
		}
	}
}

// readLine reads one line without its "\n"; a line longer than MaxLine is
// an error.
func readLine(br *bufio.Reader) (string, error) {
	var b []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		b = append(b, chunk...)
		if len(b) > MaxLine {
			return "", fmt.Errorf("%w: a line longer than %d bytes", ErrTooLarge, MaxLine)
		}
		if err != nil {
			return string(b), err
		}
		if !isPrefix {
			return string(b), nil
		}
	}
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// Credential is a helper's answer to get.
type Credential struct {
	Username, Password string
}

// Write writes c as attribute lines and the ending blank line. A value
// holding a newline or NUL (it would inject attributes) is refused.
func (c Credential) Write(w io.Writer) error {
	for _, v := range []string{c.Username, c.Password} {
		if strings.ContainsAny(v, "\n\r\x00") {
			return errors.New("credential value holds a newline or NUL")
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "username=%s\npassword=%s\n\n", c.Username, c.Password)
	_, err := w.Write(b.Bytes())
	return err
}

// Write writes the request's non-empty attributes and the blank line.
func (r Request) Write(w io.Writer) error {
	var b bytes.Buffer
	for _, kv := range [][2]string{{"protocol", r.Protocol}, {"host", r.Host}, {"path", r.Path}, {"username", r.Username}} {
		if kv[1] == "" {
			continue
		}
		if strings.ContainsAny(kv[1], "\n\r\x00") {
			return fmt.Errorf("credential attribute %s holds a newline or NUL", kv[0])
		}
		fmt.Fprintf(&b, "%s=%s\n", kv[0], kv[1])
	}
	b.WriteString("\n")
	_, err := w.Write(b.Bytes())
	return err
}

// Host is an allowed host: a DNS name or IP address, and a port or ""
// for any port.
type Host struct {
	Name string // lower case; an IPv6 address without brackets
	Port string
}

func (h Host) String() string {
	name := h.Name
	if strings.Contains(name, ":") {
		name = "[" + name + "]"
	}
	if h.Port == "" {
		return name
	}
	return name + ":" + h.Port
}

// ParseHost parses an allowed-host entry of the config: "github.com",
// "git.example.com:8443", "192.0.2.7", "[2001:db8::1]:443". It refuses a
// scheme, a user, a path, wildcards and anything that is not a host name.
func ParseHost(s string) (Host, error) {
	const want = "want a host name or IP address, optionally with :port (such as github.com or git.example.com:8443), without scheme, user or path"
	if s == "" {
		return Host{}, errors.New("empty host: " + want)
	}
	if strings.ContainsAny(s, "/@?#") {
		return Host{}, errors.New("a URL or user@host: " + want)
	}
	name, port, err := splitHostPort(s)
	if err != nil {
		return Host{}, fmt.Errorf("%s: %s", err, want)
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || port[0] == '0' {
			return Host{}, fmt.Errorf("port %q: want 1-65535 (%s)", port, want)
		}
	}
	return Host{Name: name, Port: port}, nil
}

// splitHostPort splits "name[:port]" and checks the name: a valid DNS name
// (letters, digits, '-' and dots, 253 bytes at most) or an IP address.
func splitHostPort(s string) (name, port string, err error) {
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.Index(s, "]")
		if end < 0 {
			return "", "", errors.New("unclosed '['")
		}
		name, rest := s[1:end], s[end+1:]
		if ip := net.ParseIP(name); ip == nil || ip.To4() != nil {
			return "", "", fmt.Errorf("%q is not an IPv6 address", name)
		}
		if rest != "" {
			p, ok := strings.CutPrefix(rest, ":")
			if !ok || p == "" {
				return "", "", fmt.Errorf("%q after the address", rest)
			}
			port = p
		}
		return strings.ToLower(net.ParseIP(name).String()), port, nil
	case strings.Count(s, ":") > 1:
		return "", "", errors.New("an IPv6 address must be in brackets")
	}
	name, port, _ = strings.Cut(s, ":")
	if strings.Contains(s, ":") && port == "" {
		return "", "", errors.New("empty port")
	}
	if !validName(name) {
		return "", "", fmt.Errorf("%q is not a host name", name)
	}
	return strings.ToLower(name), port, nil
}

func validName(s string) bool {
	if s == "" || len(s) > 253 || s[len(s)-1] == '.' {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// Matches says whether the remote host git names (a request's host
// attribute, "name" or "name:port") is h: the same name, ignoring case,
// and the same port when h has one. A remote that is not a valid host
// never matches.
func (h Host) Matches(remote string) bool {
	name, port, err := splitHostPort(remote)
	if err != nil {
		return false
	}
	if port != "" {
		if _, err := ParseHost(remote); err != nil {
			return false
		}
	}
	return name == h.Name && (h.Port == "" || h.Port == port)
}

// Allowed returns the first of hosts that remote matches.
func Allowed(hosts []Host, remote string) (Host, bool) {
	for _, h := range hosts {
		if h.Matches(remote) {
			return h, true
		}
	}
	return Host{}, false
}
