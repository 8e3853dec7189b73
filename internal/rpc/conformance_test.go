package rpc

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeHandler answers every verb deterministically from its request and
// records the authenticated calls it served.
type fakeHandler struct {
	mu    sync.Mutex
	calls []Call
}

var _ ControlPlaneHandler = (*fakeHandler)(nil)

func (h *fakeHandler) record(ctx context.Context) string {
	c, _ := CallFrom(ctx)
	h.mu.Lock()
	h.calls = append(h.calls, c)
	h.mu.Unlock()
	return c.SessionID
}

func (h *fakeHandler) HandleInitHello(ctx context.Context, r InitHelloReq) (InitHelloResp, error) {
	h.record(ctx)
	return InitHelloResp{Status: InitFresh, ResourceBindings: ResourceBindings{Workspace: "ws-" + r.AgentID, LLM: "m", DM: "dm"}, ConfigVersion: 7}, nil
}
func (h *fakeHandler) HandleSecrets(ctx context.Context, r SecretReq) (SecretResp, error) {
	h.record(ctx)
	if len(r.Resources) == 1 && r.Resources[0] == "forbidden" {
		return SecretResp{}, Forbidden("secret %q is not bound to this session", r.Resources[0])
	}
	out := map[string]string{}
	for _, n := range r.Resources {
		out[n] = "value-of-" + n
	}
	return SecretResp{Secrets: out}, nil
}
func (h *fakeHandler) HandleHeartbeat(ctx context.Context, r HeartbeatReq) (HeartbeatResp, error) {
	h.record(ctx)
	return HeartbeatResp{AckRev: r.NewRev, ConfigVersionLatest: r.ConfigVersion + 1}, nil
}
func (h *fakeHandler) HandleApproval(ctx context.Context, r ApprovalReq) (ApprovalResp, error) {
	h.record(ctx)
	return ApprovalResp{ApprovalID: "ap-" + r.RequestType, Status: ApprovalPending}, nil
}
func (h *fakeHandler) HandleStatus(ctx context.Context, r StatusReq) (StatusResp, error) {
	h.record(ctx)
	return StatusResp{Ack: r.Lane != ""}, nil
}
func (h *fakeHandler) HandleTerminate(ctx context.Context, r TerminateReq) (TerminateResp, error) {
	h.record(ctx)
	return TerminateResp{Ack: true}, nil
}
func (h *fakeHandler) HandleFetchConfig(ctx context.Context, r ConfigReq) (ConfigResp, error) {
	h.record(ctx)
	return ConfigResp{ConfigVersion: r.CurrentConfigVersion + 1, Config: json.RawMessage(`{"models":{}}`)}, nil
}
func (h *fakeHandler) HandleFetchEvents(ctx context.Context, r FetchEventsReq) (FetchEventsResp, error) {
	h.record(ctx)
	return FetchEventsResp{Events: []Event{{Rev: r.AfterRev + 1, Type: "UserMsg", Hash: "h"}}}, nil
}
func (h *fakeHandler) HandleHostTool(ctx context.Context, r HostToolReq) (HostToolResp, error) {
	h.record(ctx)
	if r.ToolName == "boom" {
		return HostToolResp{}, errors.New("worker crashed")
	}
	return HostToolResp{CallID: r.CallID, Status: ToolSuccess, Output: r.Input}, nil
}

// transport is one way of reaching a Server.
type transport struct {
	name string
	dial func(t testing.TB, session, token string) *Client
	// base and hc reach the same endpoint with plain HTTP requests, for
	// tests that must write what no Client sends.
	base string
	hc   *http.Client
}

// testAgent is the agent every test session is opened for; the "uds"
// transport is its own socket (ListenAgent).
const testAgent = "a1"

