package main

import (
	"bytes"
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
