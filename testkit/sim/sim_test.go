package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"choir/internal/rpc"
)

func TestParseCreate(t *testing.T) {
	// What choird's lifecycle sends for an agent on the HTTP transport
	// (choird/lifecycle/profile.go), as raw JSON.
	body := `{"Image":"choir-agent-sim-1:sim-1",
		"Cmd":["--control-plane=http","--endpoint=https://127.9.9.9:9400","--tls-ca=/run/choir/ca.pem"],
		"Env":["CHOIR_AGENT_ID=sim-1","CHOIR_SESSION_ID=s-1","CHOIR_LEASE_TOKEN=tok","CHOIR_HEARTBEAT_MS=5000"],
		"Labels":{"choir.managed":"true"},
		"HostConfig":{"Mounts":[{"Type":"bind","Source":"/ws/1","Target":"/workspace"},
			{"Type":"bind","Source":"/home/socks/agent/sim-1","Target":"/run/choir","ReadOnly":true}]}}`
	got, _, err := parseCreate([]byte(body))
	want := agentSpec{AgentID: "sim-1", SessionID: "s-1", LeaseToken: "tok", HeartbeatMS: 5000,
		Endpoint: "https://127.9.9.9:9400", CAFile: "/home/socks/agent/sim-1/ca.pem"}
	if err != nil || got != want {
		t.Fatalf("parseCreate = %+v, %v; want %+v", got, err, want)
	}

	for name, body := range map[string]string{
		"socket transport": `{"Cmd":["--control-plane=uds","--socket=/run/choir/choird.sock"],"Env":["CHOIR_AGENT_ID=a","CHOIR_SESSION_ID=s","CHOIR_LEASE_TOKEN=t","CHOIR_HEARTBEAT_MS=5"]}`,
		"no token":         `{"Cmd":["--control-plane=http","--endpoint=https://h:1","--tls-ca=/run/choir/ca.pem"],"Env":["CHOIR_AGENT_ID=a","CHOIR_SESSION_ID=s","CHOIR_HEARTBEAT_MS=5"]}`,
		"CA under no mount": `{"Cmd":["--control-plane=http","--endpoint=https://h:1","--tls-ca=/etc/ca.pem"],"Env":["CHOIR_AGENT_ID=a","CHOIR_SESSION_ID=s","CHOIR_LEASE_TOKEN=t","CHOIR_HEARTBEAT_MS=5"],
			"HostConfig":{"Mounts":[{"Type":"bind","Source":"/x","Target":"/run/choir"}]}}`,
		"not JSON": `{`,
	} {
		t.Run(name, func(t *testing.T) {
			if s, _, err := parseCreate([]byte(body)); err == nil {
				t.Errorf("parseCreate(%s) = %+v, nil; want an error", name, s)
			}
		})
	}
}

func TestLabelFilters(t *testing.T) {
	tests := []struct {
		q    string
		want []string
	}{
		{``, nil},
		{`{"label":["choir.managed=true","choir.instance=ab"]}`, []string{"choir.managed=true", "choir.instance=ab"}},
		{`{"label":{"choir.managed=true":true,"x":false}}`, []string{"choir.managed=true"}},
		{`{"status":["exited"]}`, nil},
	}
	for _, tt := range tests {
		got, err := labelFilters(tt.q)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("labelFilters(%q) = %q, %v; want %q", tt.q, got, err, tt.want)
		}
	}
	if _, err := labelFilters(`{"label":7}`); err == nil {
		t.Error(`labelFilters({"label":7}) = nil error; want one`)
	}
	labels := map[string]string{"choir.managed": "true", "choir.instance": "ab"}
	for _, tt := range []struct {
		want []string
		ok   bool
	}{
		{nil, true},
		{[]string{"choir.managed=true", "choir.instance=ab"}, true},
		{[]string{"choir.instance"}, true},
		{[]string{"choir.instance=cd"}, false},
		{[]string{"choir.agent"}, false},
	} {
		if got := matchLabels(labels, tt.want); got != tt.ok {
			t.Errorf("matchLabels(%v, %q) = %v; want %v", labels, tt.want, got, tt.ok)
		}
	}
}