// serve mounts srv on both transports, testAgent's socket and a shared
// HTTPS listener, and returns them.
func serve(t testing.TB, srv *Server) []transport {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "agent", testAgent, "choird.sock")
	agentL, err := srv.ListenAgent(sock, testAgent)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agentL.Close() })
	cert, pool := selfSigned(t)
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tlsL := tls.NewListener(tl, &tls.Config{Certificates: []tls.Certificate{cert}})
	go srv.Serve(tlsL)
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	endpoint := "https://" + tl.Addr().String()
	udsHC := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	tlsHC := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	t.Cleanup(udsHC.CloseIdleConnections)
	t.Cleanup(tlsHC.CloseIdleConnections)
	return []transport{
		{name: "uds", base: "http://choird", hc: udsHC, dial: func(t testing.TB, session, token string) *Client {
			c, err := Dial(Options{Transport: TransportUDS, Socket: sock, SessionID: session, LeaseToken: token})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			return c
		}},
		{name: "https", base: endpoint, hc: tlsHC, dial: func(t testing.TB, session, token string) *Client {
			c, err := Dial(Options{Transport: TransportHTTP, Endpoint: endpoint, TLS: &tls.Config{RootCAs: pool}, SessionID: session, LeaseToken: token})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			return c
		}},
	}
}

// selfSigned makes a certificate for 127.0.0.1 and a pool trusting it.
func selfSigned(t testing.TB) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "choird test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// outcome is what a caller observes from one call: the response or the
// error's status and code. Transports must produce identical outcomes.
func outcome(resp any, err error) string {
	if err != nil {
		var rerr *Error
		if errors.As(err, &rerr) {
			return fmt.Sprintf("error %d %s %q retry=%v", rerr.Status, rerr.Code, rerr.Message, rerr.RetryAfter)
		}
		return "transport error: " + err.Error()
	}
	b, _ := json.Marshal(resp)
	return string(b)
}

