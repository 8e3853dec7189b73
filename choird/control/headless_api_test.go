package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"choir/choird/headless"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/logs"
)

// headlessServer serves the real admin handler on a unix socket, with a
// director over an in-memory store; it returns the client and a raw HTTP
// client for hand-made requests.
func headlessServer(t *testing.T, withDirector bool) (*ctl.Client, *http.Client, *headless.Director) {
	t.Helper()
	home := config.Home{Dir: t.TempDir()}
	lm, err := logs.NewManager(home.LogsDir(), 1000, slog.LevelInfo, logs.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lm.Close() })
	p := New(home, lm)
	var d *headless.Director
	if withDirector {
		d = headless.New(headless.NewMemStore())
		d.KnownAgent = func(id string) bool { return id == "alpha" }
		p.SetDirector(d)
	}
	sock := filepath.Join(t.TempDir(), "ctl.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p.AdminHandler()}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	c := ctl.NewClient(sock)
	t.Cleanup(c.Close)
	raw := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	t.Cleanup(raw.CloseIdleConnections)
	return c, raw, d
}

// call sends a raw request and decodes a 200 answer strictly into out
// (unknown fields refused, so the wire types in internal/ctl cannot drift
// from choird/headless's JSON); it returns the status and the error body.
func call(t *testing.T, raw *http.Client, method, path, body string, out any) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, "http://choird"+path, rd)
	resp, err := raw.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK && out != nil {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(out); err != nil {
			t.Fatalf("%s %s answered %s; decoding into %T: %v", method, path, data, out, err)
		}
	}
	return resp.StatusCode, string(data)
}

