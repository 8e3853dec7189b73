// Package mcpdecl reads the declarations of MCP servers an agent may use
// (issue 24): mcp/<server>.json in the global or the per-agent repo, baked
// into the agent image under /choir/mcp. choird's build checks them before
// the engine is involved, choir-agent at load, `choirctl mcp check` on
// demand, all with Parse, so the three agree. A declaration is a capability
// like a tool manifest: it changes only through a repo commit or an
// approved proposal.
//
//	{"transport": "stdio", "command": "/opt/srv/bin/server", "args": ["stdio"],
//	 "env": {"API_KEY": {"secret": "acme-key"}, "MODE": "ro"}}
//	{"transport": "http", "url": "https://mcp.example.com/mcp",
//	 "headers": {"Authorization": {"secret": "acme-key", "format": "Bearer %s"}}}
//
// plus, for either, "tools": {"allow": [...], "deny": [...]} (MCP tool
// names), "timeout_ms" (one call; default DefaultTimeoutMS) and
// "overrides": {"<mcp tool>": {"locks": [{"resource": "...", "mode": "S"}],
// "side_effect": "read", "idempotent": true}}. Without an override a tool
// holds one exclusive lock per server (ext:mcp.<server>), is side-effecting
// (external) and not idempotent. A value of env or headers is a literal
// string or {"secret": "<secrets.json name>", "format": "...%s..."}: the
// secret's value, granted by choird for this image's declarations only,
// placed where the one %s is.
//
// "sampling": {"model": "<config model name>", "max_tokens": N} lets the
// server ask choir's model for completions (sampling/createMessage); each
// is one model call, capped at N tokens of answer and charged like any
// other. "model" empty or absent is the agent's summary model. Without
// "sampling" the server's sampling requests are declined.
package mcpdecl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// Transports.
const (
	Stdio = "stdio"
	HTTP  = "http"
)

// Defaults and limits.
const (
	DefaultTimeoutMS = 60_000
	MaxTimeoutMS     = 3_600_000
	MaxBytes         = 256 << 10
	// MaxServerLen keeps mcp.<server>.<tool> within a model API's 64
	// characters with room for the tool.
	MaxServerLen = 24
	// MaxSamplingTokens bounds sampling.max_tokens.
	MaxSamplingTokens = 100_000
)

// Decl is one server's declaration.
type Decl struct {
	Name      string // the file's base name without .json
	File      string // where it was read from, for messages
	Transport string
	Command   string
	Args      []string
	Env       map[string]Value
	URL       string
	Headers   map[string]Value
	Allow     []string // nil: every tool
	Deny      []string
	TimeoutMS int64
	Overrides map[string]Override
	// Sampling is nil when the server's sampling requests are declined.
	Sampling *Sampling
}

// Sampling lets a server ask choir's model for completions.
type Sampling struct {
	// Model is a model name of the config; "" is the agent's summary
	// model.
	Model string `json:"model,omitempty"`
	// MaxTokens caps one completion's answer (a request asking for more
	// is refused).
	MaxTokens int `json:"max_tokens"`
}

// Value is a literal or a secret, formatted.
type Value struct {
	Literal string
	Secret  string // secrets.json name; "" for a literal
	Format  string // "%s" when absent
}

// Resolve returns the value, asking secret for a secret's.
func (v Value) Resolve(secret func(name string) (string, bool)) (string, error) {
	if v.Secret == "" {
		return v.Literal, nil
	}
	s, ok := secret(v.Secret)
	if !ok {
		return "", fmt.Errorf("the secret %q has not been granted (check that secrets.json holds it and run choirctl secret apply)", v.Secret)
	}
	f := v.Format
	if f == "" {
		f = "%s"
	}
	return strings.Replace(f, "%s", s, 1), nil
}

// Override changes a tool's runtime defaults.
type Override struct {
	Locks      []Lock `json:"locks,omitempty"`
	SideEffect string `json:"side_effect,omitempty"`
	Idempotent *bool  `json:"idempotent,omitempty"`
}

// Lock is one lock, in the syntax of tool manifests.
type Lock struct {
	Resource string `json:"resource"`
	Mode     string `json:"mode"`
}