func TestConformance(t *testing.T) {
	limits := DefaultLimits()
	limits.MaxPayload = 64 << 10
	h := &fakeHandler{}
	srv := NewServer(h, limits, quietLogger())
	srv.Open("s1", testAgent, "token-1")
	srv.Open("s2", testAgent, "token-2")
	srv.Open("ended", testAgent, "token-ended")
	srv.Close("ended")

	results := map[string]map[string]string{}
	for _, tr := range serve(t, srv) {
		t.Run(tr.name, func(t *testing.T) {
			ctx := context.Background()
			c := tr.dial(t, "s1", "token-1")
			got := map[string]string{}
			record := func(name string, resp any, err error) { got[name] = outcome(resp, err) }

			r1, err := c.InitHello(ctx, InitHelloReq{AgentID: "a1", SessionID: "s1", ImageVersion: "abc"})
			record("INIT_HELLO", r1, err)
			r2, err := c.GetSecrets(ctx, SecretReq{Resources: []string{"k1", "k2"}})
			record("GET_SECRETS", r2, err)
			r2b, err := c.GetSecrets(ctx, SecretReq{Resources: []string{"forbidden"}})
			record("GET_SECRETS forbidden", r2b, err)
			r3, err := c.Heartbeat(ctx, HeartbeatReq{BaseRev: 1, NewRev: 3, ConfigVersion: 4, Patches: []Event{{Rev: 2, Type: "UserMsg", Hash: "h2"}, {Rev: 3, Type: "ModelOutput", Hash: "h3"}}})
			record("HEARTBEAT", r3, err)
			r4, err := c.RequestApproval(ctx, ApprovalReq{RequestType: "tool", Payload: json.RawMessage(`{"name":"x"}`)})
			record("REQUEST_APPROVAL", r4, err)
			r5, err := c.ReportStatus(ctx, StatusReq{Lane: "edge", State: "EDGE_IDLE"})
			record("REPORT_STATUS", r5, err)
			r6, err := c.FetchDynamicConfig(ctx, ConfigReq{CurrentConfigVersion: 4})
			record("FETCH_DYNAMIC_CONFIG", r6, err)
			r7, err := c.ExecuteHostTool(ctx, HostToolReq{ToolName: "choir.web.browse", CallID: "c1", Input: json.RawMessage(`{"url":"x"}`)})
			record("EXECUTE_HOST_TOOL", r7, err)
			r7b, err := c.ExecuteHostTool(ctx, HostToolReq{ToolName: "boom", CallID: "c2"})
			record("EXECUTE_HOST_TOOL failing", r7b, err)
			r8, err := c.Terminate(ctx, TerminateReq{Reason: "done"})
			record("TERMINATE_SELF", r8, err)

			for name, cl := range map[string]*Client{
				"wrong token":     tr.dial(t, "s1", "token-2"),
				"unknown session": tr.dial(t, "nope", "token-1"),
				"revoked session": tr.dial(t, "ended", "token-ended"),
			} {
				r, err := cl.Heartbeat(ctx, HeartbeatReq{})
				record("auth: "+name, r, err)
			}
			_, err = c.Call(ctx, "SELF_DESTRUCT", []byte(`{}`))
			record("unknown verb", nil, err)
			_, err = c.Call(ctx, VerbHeartbeat, []byte(`{"base_rev": `))
			record("malformed json", nil, err)
			_, err = c.Call(ctx, VerbHeartbeat, []byte(`{"base_rev": 1, "launch": true}`))
			record("unknown field", nil, err)
			_, err = c.Call(ctx, VerbHeartbeat, []byte(`{} {}`))
			record("trailing data", nil, err)
			big := HeartbeatReq{Patches: []Event{{Payload: json.RawMessage(`"` + strings.Repeat("x", 70<<10) + `"`)}}}
			r9, err := c.Heartbeat(ctx, big)
			record("payload cap", r9, err)
			results[tr.name] = got

			// Every served call carried the authenticated session and a request id.
			h.mu.Lock()
			for _, call := range h.calls {
				if call.SessionID != "s1" || call.RequestID == "" {
					t.Errorf("handler saw call %+v; want session s1 with a request id", call)
				}
			}
			h.mu.Unlock()
		})
	}
	uds, https := results["uds"], results["https"]
	if !reflect.DeepEqual(uds, https) {
		for k := range uds {
			if uds[k] != https[k] {
				t.Errorf("%s: uds %s; https %s", k, uds[k], https[k])
			}
		}
	}
	want := map[string]string{
		"INIT_HELLO":                `"status":"fresh"`,
		"GET_SECRETS":               `"k2":"value-of-k2"`,
		"GET_SECRETS forbidden":     `error 403 forbidden "secret \"forbidden\" is not bound to this session"`,
		"HEARTBEAT":                 `{"ack_rev":3,"config_version_latest":5}`,
		"EXECUTE_HOST_TOOL failing": `error 500 internal "EXECUTE_HOST_TOOL failed: worker crashed"`,
		"auth: wrong token":         `error 401 unauthorized "" retry=0s`,
		"auth: unknown session":     `error 401 unauthorized "" retry=0s`,
		"auth: revoked session":     `error 401 unauthorized "" retry=0s`,
		"unknown verb":              `error 404 unknown_verb`,
		"malformed json":            `error 400 bad_request "malformed JSON payload`,
		"unknown field":             `unknown field \"launch\"`,
		"trailing data":             `data after the JSON value`,
		"payload cap":               `error 413 payload_too_large`,
	}
	for k, w := range want {
		if !strings.Contains(uds[k], w) {
			t.Errorf("%s = %s; want it to contain %s", k, uds[k], w)
		}
	}
}