func TestEngineImageAndNotServed(t *testing.T) {
	e := newEngine("127.1.2.3", "sim-1")
	srv := httptest.NewServer(e)
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/v1.41/images/choir-agent-sim-7:latest/json"); code != 200 ||
		!strings.Contains(body, `"choir.agent":"sim-7"`) || !strings.Contains(body, `"choir.image_version":"sim-1"`) {
		t.Errorf("inspect choir-agent-sim-7:latest = %d %s; want 200 with the agent's labels", code, body)
	}
	if code, _ := get("/v1.41/images/debian:bookworm/json"); code != 404 {
		t.Errorf("inspect debian:bookworm = %d; want 404", code)
	}
	if code, body := get("/v1.41/networks/bridge"); code != 200 || !strings.Contains(body, `"Gateway":"127.1.2.3"`) {
		t.Errorf("networks/bridge = %d %s; want the gateway 127.1.2.3", code, body)
	}
	get("/v1.41/volumes")
	get("/v1.41/volumes")
	if got, want := e.notServedCalls(), []string{"GET /volumes ×2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("notServedCalls() = %q; want %q", got, want)
	}
}

func TestErrorClass(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&rpc.Error{Status: 429, Code: "rate_limited"}, "HTTP 429 rate_limited"},
		{fmt.Errorf("rpc HEARTBEAT: %w", &rpc.Error{Status: 401, Code: "unauthorized"}), "HTTP 401 unauthorized"},
		{fmt.Errorf("rpc INIT_HELLO: %w", io.EOF), "connection closed by choird (EOF)"},
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), "connection refused"},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), "connection reset"},
		{context.DeadlineExceeded, "timeout"},
		{errors.New("something else"), "other"},
	}
	for _, tt := range tests {
		if got := errorClass(tt.err); got != tt.want {
			t.Errorf("errorClass(%v) = %q; want %q", tt.err, got, tt.want)
		}
	}
}

func TestRecorder(t *testing.T) {
	r := newRecorder()
	r.observe(callIdle, time.Millisecond, nil)
	r.observe(callIdle, 0, io.EOF)
	r.observe(callDMSend, 0, io.EOF)
	r.observe(callHello, 2*time.Millisecond, nil)
	got := r.take()
	if n := len(got.lat[callIdle]); n != 1 {
		t.Errorf("idle heartbeats recorded = %d; want 1", n)
	}
	if n := got.errorCount(callIdle); n != 1 {
		t.Errorf("errorCount(idle) = %d; want 1", n)
	}
	if c, want := got.errorClasses(), []string{"connection closed by choird (EOF) ×2"}; !reflect.DeepEqual(c, want) {
		t.Errorf("errorClasses() = %q; want %q", c, want)
	}
	if again := r.take(); len(again.lat) != 0 || len(again.errs) != 0 {
		t.Errorf("a second take = %+v; want nothing", again)
	}
	w := tally{lat: map[string][]time.Duration{}, errs: map[string]map[string]int{}, sample: map[string]string{}}
	w.merge(got, callHello)
	if len(w.lat[callHello]) != 1 || len(w.lat[callIdle]) != 0 {
		t.Errorf("merge(hello) = %v; want the hello only", w.lat)
	}
}

func TestProcParsers(t *testing.T) {
	stat := []byte("1234 (choird (x) y) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0 100 1000 200 18446744073709551615\n")
	if got, err := cpuNanos(stat); err != nil || got != 3e9 {
		t.Errorf("cpuNanos = %d, %v; want 3e9 (300 ticks)", got, err)
	}
	if _, err := cpuNanos([]byte("1234 choird S 1")); err == nil {
		t.Error("cpuNanos without (comm) = nil error; want one")
	}
	status := []byte("Name:\tchoird\nVmRSS:\t   28000 kB\nThreads:\t9\n")
	if got, err := field(status, "VmRSS"); err != nil || got != 28000*1024 {
		t.Errorf("field(VmRSS) = %d, %v; want %d", got, err, 28000*1024)
	}
	if got, err := field(status, "Threads"); err != nil || got != 9 {
		t.Errorf("field(Threads) = %d, %v; want 9", got, err)
	}
	if _, err := field(status, "Pss"); err == nil {
		t.Error("field(Pss) of a status = nil error; want one")
	}
}

func TestParseNs(t *testing.T) {
	got, err := parseNs("10000, 1000,1_000,")
	if want := []int{1000, 10000}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("parseNs = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"", "0", "-5", "ten"} {
		if _, err := parseNs(bad); err == nil {
			t.Errorf("parseNs(%q) = nil error; want one", bad)
		}
	}
}
