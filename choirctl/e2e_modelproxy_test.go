package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"choir/internal/config"
	"choir/internal/docker"
	"choir/internal/rpc"
	"choir/testkit"
	"choir/testkit/dockertest"
)

// TestModelCallsCarriedByChoird (issue 25 item 1): mp-1 opts in with
// agents.mp-1.model_proxy. Its model listens on the host's loopback, where
// no container reaches it, yet the agent answers: choird carried the call,
// adding the key and the request template's headers. The model key and
// the template's secret are nowhere in the container: not in its
// environment, not among the secrets GET_SECRETS grants its session (asked
// with the container's own lease token), not in any log; and that token
// cannot reach a model the session is not bound to. Over the agent's socket
// and over the HTTPS transport alike.
func TestModelCallsCarriedByChoird(t *testing.T) {
	t.Run("uds", func(t *testing.T) { modelCallsCarried(t, false) })
	t.Run("https", func(t *testing.T) { modelCallsCarried(t, true) })
}

func modelCallsCarried(t *testing.T, overHTTPS bool) {
	dc := dockertest.Engine(t)
	home := filepath.Join(t.TempDir(), "h")
	workspace := testkit.Workspace(t)
	ctlRun(t, home, "", "init")
	env := backends(t, home)
	agentConfig(t, home, workspace) // models, identities and secrets; mp-1 below

	model := &recordingModel{}
	l, err := net.Listen("tcp", "127.0.0.1:0") // choird's host only
	if err != nil {
		t.Fatal(err)
	}
	ms := &http.Server{Handler: model}
	go ms.Serve(l)
	t.Cleanup(func() { ms.Close() })
	editConfig(t, home, func(cfg map[string]any) {
		cfg["models"].(map[string]any)["m"] = map[string]any{"provider": "test", "model": "mp-model", "endpoint": "http://" + l.Addr().String() + "/v1", "secret": "llm-key",
			"request": map[string]any{"headers": map[string]any{"X-Title": "choir-mp", "X-Gateway-Key": map[string]any{"secret": "gw-key", "format": "Key %s"}}}}
		cfg["gateways"] = map[string]any{"console": map[string]any{"type": "console"}}
		cfg["dms"] = map[string]any{"mp": map[string]any{"gateway": "console", "admin": true}}
		cfg["agents"] = map[string]any{"mp-1": map[string]any{"model_proxy": true,
			"defaults": map[string]any{"workspace": "main", "llm": "m", "git_identity": "dev", "dm": "mp"}}}
	})
	if _, stderr, code := ctlRun(t, home, "", "secret", "set", "gw-key", gatewayKey); code != 0 {
		t.Fatalf("secret set gw-key = %d %s", code, stderr)
	}
	dockertest.AgentImage(t, dc, "mp-1", "mp1")
	var args []string
	if overHTTPS {
		args = []string{"--transport=http", "--listen=" + dockertest.BridgeIP(t) + ":0"}
	}
	d := startChoird(t, home, env, args...)
	waitReady(t, home, d)
	if out, stderr, code := ctlRun(t, home, "", "agent", "start", "mp-1", "--dm=mp"); code != 0 {
		t.Fatalf("agent start mp-1 = %d %q %q\n%s", code, out, stderr, d.stderr.String())
	}
	agentLog := filepath.Join(home, "logs", "mp-1.log")
	report := func() string {
		data, _ := os.ReadFile(agentLog)
		return "choird:\n" + d.stderr.String() + "\nmp-1:\n" + string(data)
	}

	out, stderr, code := ctlRun(t, home, "hello\n", "chat", "mp-1", "--once", "--timeout", "2m")
	if code != 0 || !strings.Contains(out, backupText) {
		t.Fatalf("chat mp-1 = %d %q %q; want the model's answer, carried by choird\n%s", code, out, stderr, report())
	}
	reqs := model.requests()
	if len(reqs) == 0 {
		t.Fatalf("the model received nothing\n%s", report())
	}
	r := reqs[0]
	if r.header.Get("Authorization") != "Bearer "+apiSecret || r.header.Get("X-Title") != "choir-mp" || r.header.Get("X-Gateway-Key") != "Key "+gatewayKey {
		t.Errorf("the model's headers: Authorization set %v, X-Title %q, X-Gateway-Key set %v; want choird's key and template headers",
			r.header.Get("Authorization") == "Bearer "+apiSecret, r.header.Get("X-Title"), r.header.Get("X-Gateway-Key") == "Key "+gatewayKey)
	}
	if r.body["model"] != "mp-model" || r.header.Get(rpc.HeaderSessionID) != "" {
		t.Errorf("the model's request: model %v, session header %q; want mp-model and nothing of the agent's envelope", r.body["model"], r.header.Get(rpc.HeaderSessionID))
	}

	// The container: its environment, and what its session is granted.
	ctx := context.Background()
	cs, err := dc.ContainerList(ctx, docker.ContainerListOptions{Filters: docker.Filters{"label": {"choir.agent=mp-1", instanceLabel(home)}}})
	if err != nil || len(cs) != 1 {
		t.Fatalf("mp-1's container: %v (%d found)", err, len(cs))
	}
	c, err := dc.ContainerInspect(ctx, cs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	cenv := map[string]string{}
	for _, kv := range c.Config.Env {
		k, v, _ := strings.Cut(kv, "=")
		cenv[k] = v
		if strings.Contains(v, apiSecret) || strings.Contains(v, gatewayKey) {
			t.Errorf("the container's environment holds a model secret in %s", k)
		}
	}
	// The container's own control plane, with its token.
	dir := filepath.Join(config.Home{Dir: home}.AgentSocketDir(), "mp-1")
	o := rpc.Options{Transport: rpc.TransportUDS, Socket: filepath.Join(dir, "choird.sock"), SessionID: cenv["CHOIR_SESSION_ID"], LeaseToken: cenv["CHOIR_LEASE_TOKEN"]}
	if overHTTPS {
		pem, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		o.Transport, o.Endpoint, o.TLS = rpc.TransportHTTP, choirdStatus(t, home).AgentSocket, &tls.Config{RootCAs: pool}
	}
	cp, err := rpc.Dial(o)
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	granted, err := cp.GetSecrets(ctx, rpc.SecretReq{})
	if err != nil {
		t.Fatalf("GET_SECRETS with mp-1's token = %v", err)
	}
	for name, v := range granted.Secrets {
		if v == apiSecret || v == gatewayKey {
			t.Errorf("GET_SECRETS grants mp-1 the model secret %s", name)
		}
	}
	if _, ok := granted.Secrets["git-token"]; !ok {
		t.Errorf("GET_SECRETS granted %d secrets without git-token; want the other bound resources' secrets still granted", len(granted.Secrets))
	}
	var rerr *rpc.Error
	if _, err := cp.GetSecrets(ctx, rpc.SecretReq{Resources: []string{"llm-key"}}); !errors.As(err, &rerr) || rerr.Status != http.StatusForbidden {
		t.Errorf("GET_SECRETS for llm-key with mp-1's token = %v; want 403", err)
	}
	// The container's token reaches its own model only: m2 is not bound.
	hc := &http.Client{Transport: cp.ModelTransport()}
	before := len(model.requests())
	resp, err := hc.Post(cp.ModelBase("m2")+"/chat/completions", "application/json", strings.NewReader(`{"model":"y","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var eb struct{ Error struct{ Message string } }
	json.Unmarshal(body, &eb)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(eb.Error.Message, `model "m2" is not one this session may use`) {
		t.Errorf("a call to model m2 with mp-1's token = %d %s; want 403 naming it", resp.StatusCode, body)
	}
	if n := len(model.requests()); n != before {
		t.Errorf("the refused call reached a model (%d requests)", n-before)
	}

	if err := d.stop(t); err != nil {
		t.Errorf("choird stop = %v\n%s", err, d.stderr.String())
	}
	assertNoSecrets(t, filepath.Join(home, "logs"), d.stderr.String(), out)
	for _, dir := range []string{filepath.Join(home, "logs"), workspace} {
		filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				if data, _ := os.ReadFile(path); strings.Contains(string(data), gatewayKey) {
					t.Errorf("%s holds the template's secret", path)
				}
			}
			return nil
		})
	}
}