func TestRateLimitPerSession(t *testing.T) {
	limits := DefaultLimits()
	limits.Rate, limits.Burst = 1, 3
	srv := NewServer(&fakeHandler{}, limits, quietLogger())
	frozen := time.Unix(1700000000, 0)
	srv.now = func() time.Time { return frozen } // no refill during the test
	srv.Open("s1", testAgent, "t1")
	srv.Open("s2", testAgent, "t2")
	outcomes := map[string][]string{}
	for _, tr := range serve(t, srv) {
		srv.Open("s1", testAgent, "t1") // a fresh bucket per transport
		srv.Open("s2", testAgent, "t2")
		c1, c2 := tr.dial(t, "s1", "t1"), tr.dial(t, "s2", "t2")
		var got []string
		for range 4 {
			r, err := c1.ReportStatus(context.Background(), StatusReq{Lane: "edge"})
			got = append(got, outcome(r, err))
		}
		r, err := c2.ReportStatus(context.Background(), StatusReq{Lane: "edge"})
		got = append(got, outcome(r, err))
		outcomes[tr.name] = got
	}
	if !reflect.DeepEqual(outcomes["uds"], outcomes["https"]) {
		t.Errorf("uds %v; https %v", outcomes["uds"], outcomes["https"])
	}
	got := outcomes["uds"]
	for i := range 3 {
		if got[i] != `{"ack":true}` {
			t.Errorf("call %d = %s; want ack within the burst", i+1, got[i])
		}
	}
	if !strings.Contains(got[3], "error 429 rate_limited") || !strings.Contains(got[3], "retry=1s") {
		t.Errorf("4th call = %s; want 429 with Retry-After 1", got[3])
	}
	if got[4] != `{"ack":true}` {
		t.Errorf("other session = %s; want unaffected", got[4])
	}
}

func readEvents(t *testing.T, s *EventStream, n int) []PushEvent {
	t.Helper()
	var out []PushEvent
	for len(out) < n {
		ev, err := s.Next()
		if err != nil {
			t.Fatalf("Next after %d events: %v", len(out), err)
		}
		out = append(out, ev)
	}
	return out
}

