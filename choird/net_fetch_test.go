package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"choir/choird/headless"
	"choir/choird/headless/objects"
	"choir/choird/netfetch"
	"choir/choird/store"
	"choir/internal/config"
	"choir/internal/netpolicy"
	"choir/internal/rpc"
)

// choir.net.fetch finds its policy from the calling session: a research
// run's mood allowlist (each request a NetRequest receipt, the body a
// source object), an interactive agent's agents.<id>.network; no policy
// for a run in a mood without network or an agent in open mode.
func TestNetFetchPolicyAndReceipts(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "page "+r.URL.Path)
	}))
	defer srv.Close()
	entry := func(prefix string) []config.AllowEntry {
		return []config.AllowEntry{{Entry: netpolicy.Entry{Prefix: prefix}}}
	}
	cfg := &config.Config{
		Agents: map[string]config.Agent{
			"alpha": {Network: config.Network{Mode: config.NetworkPolicy, Allow: entry(srv.URL + "/inter/")}},
			"beta":  {},
		},
		Headless: &config.Headless{Moods: map[string]config.MoodOverride{"CURIOUS": {Allow: entry(srv.URL + "/research/")}}},
	}
	d := headless.New(headless.NewMemStore())
	start := func(m string) headless.Run {
		item, err := d.AddWorkItem(ctx, headless.NewWorkItem{Agent: "alpha", Description: "look " + m, Acceptance: []string{"found"}})
		if err != nil {
			t.Fatal(err)
		}
		r, err := d.StartRun(ctx, headless.NewRun{WorkItem: item.ID, Mood: m})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := d.MarkRunning(ctx, r.ID, strings.Repeat("a", 40), "/wt/"+m, ""); err != nil {
			t.Fatal(err)
		}
		return r
	}
	curious, calm := start("CURIOUS"), start("CALM")
	sessions := fakeSessions{
		"cur-s":   {SessionID: "cur-s", AgentID: "alpha", Kind: store.SessionRun, RunID: curious.ID, Status: store.SessionActive},
		"calm-s":  {SessionID: "calm-s", AgentID: "alpha", Kind: store.SessionRun, RunID: calm.ID, Status: store.SessionActive},
		"inter-s": {SessionID: "inter-s", AgentID: "alpha", Kind: store.SessionInteractive, Status: store.SessionActive},
		"beta-s":  {SessionID: "beta-s", AgentID: "beta", Kind: store.SessionInteractive, Status: store.SessionActive},
	}
	objs, err := objects.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := &netFetchPolicies{config: func() *config.Config { return cfg }, sessions: sessions, director: d, objs: objs, log: slog.New(slog.DiscardHandler)}
	tool := &netfetch.Tool{Fetcher: netfetch.New(netfetch.Options{}), Policy: p.policy, Record: p.record}
	defer tool.Fetcher.Close()
	call := func(agent, session, url string) (rpc.NetFetchAnswer, error) {
		in, _ := json.Marshal(rpc.NetFetch{URL: url})
		out, err := tool.Handle(ctx, agent, session, in)
		var a rpc.NetFetchAnswer
		if err == nil {
			err = json.Unmarshal(out, &a)
		}
		return a, err
	}
	code := func(err error) string {
		var c interface{ ToolCode() string }
		if errors.As(err, &c) {
			return c.ToolCode()
		}
		return ""
	}

	a, err := call("alpha", "cur-s", srv.URL+"/research/a")
	if err != nil || a.Text != "page /research/a" || a.Source == "" {
		t.Fatalf("research run fetch = %+v, %v; want the page and its source object", a, err)
	}
	if b, err := objs.Get(a.Source); err != nil || string(b) != "page /research/a" {
		t.Errorf("source object %s = %q, %v", a.Source, b, err)
	}
	if _, err := call("alpha", "cur-s", srv.URL+"/inter/a"); code(err) != netfetch.CodeDenied || !strings.Contains(err.Error(), "headless.moods.CURIOUS.allow") {
		t.Errorf("research run fetching outside its mood's list = %v; want denied naming headless.moods.CURIOUS.allow", err)
	}
	rs, err := d.Receipts(ctx, curious.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var recs []netfetch.Record
	for _, r := range rs {
		if r.Kind == headless.KindNetRequest {
			var rec netfetch.Record
			if err := json.Unmarshal(r.Body, &rec); err != nil {
				t.Fatal(err)
			}
			if rec.Allowed && (len(r.Objects) != 1 || r.Objects[0] != a.Source) {
				t.Errorf("allowed NetRequest cites objects %v; want the source %s", r.Objects, a.Source)
			}
			recs = append(recs, rec)
		}
	}
	if len(recs) != 2 || !recs[0].Allowed || recs[0].Status != 200 || recs[0].Source != a.Source || recs[1].Allowed || recs[1].Code != netfetch.CodeDenied {
		t.Errorf("NetRequest receipts = %+v; want the allowed fetch and the denied one", recs)
	}

	if _, err := call("alpha", "calm-s", srv.URL+"/research/a"); code(err) != netfetch.CodeNoPolicy || !strings.Contains(err.Error(), "no network") {
		t.Errorf("CALM run = %v; want no_policy", err)
	}
	if a, err := call("alpha", "inter-s", srv.URL+"/inter/x"); err != nil || a.Text != "page /inter/x" || a.Source != "" {
		t.Errorf("interactive policy-mode fetch = %+v, %v; want the page (no object)", a, err)
	}
	if _, err := call("alpha", "inter-s", srv.URL+"/research/a"); code(err) != netfetch.CodeDenied || !strings.Contains(err.Error(), "agents.alpha.network.allow") {
		t.Errorf("interactive fetch outside its list = %v; want denied naming agents.alpha.network.allow", err)
	}
	if _, err := call("beta", "beta-s", srv.URL+"/inter/x"); code(err) != netfetch.CodeNoPolicy || !strings.Contains(err.Error(), "open mode") {
		t.Errorf("open-mode agent = %v; want no_policy", err)
	}
	if _, err := call("beta", "inter-s", srv.URL+"/inter/x"); code(err) != netfetch.CodeNoPolicy {
		t.Errorf("another agent's session = %v; want no_policy", err)
	}
}
