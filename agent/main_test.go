package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRefusesToStartWithoutIdentity(t *testing.T) {
	env := map[string]string{"CHOIR_AGENT_ID": "a1", "CHOIR_SESSION_ID": "s1"}
	var stderr bytes.Buffer
	code := realMain([]string{"--socket", "/nonexistent.sock"}, func(k string) string { return env[k] }, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "CHOIR_LEASE_TOKEN") {
		t.Errorf("choir-agent without a lease token = %d %q; want 1 naming CHOIR_LEASE_TOKEN", code, stderr.String())
	}
	env["CHOIR_LEASE_TOKEN"] = "tok"
	env["CHOIR_HEARTBEAT_MS"] = "soon"
	stderr.Reset()
	code = realMain(nil, func(k string) string { return env[k] }, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "CHOIR_HEARTBEAT_MS") {
		t.Errorf("choir-agent with a bad heartbeat = %d %q", code, stderr.String())
	}
	delete(env, "CHOIR_HEARTBEAT_MS")
	stderr.Reset()
	code = realMain([]string{"--version-file", "/nonexistent/version.json"}, func(k string) string { return env[k] }, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "version.json") {
		t.Errorf("choir-agent without version.json = %d %q", code, stderr.String())
	}
	if code := realMain([]string{"--bogus"}, func(string) string { return "" }, &stderr); code != 2 {
		t.Errorf("unknown flag = %d; want 2", code)
	}
}

func TestLeaseTokenFromAFile(t *testing.T) {
	env := map[string]string{"CHOIR_AGENT_ID": "a1", "CHOIR_SESSION_ID": "s1"}
	getenv := func(k string) string { return env[k] }
	dir := t.TempDir()
	tok, empty := filepath.Join(dir, "token"), filepath.Join(dir, "empty")
	os.WriteFile(tok, []byte("tok\n"), 0o400)
	os.WriteFile(empty, []byte("\n"), 0o400)
	for _, tc := range []struct {
		name string
		args []string
		env  string // CHOIR_LEASE_TOKEN
		want string // in stderr
	}{
		{"missing file", []string{"--lease-token-file", filepath.Join(dir, "nope")}, "", "--lease-token-file"},
		{"empty file", []string{"--lease-token-file", empty}, "", "is empty"},
		{"both", []string{"--lease-token-file", tok}, "tok", "both CHOIR_LEASE_TOKEN and --lease-token-file"},
		// The token is read: the next step (version.json) fails.
		{"read", []string{"--lease-token-file", tok, "--version-file", filepath.Join(dir, "version.json")}, "", "version.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env["CHOIR_LEASE_TOKEN"] = tc.env
			var stderr bytes.Buffer
			if code := realMain(tc.args, getenv, &stderr); code != 1 || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("choir-agent %v = %d %q; want 1 containing %q", tc.args, code, stderr.String(), tc.want)
			}
		})
	}
}

// The HTTP transport's TLS files: a certificate needs its key, and what
// cannot be read or holds no certificate is refused naming the flag.
func TestTLSConfig(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	os.WriteFile(junk, []byte("not PEM"), 0o400)
	for _, tc := range []struct {
		name string
		o    options
		want string
	}{
		{"a certificate without its key", options{tlsCert: junk}, "--tls-cert and --tls-key go together"},
		{"a CA that is not there", options{tlsCA: filepath.Join(dir, "nope.pem")}, "--tls-ca"},
		{"a CA that is not PEM", options{tlsCA: junk}, "holds no PEM certificate"},
		{"a pair that is not one", options{tlsCert: junk, tlsKey: junk}, "client certificate"},
	} {
		if _, _, err := tlsConfig(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: tlsConfig = %v; want an error containing %q", tc.name, err, tc.want)
		}
	}
	if conf, cc, err := tlsConfig(options{}); conf != nil || cc != nil || err != nil {
		t.Errorf("no TLS flags: tlsConfig = %v, %v, %v; want nothing (the system's roots)", conf, cc, err)
	}
}