// The endpoints of seed 002 §10 through the real admin handler: a work
// item, a run, a note, an attestation, a commit request, the receipts and
// the state vector, at the seed's paths and under /v1.
func TestHeadlessEndpoints(t *testing.T) {
	c, raw, dir := headlessServer(t, true)
	ctx := context.Background()
	res, err := c.WorkItemOp(ctx, ctl.WorkItemRequest{Op: "create", Item: &ctl.WorkItemSpec{Agent: "alpha", Description: "make TestNil pass",
		Acceptance: []string{"go test passes"}, Verifiers: []string{"go-test"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Item.Status != "ready" || res.Item.Risk != "low" || !headless.ValidWorkItemID(res.Item.ID) {
		t.Errorf("create = %+v; want a ready, low-risk item with an id", res.Item)
	}
	var item ctl.WorkItemResult
	if code, body := call(t, raw, "POST", "/work_item", `{"item":{"agent":"alpha","description":"docs","acceptance":["README says so"]}}`, &item); code != 200 || item.Item.Status != "ready" {
		t.Fatalf("POST /work_item = %d %s", code, body)
	}
	var run ctl.Run
	if code, body := call(t, raw, "POST", "/run", `{"work_item":"`+res.Item.ID+`","mood":"CALM","budgets":{"tokens":100}}`, &run); code != 200 || run.Status != "queued" || run.Budgets.Tokens != 100 {
		t.Fatalf("POST /run = %d %s", code, body)
	}
	if _, err := c.StartRun(ctx, ctl.RunRequest{WorkItem: res.Item.ID}); !isCode(err, 409, "active_run") {
		t.Errorf("second run = %v; want 409 active_run", err)
	}
	// A queued run takes no note: the executor has not started it.
	if code, body := call(t, raw, "POST", "/run/"+run.ID+"/note", `{"type":"OBSERVATION","text":"x"}`, nil); code != 409 || !strings.Contains(body, "queued") {
		t.Errorf("note on a queued run = %d %s; want 409 saying it is queued", code, body)
	}
	// The executor (not built yet) takes the run; then the associate's
	// endpoints apply.
	if _, _, err := dir.MarkRunning(ctx, run.ID, strings.Repeat("a", 40), "/wt/"+run.ID, ""); err != nil {
		t.Fatal(err)
	}
	var note ctl.Appended
	code, body := call(t, raw, "POST", "/run/"+run.ID+"/note", `{"type":"HYPOTHESIS","text":"nil map","test":"run TestNil","budget":{"tool_calls":2},"idempotency_key":"n-1"}`, &note)
	if code != 200 || !note.Appended || note.Receipt.Seq != 2 || note.Receipt.Kind != "Note" {
		t.Fatalf("POST /run/{id}/note = %d %s", code, body)
	}
	var again ctl.Appended
	if code, body := call(t, raw, "POST", "/v1/run/"+run.ID+"/note", `{"type":"HYPOTHESIS","text":"nil map","test":"run TestNil","budget":{"tool_calls":2},"idempotency_key":"n-1"}`, &again); code != 200 || again.Appended || again.Receipt.Seq != 2 {
		t.Errorf("note resent = %d %s; want the first receipt, appended false", code, body)
	}
	if code, body := call(t, raw, "POST", "/run/"+run.ID+"/note", `{"type":"HYPOTHESIS","text":"nil map","budget":{"tool_calls":2}}`, nil); code != 400 || !strings.Contains(body, "invalid_input") || !strings.Contains(body, "test") {
		t.Errorf("hypothesis without a test = %d %s; want 400 naming test", code, body)
	}
	var att ctl.Appended
	if code, body := call(t, raw, "POST", "/run/"+run.ID+"/verify", `{"verifier":"go-test","passed":true,"summary":"1 passed","supports":["`+note.Receipt.Ref()+`"]}`, &att); code != 200 || att.Receipt.Kind != "VerifierResults" {
		t.Fatalf("POST /run/{id}/verify = %d %s", code, body)
	}
	if code, body := call(t, raw, "POST", "/run/"+run.ID+"/commit_request", `{"summary":"fix, see sha256:0123abcd","patch":"`+strings.Repeat("b", 64)+`"}`, nil); code != 400 || !strings.Contains(body, "summary") || !strings.Contains(body, "sha256:0123abcd") {
		t.Errorf("commit request whose summary cites a truncated pointer = %d %s; want 400 naming it", code, body)
	}
	var cr ctl.Appended
	if code, body := call(t, raw, "POST", "/run/"+run.ID+"/commit_request", `{"summary":"fix","patch":"`+strings.Repeat("b", 64)+`","cites":["`+note.Receipt.Ref()+`"]}`, &cr); code != 200 || cr.Receipt.Kind != "CommitRequest" {
		t.Fatalf("POST /run/{id}/commit_request = %d %s", code, body)
	}
	if !strings.Contains(string(cr.Receipt.Body), `"cites":["`+note.Receipt.Ref()+`"]`) {
		t.Errorf("CommitRequest receipt body = %s; want the cites it was given", cr.Receipt.Body)
	}
	var detail ctl.RunDetail
	if code, body := call(t, raw, "GET", "/v1/run/"+run.ID, "", &detail); code != 200 || detail.Run.Status != "awaiting_approval" || !detail.Check.Ready || detail.Receipts != 4 {
		t.Errorf("GET /v1/run/{id} = %d %s; want awaiting_approval, ready, 4 receipts", code, body)
	}
	if code, body := call(t, raw, "POST", "/run/"+run.ID+"/decision", `{"approve":true}`, nil); code != 400 || !strings.Contains(body, "who decides") {
		t.Errorf("decision without by = %d %s; want 400 asking who decides", code, body)
	}
	var rs []ctl.Receipt
	if code, body := call(t, raw, "GET", "/receipts/"+run.ID+"?after=1", "", &rs); code != 200 || len(rs) != 3 || rs[0].Seq != 2 {
		t.Errorf("GET /receipts/{id}?after=1 = %d %s", code, body)
	}
	var st ctl.AHDBState
	if code, body := call(t, raw, "GET", "/state/ahdb", "", &st); code != 200 || len(st.Assert) != 1 || st.Assert[0].Ref != note.Receipt.Ref() || st.Runs[run.ID] != "awaiting_approval" {
		t.Errorf("GET /state/ahdb = %d %s; want the hypothesis asserted", code, body)
	}
	var list []ctl.WorkItem
	if code, body := call(t, raw, "GET", "/v1/work_items?status=running", "", &list); code != 200 || len(list) != 1 || list[0].ID != res.Item.ID {
		t.Errorf("GET /v1/work_items?status=running = %d %s", code, body)
	}
	var wd ctl.WorkItemDetail
	if code, body := call(t, raw, "GET", "/v1/work_item/"+res.Item.ID, "", &wd); code != 200 || len(wd.Runs) != 1 || wd.Children == nil {
		t.Errorf("GET /v1/work_item/{id} = %d %s", code, body)
	}
	var runs []ctl.Run
	if code, body := call(t, raw, "GET", "/v1/runs?agent=alpha", "", &runs); code != 200 || len(runs) != 1 {
		t.Errorf("GET /v1/runs = %d %s", code, body)
	}
	// Split and cancel through the same endpoint.
	var split ctl.WorkItemResult
	code, body = call(t, raw, "POST", "/work_item", `{"op":"split","id":"`+item.Item.ID+`","children":[{"description":"a","acceptance":["README says so"]},{"description":"b","acceptance":["spelling"]}]}`, &split)
	if code != 200 || split.Item.Status != "split" || len(split.Children) != 2 || split.Children[0].Parent != item.Item.ID {
		t.Fatalf("split = %d %s", code, body)
	}
	var cancelled ctl.WorkItemResult
	if code, body := call(t, raw, "POST", "/work_item", `{"op":"cancel","id":"`+split.Children[1].ID+`"}`, &cancelled); code != 200 || cancelled.Item.Status != "cancelled" {
		t.Errorf("cancel = %d %s", code, body)
	}
	var updated ctl.WorkItemResult
	if code, body := call(t, raw, "POST", "/work_item", `{"op":"update","id":"`+split.Children[0].ID+`","update":{"risk":"high"}}`, &updated); code != 200 || updated.Item.Risk != "high" {
		t.Errorf("update = %d %s", code, body)
	}
}

// Hostile and wrong requests are refused with a status and a message
// saying where, and change nothing.
func TestHeadlessEndpointsRefuse(t *testing.T) {
	_, raw, _ := headlessServer(t, true)
	run := "r-000000000000"
	big := `{"item":{"agent":"alpha","description":"` + strings.Repeat("x", maxWorkItemBody) + `","acceptance":["a"]}}`
	deep := strings.Repeat(`{"a":`, 100) + "1" + strings.Repeat("}", 100)
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		want                     string
	}{
		{"unknown field", "POST", "/work_item", `{"item":{"agent":"alpha","description":"d","acceptance":["a"],"owner":"x"}}`, 400, "owner"},
		{"unknown top field", "POST", "/run", `{"work_item":"w-000000000000","priority":1}`, 400, "priority"},
		{"too large", "POST", "/work_item", big, 413, "limit"},
		{"empty body", "POST", "/run", ``, 400, "empty body"},
		{"malformed", "POST", "/run", `{"work_item":`, 400, "malformed"},
		{"trailing data", "POST", "/run", `{"work_item":"w-000000000000"} {}`, 400, "after the JSON value"},
		{"too deep", "POST", "/run/" + run + "/note", deep, 400, "nest"},
		{"invalid utf-8", "POST", "/run/" + run + "/note", "{\"type\":\"OBSERVATION\",\"text\":\"\xff\"}", 400, "UTF-8"},
		{"wrong type", "POST", "/run", `{"work_item":7}`, 400, "work_item"},
		{"bad op", "POST", "/work_item", `{"op":"merge","id":"w-000000000000"}`, 400, "create, split, update or cancel"},
		{"fields of another op", "POST", "/work_item", `{"op":"cancel","id":"w-000000000000","item":{"description":"d","acceptance":["a"]}}`, 400, "only the fields"},
		{"create without item", "POST", "/work_item", `{"op":"create"}`, 400, "only the fields"},
		{"split with children and a request", "POST", "/work_item", `{"op":"split","id":"w-000000000000","children":[{"description":"a","acceptance":["a"]}],"request":"r-000000000000#1"}`, 400, "children or request"},
		{"split by a bad request", "POST", "/work_item", `{"op":"split","id":"w-000000000000","request":"../r#1"}`, 400, "not a receipt reference"},
		{"split by a missing request", "POST", "/work_item", `{"op":"split","id":"w-000000000000","request":"r-000000000000#1"}`, 400, "run r-000000000000"},
		{"request on create", "POST", "/work_item", `{"item":{"agent":"alpha","description":"d","acceptance":["a"]},"request":"r-000000000000#1"}`, 400, "only the fields"},
		{"unknown agent", "POST", "/work_item", `{"item":{"agent":"mallory","description":"d","acceptance":["a"]}}`, 400, "not configured"},
		{"no acceptance", "POST", "/work_item", `{"item":{"agent":"alpha","description":"d"}}`, 400, "acceptance"},
		{"unknown work item", "POST", "/run", `{"work_item":"w-000000000000"}`, 404, "not_found"},
		{"bad work item id", "POST", "/run", `{"work_item":"../../etc"}`, 400, "work_item"},
		{"unknown run", "POST", "/run/" + run + "/note", `{"type":"OBSERVATION","text":"x"}`, 404, "not_found"},
		{"bad run id", "GET", "/receipts/nope", ``, 400, "not a run id"},
		{"bad after", "GET", "/receipts/" + run + "?after=-1", ``, 400, "after"},
		{"assert note", "POST", "/run/" + run + "/note", `{"type":"ASSERT","text":"x"}`, 400, "promoted"},
		{"bad patch", "POST", "/run/" + run + "/commit_request", `{"summary":"s","patch":"../x"}`, 400, "SHA-256"},
		{"bad artifact", "POST", "/run/" + run + "/verify", `{"verifier":"go-test","passed":true,"artifacts":["x"]}`, 400, "artifacts[0]"},
		{"bad key", "POST", "/run/" + run + "/verify", `{"verifier":"go-test","passed":true,"idempotency_key":"a b"}`, 400, "idempotency key"},
		{"bad status filter", "GET", "/work_items?status=sleeping", ``, 400, "status"},
		{"wrong method", "GET", "/run", ``, 404, "no admin endpoint GET /run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := call(t, raw, tc.method, tc.path, tc.body, nil)
			if code != tc.status || !strings.Contains(body, tc.want) {
				t.Errorf("%s %s = %d %s; want %d mentioning %q", tc.method, tc.path, code, body, tc.status, tc.want)
			}
		})
	}
	var list []ctl.WorkItem
	if code, _ := call(t, raw, "GET", "/work_items", "", &list); code != 200 || len(list) != 0 {
		t.Errorf("work items after refusals = %v; want none", list)
	}
}

func TestHeadlessWithoutDirector(t *testing.T) {
	c, _, _ := headlessServer(t, false)
	if _, err := c.WorkItems(context.Background(), "", ""); !isStatus(err, http.StatusServiceUnavailable) {
		t.Errorf("without a director: %v; want 503", err)
	}
}

func isCode(err error, status int, code string) bool {
	var e *ctl.Error
	return errors.As(err, &e) && e.Status == status && e.Code == code
}
