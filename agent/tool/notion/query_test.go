package notion_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"choir/agent/tool"
	"choir/agent/tool/notion"
	"choir/internal/config"
	"choir/testkit/notiontest"
)

const notionToken = "secret_tool-Notion-Token-1Ja"

type rig struct {
	fake  *notiontest.Server
	reg   *tool.Registry
	dyn   config.Dynamic
	asked []string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{fake: notiontest.New(t, notionToken)}
	r.dyn = config.Dynamic{Notion: &config.Notion{Endpoint: r.fake.URL(), Secret: "notion-key"}}
	reg, err := tool.Load([]tool.Tool{notion.NewQuery(func() config.Dynamic { return r.dyn }, nil)}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	r.reg = reg
	return r
}

func (r *rig) secrets(kind string) (string, error) {
	r.asked = append(r.asked, kind)
	if kind == tool.SecretNotion {
		return notionToken, nil
	}
	return "other-" + kind, nil
}

func (r *rig) call(t *testing.T, input string) map[string]any {
	t.Helper()
	var res tool.Result
	c, err := r.reg.Prepare("choir.notion.query", json.RawMessage(input))
	if err != nil {
		res = tool.ErrorResult(err)
	} else {
		res = c.Run(context.Background(), tool.Invocation{Workspace: t.TempDir(), CallID: "c1", Secrets: r.secrets})
	}
	raw, _ := json.Marshal(res)
	var m map[string]any
	json.Unmarshal(raw, &m)
	return m
}

func errCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func TestQuerySearchPageAndDatabase(t *testing.T) {
	r := newRig(t)
	page := r.fake.AddPage(notiontest.Page{Title: "Trip plan", Blocks: []notiontest.Block{
		notiontest.Heading(2, "Packing"), notiontest.ToDo("passport", true), notiontest.ToDo("charger", false),
	}})
	db := r.fake.AddDatabase("Trip tasks",
		notiontest.Page{Title: "Book hotel", Properties: map[string]map[string]any{"Status": notiontest.Status("Done")}},
		notiontest.Page{Title: "Buy tickets", Properties: map[string]map[string]any{"Status": notiontest.Status("Todo")}},
	)

	m := r.call(t, `{"mode":"search","query":"trip"}`)
	results, _ := m["results"].([]any)
	if m["status"] != "success" || len(results) != 2 {
		t.Fatalf("search = %v; want the page and the database", m)
	}
	if first := results[0].(map[string]any); first["kind"] != "page" || first["id"] != page || first["title"] != "Trip plan" {
		t.Errorf("first result = %v", first)
	}
	if !slices.Equal(r.asked, []string{tool.SecretNotion}) {
		t.Errorf("secrets asked %v; want only notion", r.asked)
	}

	link := "https://www.notion.so/Trip-plan-" + strings.ReplaceAll(page, "-", "")
	m = r.call(t, `{"mode":"page","id":"`+link+`"}`)
	if m["status"] != "success" || m["title"] != "Trip plan" || m["text"] != "# Trip plan\n## Packing\n[x] passport\n[ ] charger" || m["truncated"] != false {
		t.Errorf("page = %v", m)
	}

	m = r.call(t, `{"mode":"database","id":"`+db+`","filter":{"property":"Status","status":{"equals":"Todo"}}}`)
	rows, _ := m["rows"].([]any)
	if m["status"] != "success" || len(rows) != 1 {
		t.Fatalf("database = %v; want the one Todo row", m)
	}
	row := rows[0].(map[string]any)
	props, _ := row["properties"].(map[string]any)
	if row["title"] != "Buy tickets" || props["Status"] != "Todo" || props["Name"] != "Buy tickets" {
		t.Errorf("row = %v", row)
	}

	// More rows than a page: next_cursor, and the call with it gets the rest.
	m = r.call(t, `{"mode":"database","id":"`+db+`","page_size":1}`)
	cursor, _ := m["next_cursor"].(string)
	if cursor == "" {
		t.Fatalf("database page 1 = %v; want a next_cursor", m)
	}
	m = r.call(t, `{"mode":"database","id":"`+db+`","page_size":1,"cursor":"`+cursor+`"}`)
	if rows, _ := m["rows"].([]any); len(rows) != 1 || m["next_cursor"] != nil {
		t.Errorf("database page 2 = %v; want the last row and no cursor", m)
	}
	// A long property is cut in the result, saying how to read all of it.
	long := r.fake.AddDatabase("Notes", notiontest.Page{Title: "n", Properties: map[string]map[string]any{"Body": notiontest.Text(strings.Repeat("é", 5000))}})
	m = r.call(t, `{"mode":"database","id":"`+long+`"}`)
	body := m["rows"].([]any)[0].(map[string]any)["properties"].(map[string]any)["Body"].(string)
	if !strings.HasPrefix(body, strings.Repeat("é", notion.MaxPropertyChars)+"…") || !strings.Contains(body, "read the row with mode page") {
		t.Errorf("long property = %d bytes ending %q; want it cut at %d characters with a note", len(body), body[len(body)-60:], notion.MaxPropertyChars)
	}
	rowID := m["rows"].([]any)[0].(map[string]any)["id"].(string)
	m = r.call(t, `{"mode":"page","id":"`+rowID+`"}`)
	if body, _ := m["properties"].(map[string]any)["Body"].(string); body != strings.Repeat("é", 5000) {
		t.Errorf("the row as a page has Body of %d bytes; want all 5000 characters", len(body))
	}
	if rt := notion.NewQuery(nil, nil).Runtime(); !slices.Equal(rt.SecretResources, []string{tool.SecretNotion}) {
		t.Errorf("SecretResources = %v; want only notion", rt.SecretResources)
	}
}

func TestQueryRefusesBadInput(t *testing.T) {
	r := newRig(t)
	for _, in := range []string{
		`{}`, `{"mode":"list"}`, `{"mode":"page"}`, `{"mode":"page","id":"  "}`, `{"mode":"page","id":"my trip"}`,
		`{"mode":"database","id":"../../v1/users"}`, `{"mode":"search","id":"0123abcd456789abcdef0123456789ab"}`,
		`{"mode":"page","id":"0123abcd456789abcdef0123456789ab","query":"x"}`, `{"mode":"search","page_size":500}`,
		`{"mode":"database","id":"0123abcd456789abcdef0123456789ab","filter":"Status=Done"}`, `{"mode":"search","extra":1}`,
		`{"mode":"page","id":"0123abcd456789abcdef0123456789ab","max_chars":5}`,
	} {
		if m := r.call(t, in); errCode(m) != tool.CodeInvalidInput {
			t.Errorf("query %s = %v; want invalid_input", in, m)
		}
	}
	if n := len(r.fake.Requests()); n != 0 {
		t.Errorf("%d requests reached Notion; want none", n)
	}
}

func TestQueryErrorsTheModelCanActOn(t *testing.T) {
	r := newRig(t)
	m := r.call(t, `{"mode":"page","id":"0123abcd456789abcdef0123456789ab"}`)
	if errCode(m) != "not_found" || !strings.Contains(m["summary"].(string), "shared with the integration") {
		t.Errorf("page not shared = %v; want not_found saying to share it", m)
	}
	r.fake.FailNext(1, notiontest.RateLimited(2))
	if m := r.call(t, `{"mode":"search"}`); errCode(m) != "rate_limited" || m["retry_after_s"] != float64(2) {
		t.Errorf("rate limited = %v; want rate_limited after 2 s", m)
	}
	r.fake.FailNext(1, notiontest.Unauthorized())
	if m := r.call(t, `{"mode":"search"}`); errCode(m) != "auth_failed" || strings.Contains(m["summary"].(string), notionToken) {
		t.Errorf("revoked token = %v; want auth_failed without the token", m)
	}
	r.fake.FailNext(1, notiontest.ServerError(500))
	if m := r.call(t, `{"mode":"search"}`); errCode(m) != "upstream_error" {
		t.Errorf("5xx = %v; want upstream_error", m)
	}

	// No integration bound: the call fails before the tool runs.
	var res tool.Result
	c, _ := r.reg.Prepare("choir.notion.query", json.RawMessage(`{"mode":"search"}`))
	res = c.Run(context.Background(), tool.Invocation{Secrets: func(string) (string, error) {
		return "", errors.New("no Notion integration is bound in this session")
	}})
	if res.Error == nil || res.Error.Code != tool.CodeSecretUnavailable {
		t.Errorf("without an integration = %+v; want secret_unavailable", res)
	}
}