// DefaultLock is the lock a tool of server holds without an override.
func DefaultLock(server string) Lock { return Lock{Resource: "ext:mcp." + server, Mode: "X"} }

// Secrets lists the secrets.json names the declaration uses, sorted.
func (d *Decl) Secrets() []string {
	var out []string
	for _, m := range []map[string]Value{d.Env, d.Headers} {
		for _, v := range m {
			if v.Secret != "" && !contains(out, v.Secret) {
				out = append(out, v.Secret)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Offers reports whether the allow and deny lists let the MCP tool through.
func (d *Decl) Offers(tool string) bool {
	if contains(d.Deny, tool) {
		return false
	}
	return d.Allow == nil || contains(d.Allow, tool)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Fault is one thing wrong with a declaration.
type Fault struct {
	File    string
	Path    string // JSON pointer, "" for the whole file
	Message string
}

func (f Fault) String() string {
	if f.Path == "" {
		return f.File + ": " + f.Message
	}
	return f.File + ": " + f.Path + ": " + f.Message
}

// Error lists every fault of a declaration, one a line.
type Error struct{ Faults []Fault }

func (e *Error) Error() string {
	lines := make([]string, len(e.Faults))
	for i, f := range e.Faults {
		lines[i] = f.String()
	}
	return strings.Join(lines, "\n")
}

var (
	serverRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	envRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	secretRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)
)

// ServerProblem says what is wrong with a server name, or "".
func ServerProblem(name string) string {
	switch {
	case !serverRE.MatchString(name):
		return fmt.Sprintf("server name %q (the file's name without .json) must be lowercase letters, digits and _ starting with a letter", name)
	case len(name) > MaxServerLen:
		return fmt.Sprintf("server name %q is longer than %d characters", name, MaxServerLen)
	}
	return ""
}

// Parse reads one declaration; file is its path (its base name is the
// server's name). Every fault is reported, each with its JSON pointer.
func Parse(file string, data []byte) (*Decl, error) {
	base := file[strings.LastIndex(file, "/")+1:]
	d := &Decl{Name: strings.TrimSuffix(base, ".json"), File: file}
	var faults []Fault
	add := func(p, format string, args ...any) {
		faults = append(faults, Fault{File: file, Path: p, Message: fmt.Sprintf(format, args...)})
	}
	fail := func() (*Decl, error) { return nil, &Error{Faults: faults} }
	if !strings.HasSuffix(base, ".json") {
		add("", "a declaration is mcp/<server>.json")
	}
	if msg := ServerProblem(d.Name); msg != "" {
		add("", "%s; rename the file", msg)
	}
	if len(data) > MaxBytes {
		add("", "%d bytes; a declaration is at most %d", len(data), MaxBytes)
		return fail()
	}
	members, err := object(data)
	if err != nil {
		add("", "%v", err)
		return fail()
	}
	str := func(key string) string {
		raw, ok := members[key]
		if !ok {
			return ""
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			add("/"+key, "want a string")
		}
		return s
	}
	d.Transport = str("transport")
	switch d.Transport {
	case Stdio, HTTP:
	case "":
		if _, ok := members["transport"]; !ok {
			add("/transport", "missing: want \"stdio\" or \"http\"")
		}
	default:
		add("/transport", "%q: want \"stdio\" or \"http\"", d.Transport)
	}
	d.Command = str("command")
	d.URL = str("url")
	allowed := map[string]bool{"transport": true, "tools": true, "timeout_ms": true, "overrides": true, "sampling": true}
	switch d.Transport {
	case Stdio:
		for _, k := range []string{"command", "args", "env"} {
			allowed[k] = true
		}
		switch {
		case d.Command == "":
			add("/command", "missing: the server's executable, an absolute path inside the image")
		case !strings.HasPrefix(d.Command, "/"):
			add("/command", "%q is not absolute: give the executable's path inside the image (the container has no shell to search PATH for it)", d.Command)
		case strings.ContainsRune(d.Command, 0):
			add("/command", "contains NUL")
		}
		if raw, ok := members["args"]; ok {
			if json.Unmarshal(raw, &d.Args) != nil {
				add("/args", "want an array of strings")
			}
			for i, a := range d.Args {
				if strings.ContainsRune(a, 0) {
					add(fmt.Sprintf("/args/%d", i), "contains NUL")
				}
			}
		}
		d.Env = values(members, "env", envRE, "an environment variable name", add)
	case HTTP:
		allowed["url"], allowed["headers"] = true, true
		u, err := url.Parse(d.URL)
		switch {
		case d.URL == "":
			add("/url", "missing: the server's Streamable HTTP endpoint, e.g. https://host/mcp")
		case err != nil:
			add("/url", "%q: %v", d.URL, err)
		case u.Scheme != "https" && u.Scheme != "http":
			add("/url", "%q: want an http or https URL", d.URL)
		case u.Host == "":
			add("/url", "%q has no host", d.URL)
		case u.User != nil:
			add("/url", "carries credentials: put them in headers with a secret")
		}
		d.Headers = values(members, "headers", headerRE, "an HTTP header name", add)
		for name := range d.Headers {
			switch strings.ToLower(name) {
			case "content-type", "accept", "mcp-session-id", "mcp-protocol-version", "last-event-id", "host", "content-length":
				add("/headers/"+name, "%s is set by the MCP client", name)
			}
		}
	}
	for k := range members {
		if !allowed[k] {
			msg := "unknown member"
			switch {
			case d.Transport == HTTP && (k == "command" || k == "args" || k == "env"):
				msg = "only for stdio servers"
			case d.Transport == Stdio && (k == "url" || k == "headers"):
				msg = "only for http servers"
			}
			add("/"+k, "%s: want transport, command, args, env (stdio), url, headers (http), tools, timeout_ms, overrides, sampling", msg)
		}
	}
	d.TimeoutMS = DefaultTimeoutMS
	if raw, ok := members["timeout_ms"]; ok {
		var n int64
		if json.Unmarshal(raw, &n) != nil || n < 1 || n > MaxTimeoutMS {
			add("/timeout_ms", "want a whole number of milliseconds from 1 to %d", MaxTimeoutMS)
		} else {
			d.TimeoutMS = n
		}
	}
	if raw, ok := members["sampling"]; ok {
		d.Sampling = sampling(raw, add)
	}
	if raw, ok := members["tools"]; ok {
		tm, err := object(raw)
		if err != nil {
			add("/tools", "want an object with allow and/or deny")
		}
		for k, v := range tm {
			var list []string
			switch {
			case k != "allow" && k != "deny":
				add("/tools/"+k, "unknown member: want allow or deny")
			case json.Unmarshal(v, &list) != nil:
				add("/tools/"+k, "want an array of MCP tool names")
			case k == "allow":
				d.Allow = append([]string{}, list...)
			default:
				d.Deny = list
			}
		}
	}
	if raw, ok := members["overrides"]; ok {
		om, err := object(raw)
		if err != nil {
			add("/overrides", "want an object of MCP tool name to {locks, side_effect, idempotent}")
		}
		d.Overrides = map[string]Override{}
		for tool, v := range om {
			p := "/overrides/" + escape(tool)
			dec := json.NewDecoder(bytes.NewReader(v))
			dec.DisallowUnknownFields()
			var o Override
			if err := dec.Decode(&o); err != nil {
				add(p, "want {\"locks\": [{\"resource\": ..., \"mode\": \"S\"|\"X\"}], \"side_effect\": \"read\"|\"write\"|\"external\", \"idempotent\": bool}: %v", err)
				continue
			}
			switch o.SideEffect {
			case "", "read", "write", "external":
			default:
				add(p+"/side_effect", "%q: want read, write or external", o.SideEffect)
			}
			for i, l := range o.Locks {
				if msg := LockProblem(l); msg != "" {
					add(fmt.Sprintf("%s/locks/%d", p, i), "%s", msg)
				}
			}
			if d.Allow != nil && !contains(d.Allow, tool) || contains(d.Deny, tool) {
				add(p, "tool %q is not offered (tools.allow/deny): the override would do nothing", tool)
			}
			d.Overrides[tool] = o
		}
	}
	if len(faults) > 0 {
		sort.SliceStable(faults, func(i, j int) bool { return faults[i].Path < faults[j].Path })
		return fail()
	}
	return d, nil
}

var modelNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`)

// sampling decodes the sampling member.
func sampling(raw json.RawMessage, add func(p, format string, args ...any)) *Sampling {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var s Sampling
	if err := dec.Decode(&s); err != nil {
		add("/sampling", "want {\"model\": \"<config model name, or empty for the summary model>\", \"max_tokens\": N}: %v", err)
		return nil
	}
	ok := true
	if s.Model != "" && !modelNameRE.MatchString(s.Model) {
		add("/sampling/model", "%q is not a model name of config.json's models", s.Model)
		ok = false
	}
	if s.MaxTokens < 1 || s.MaxTokens > MaxSamplingTokens {
		add("/sampling/max_tokens", "%d: want the most tokens one completion may answer, from 1 to %d", s.MaxTokens, MaxSamplingTokens)
		ok = false
	}
	if !ok {
		return nil
	}
	return &s
}

// LockProblem checks a lock's syntax as tool manifests do, or says "".
func LockProblem(l Lock) string {
	if l.Mode != "S" && l.Mode != "X" {
		return fmt.Sprintf("mode %q: want S or X", l.Mode)
	}
	switch l.Resource {
	case "workspace", "browser_tab", "choirtmp":
		return ""
	}
	ns, arg, ok := strings.Cut(l.Resource, ":")
	switch {
	case !ok:
	case ns == "file" && arg != "" && !strings.HasPrefix(arg, "/") && !strings.Contains("/"+arg+"/", "/../"):
		return ""
	case (ns == "mem" || ns == "repo" || ns == "net" || ns == "ext") && arg != "" &&
		!strings.ContainsFunc(arg, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return ""
	}
	return fmt.Sprintf("lock %q: want workspace, browser_tab, choirtmp, file:<relative path>, or mem:, repo:, net:, ext: followed by a name", l.Resource)
}

// object decodes one JSON object into its members, refusing duplicates and
// trailing data.
func object(data []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if tok != json.Delim('{') {
		return nil, errors.New("want a JSON object")
	}
	out := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("not JSON: %v", err)
		}
		k := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("member %q: %v", k, err)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("member %q appears twice", k)
		}
		out[k] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the object")
	}
	return out, nil
}

// values decodes env or headers.
func values(members map[string]json.RawMessage, key string, nameRE *regexp.Regexp, what string, add func(p, format string, args ...any)) map[string]Value {
	raw, ok := members[key]
	if !ok {
		return nil
	}
	m, err := object(raw)
	if err != nil {
		add("/"+key, "want an object of name to a string or {\"secret\": name}")
		return nil
	}
	out := make(map[string]Value, len(m))
	for name, v := range m {
		p := "/" + key + "/" + escape(name)
		if !nameRE.MatchString(name) {
			add(p, "%q is not %s", name, what)
		}
		var s string
		if json.Unmarshal(v, &s) == nil {
			if strings.ContainsAny(s, "\x00\r\n") {
				add(p, "contains NUL or a line break")
			}
			out[name] = Value{Literal: s}
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.DisallowUnknownFields()
		var sv struct {
			Secret string  `json:"secret"`
			Format *string `json:"format"`
		}
		if dec.Decode(&sv) != nil {
			add(p, "want a string or {\"secret\": \"<secrets.json name>\", \"format\": \"... %%s ...\"}")
			continue
		}
		if !secretRE.MatchString(sv.Secret) {
			add(p+"/secret", "%q is not a secrets.json name", sv.Secret)
		}
		val := Value{Secret: sv.Secret}
		if sv.Format != nil {
			val.Format = *sv.Format
			if strings.Count(val.Format, "%s") != 1 || strings.Count(val.Format, "%") != 1 {
				add(p+"/format", "%q: want exactly one %%s where the secret goes and no other %%", val.Format)
			}
			if strings.ContainsAny(val.Format, "\x00\r\n") {
				add(p+"/format", "contains NUL or a line break")
			}
		}
		out[name] = val
	}
	return out
}

// escape makes a member name a JSON pointer token (RFC 6901).
func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
