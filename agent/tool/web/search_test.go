package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"choir/agent/tool"
	"choir/agent/tool/web"
	"choir/internal/config"
	"choir/testkit/bravetest"
)

const braveToken = "BSA-tool-Token-3Zq"

// searchRig is choir.web.search in a registry, its provider pointing at a
// fake Brave.
type searchRig struct {
	fake  *bravetest.Server
	reg   *tool.Registry
	mu    sync.Mutex
	asked []string // secret kinds the call asked for
	dyn   config.Dynamic
}

func newSearchRig(t *testing.T) *searchRig {
	t.Helper()
	rig := &searchRig{fake: bravetest.New(t, braveToken)}
	rig.dyn = config.Dynamic{Search: map[string]config.Search{"brave": {Endpoint: rig.fake.URL(), Secret: "brave-key"}}}
	reg, err := tool.Load([]tool.Tool{web.NewSearch(func() config.Dynamic { return rig.dyn }, nil)}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	rig.reg = reg
	return rig
}

// secrets grants every kind, recording which were asked; search:brave is
// the fake's token.
func (rig *searchRig) secrets(kind string) (string, error) {
	rig.mu.Lock()
	defer rig.mu.Unlock()
	rig.asked = append(rig.asked, kind)
	if kind == "search:brave" {
		return braveToken, nil
	}
	return "other-secret-" + kind, nil
}

func (rig *searchRig) call(t *testing.T, input string, secrets tool.SecretFunc) map[string]any {
	t.Helper()
	var r tool.Result
	c, err := rig.reg.Prepare("choir.web.search", json.RawMessage(input))
	if err != nil {
		r = tool.ErrorResult(err)
	} else {
		r = c.Run(context.Background(), tool.Invocation{Workspace: t.TempDir(), CallID: "c1", Secrets: secrets})
	}
	raw, _ := json.Marshal(r)
	var m map[string]any
	json.Unmarshal(raw, &m)
	return m
}

func errCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func TestSearchReturnsStructuredResultsWithOnlyItsSecret(t *testing.T) {
	rig := newSearchRig(t)
	rig.fake.SetResults(
		bravetest.Result{Title: "Go", URL: "https://go.dev/", Description: "The Go programming language", Age: "3 days ago"},
		bravetest.Result{Title: "Tour", URL: "https://go.dev/tour", Description: "A Tour of Go"},
	)
	m := rig.call(t, `{"query":"golang","count":1,"country":"DE","freshness":"pw"}`, rig.secrets)
	if m["status"] != "success" {
		t.Fatalf("search = %v", m)
	}
	results, _ := m["results"].([]any)
	if len(results) != 1 {
		t.Fatalf("results = %v; want 1", m["results"])
	}
	first := results[0].(map[string]any)
	if first["title"] != "Go" || first["url"] != "https://go.dev/" || first["description"] != "The Go programming language" || first["age"] != "3 days ago" {
		t.Errorf("result = %v; want title, url, description and age", first)
	}
	if m["more_results"] != true || m["next_offset"] != float64(1) || !strings.Contains(m["summary"].(string), "1 results") {
		t.Errorf("search = %v; want more results at offset 1", m)
	}
	if !slices.Equal(rig.asked, []string{"search:brave"}) {
		t.Errorf("the call asked for secrets %v; want only search:brave", rig.asked)
	}
	if rt := web.NewSearch(nil, nil).Runtime(); !slices.Equal(rt.SecretResources, []string{"search:brave"}) {
		t.Errorf("SecretResources = %v; want only search:brave", rt.SecretResources)
	}
	q := rig.fake.Requests()[0].Query
	if q.Get("count") != "1" || q.Get("country") != "de" || q.Get("freshness") != "pw" {
		t.Errorf("Brave was asked %v", q)
	}

	rig.fake.SetResults()
	if m := rig.call(t, `{"query":"zzqx"}`, rig.secrets); m["status"] != "success" || !strings.Contains(m["summary"].(string), "no results") {
		t.Errorf("search without results = %v; want success saying none", m)
	}
	if q := rig.fake.Requests()[1].Query; q.Get("count") != "10" {
		t.Errorf("default count = %q; want 10", q.Get("count"))
	}
}

func TestSearchRefusesBadInput(t *testing.T) {
	rig := newSearchRig(t)
	for _, in := range []string{
		`{}`, `{"query":""}`, `{"query":"   "}`, `{"query":"x","count":50}`, `{"query":"x","offset":10}`,
		`{"query":"x","safesearch":"none"}`, `{"query":"x","freshness":"yesterday"}`, `{"query":"x","site":"go.dev"}`,
		`{"query":` + strings.Repeat(`"x`, 1) + strings.Repeat("y", 401) + `"}`, `not json`,
	} {
		if m := rig.call(t, in, rig.secrets); errCode(m) != tool.CodeInvalidInput {
			t.Errorf("search %s = %v; want invalid_input", in, m)
		}
	}
	if n := len(rig.fake.Requests()); n != 0 {
		t.Errorf("%d requests reached Brave; want none", n)
	}
}

func TestSearchErrorsTheModelCanActOn(t *testing.T) {
	rig := newSearchRig(t)
	rig.fake.SetResults(bravetest.Result{Title: "a", URL: "https://a.example/"})

	m := rig.call(t, `{"query":"x"}`, func(kind string) (string, error) { return "BSA-revoked", nil })
	if errCode(m) != "auth_failed" || !strings.Contains(m["summary"].(string), "search.brave") || strings.Contains(m["summary"].(string), "BSA-revoked") {
		t.Errorf("search with a refused token = %v; want auth_failed naming search.brave, never the token", m)
	}

	rig.fake.FailNext(1, bravetest.RateLimited(4))
	m = rig.call(t, `{"query":"x"}`, rig.secrets)
	if errCode(m) != "rate_limited" || m["retry_after_s"] != float64(4) || !strings.Contains(m["summary"].(string), "wait 4 s") {
		t.Errorf("rate limited search = %v; want rate_limited, retry_after_s 4", m)
	}

	rig.fake.FailNext(1, bravetest.ServerError(502))
	if m := rig.call(t, `{"query":"x"}`, rig.secrets); errCode(m) != "upstream_error" {
		t.Errorf("search on a 502 = %v; want upstream_error", m)
	}
	rig.fake.FailNext(1, bravetest.Malformed())
	if m := rig.call(t, `{"query":"x"}`, rig.secrets); errCode(m) != "bad_answer" {
		t.Errorf("search on a malformed answer = %v; want bad_answer", m)
	}
	rig.fake.FailNext(1, bravetest.Endless())
	if m := rig.call(t, `{"query":"x"}`, rig.secrets); errCode(m) != tool.CodeTooLarge {
		t.Errorf("search on an endless answer = %v; want too_large", m)
	}

	m = rig.call(t, `{"query":"x"}`, func(kind string) (string, error) {
		return "", errors.New(`config.json's search section has no provider "brave"`)
	})
	if errCode(m) != tool.CodeSecretUnavailable || !strings.Contains(m["summary"].(string), "search:brave") {
		t.Errorf("search without a bound provider = %v; want secret_unavailable", m)
	}

	// The endpoint is read per call: a changed config applies to the next.
	rig.dyn.Search["brave"] = config.Search{Endpoint: "http://127.0.0.1:1/res/v1", Secret: "brave-key"}
	if m := rig.call(t, `{"query":"x"}`, rig.secrets); errCode(m) != "unreachable" {
		t.Errorf("search against a closed port = %v; want unreachable", m)
	}
}