func TestEventsResume(t *testing.T) {
	limits := DefaultLimits()
	limits.EventBacklog = 4
	srv := NewServer(&fakeHandler{}, limits, quietLogger())
	for _, tr := range serve(t, srv) {
		t.Run(tr.name, func(t *testing.T) {
			srv.Open("s1", testAgent, "t1")
			c := tr.dial(t, "s1", "t1")
			ctx := context.Background()
			for i := range 3 {
				srv.Publish("s1", EventInject, map[string]int{"n": i})
			}
			s, err := c.Events(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			evs := readEvents(t, s, 3)
			if evs[0].ID != "1" || evs[2].ID != "3" || evs[1].Type != EventInject || string(evs[1].Data) != `{"n":1}` {
				t.Errorf("first read = %+v; want ids 1..3 of type inject", evs)
			}
			// Live delivery on the open stream.
			srv.Publish("s1", EventCancel, map[string]string{"job_name": "refactor"})
			if ev := readEvents(t, s, 1)[0]; ev.ID != "4" || ev.Type != EventCancel {
				t.Errorf("live event = %+v; want id 4 cancel", ev)
			}
			s.Close()
			// Missed while disconnected: resumed after id 2.
			srv.Publish("s1", EventShutdown, map[string]string{"reason": "stop"})
			s, err = c.Events(ctx, "2")
			if err != nil {
				t.Fatal(err)
			}
			evs = readEvents(t, s, 3)
			if ids := []string{evs[0].ID, evs[1].ID, evs[2].ID}; !reflect.DeepEqual(ids, []string{"3", "4", "5"}) {
				t.Errorf("resumed ids = %v; want [3 4 5]", ids)
			}
			s.Close()
			// Too far behind the backlog: a gap event comes first.
			s, err = c.Events(ctx, "0")
			if err != nil {
				t.Fatal(err)
			}
			if ev := readEvents(t, s, 1)[0]; ev.Type != EventGap {
				t.Errorf("first event after falling behind = %+v; want gap", ev)
			}
			// Closing the session ends the stream and refuses reconnection.
			srv.Close("s1")
			for {
				if _, err := s.Next(); err != nil {
					break
				}
			}
			s.Close()
			if _, err := c.Events(ctx, "5"); err == nil || !strings.Contains(err.Error(), "unauthorized") {
				t.Errorf("Events after Close = %v; want unauthorized", err)
			}
		})
	}
}

func TestFollowDeliversUntilSessionCloses(t *testing.T) {
	srv := NewServer(&fakeHandler{}, DefaultLimits(), quietLogger())
	srv.Open("s1", testAgent, "t1")
	tr := serve(t, srv)[0]
	c := tr.dial(t, "s1", "t1")
	got := make(chan PushEvent, 10)
	done := make(chan error, 1)
	go func() { done <- Follow(context.Background(), c, func(ev PushEvent) { got <- ev }) }()
	srv.Publish("s1", EventUserMessage, map[string]string{"text": "hi"})
	select {
	case ev := <-got:
		if ev.Type != EventUserMessage || string(ev.Data) != `{"text":"hi"}` {
			t.Errorf("Follow delivered %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event delivered within 10s")
	}
	srv.Close("s1")
	select {
	case err := <-done:
		var rerr *Error
		if !errors.As(err, &rerr) || rerr.Status != http.StatusUnauthorized {
			t.Errorf("Follow ended with %v; want 401", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Follow did not end after the session closed")
	}
}

func TestDialRefusesPlaintextOffLoopback(t *testing.T) {
	for _, ep := range []string{"http://10.0.0.1:9400", "http://choird.internal:9400"} {
		if _, err := Dial(Options{Transport: TransportHTTP, Endpoint: ep, SessionID: "s", LeaseToken: "t"}); err == nil || !strings.Contains(err.Error(), "plaintext") {
			t.Errorf("Dial(%s) = %v; want plaintext refused", ep, err)
		}
	}
	if _, err := Dial(Options{Transport: TransportHTTP, Endpoint: "http://127.0.0.1:9400", SessionID: "s", LeaseToken: "t"}); err != nil {
		t.Errorf("Dial(loopback http) = %v; want allowed", err)
	}
	if _, err := ListenTCP("0.0.0.0:0", "", "", nil); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("ListenTCP(0.0.0.0 plaintext) = %v; want refused", err)
	}
	if _, err := Dial(Options{Transport: "carrier-pigeon", SessionID: "s", LeaseToken: "t"}); err == nil {
		t.Error("Dial with an unknown transport succeeded")
	}
}

func TestListenUnixRefusesLiveSocketAndReplacesStale(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "socks", "x.sock")
	l, err := ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ListenUnix(sock); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("second ListenUnix = %v; want in use", err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close() // leaves a stale socket file behind
	l2, err := ListenUnix(sock)
	if err != nil {
		t.Fatalf("ListenUnix over a stale socket = %v", err)
	}
	l2.Close()
}

func FuzzDecodeRequest(f *testing.F) {
	f.Add("HEARTBEAT", []byte(`{"base_rev":1,"new_rev":2,"patches":[{"rev":2,"type":"x","hash":"h"}]}`))
	f.Add("INIT_HELLO", []byte(`{"agent_id":"a"}`))
	f.Add("EXECUTE_HOST_TOOL", []byte(`{"tool_name":"t","input":{"a":[1,2]}}`))
	f.Add("NOPE", []byte(`{}`))
	srv := NewServer(&fakeHandler{}, DefaultLimits(), quietLogger())
	srv.now = func() time.Time { return time.Unix(0, 0) }
	f.Fuzz(func(t *testing.T, verb string, body []byte) {
		srv.Open("s", testAgent, "t") // fresh bucket: fuzzing must not hit the rate limit
		req, err := http.NewRequest(http.MethodPost, "/rpc/"+verb, bytes.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set(HeaderSessionID, "s")
		req.Header.Set(HeaderRequestID, "r")
		req.Header.Set("Authorization", "Bearer t")
		rec := newRecorder()
		srv.ServeHTTP(rec, req)
		if rec.status >= 500 && !strings.Contains(rec.body.String(), "worker crashed") {
			t.Fatalf("verb %q body %q → %d %s; the decoder must answer 2xx or 4xx", verb, body, rec.status, rec.body.String())
		}
	})
}

type recorder struct {
	hdr    http.Header
	status int
	body   bytes.Buffer
}

func newRecorder() *recorder                    { return &recorder{hdr: http.Header{}} }
func (r *recorder) Header() http.Header         { return r.hdr }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(s int)           { r.status = s }
