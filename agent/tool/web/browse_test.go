package web

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"choir/agent/tool"
)

// TestBrowseIsAHostTool checks what the arbiter sees of choir.web.browse:
// it loads, validates its input, holds the agent's browser and .choirtmp
// exclusively, and hands the input to choird unchanged.
func TestBrowseIsAHostTool(t *testing.T) {
	var gotName, gotCall string
	var gotInput json.RawMessage
	host := func(_ context.Context, name, callID string, input json.RawMessage) (json.RawMessage, error) {
		gotName, gotCall, gotInput = name, callID, input
		return json.RawMessage(`{"status":"success","summary":"read 10 characters","text":"hello page","truncated":false}`), nil
	}
	dir := t.TempDir()
	reg, err := tool.Load([]tool.Tool{Browse(host)}, dir, dir)
	if err != nil {
		t.Fatalf("tool.Load(choir.web.browse) = %v", err)
	}
	in := json.RawMessage(`{"url":"http://example.test/","actions":[{"type":"fill","selector":"#q","value":"x"}]}`)
	call, err := reg.Prepare(BrowseTool, in)
	if err != nil {
		t.Fatalf("Prepare = %v", err)
	}
	want := []tool.LockReq{{Key: "browser_tab", Mode: "X"}, {Key: "choirtmp", Mode: "X"}}
	if !slices.Equal(call.Locks, want) {
		t.Errorf("locks = %v; want %v", call.Locks, want)
	}
	if rt := call.Tool.Runtime(); !rt.Host || rt.Exposure != tool.ExposeBoth || len(rt.SecretResources) != 0 {
		t.Errorf("runtime = %+v; want a host tool for both lanes with no secrets", rt)
	}
	res := call.Run(context.Background(), tool.Invocation{CallID: "c1"})
	if res.Status != tool.StatusSuccess || string(res.Fields["text"].(json.RawMessage)) != `"hello page"` {
		t.Errorf("result = %+v; want choird's answer", res)
	}
	if gotName != BrowseTool || gotCall != "c1" || string(gotInput) != string(in) {
		t.Errorf("choird was asked %s %s %s; want %s c1 %s", gotName, gotCall, gotInput, BrowseTool, in)
	}
}

func TestBrowseRefusesBadInputBeforeChoird(t *testing.T) {
	asked := false
	host := func(context.Context, string, string, json.RawMessage) (json.RawMessage, error) {
		asked = true
		return nil, errors.New("unreachable")
	}
	dir := t.TempDir()
	reg, err := tool.Load([]tool.Tool{Browse(host)}, dir, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{
		`{"mode":"pdf"}`,
		`{"url":""}`,
		`{"agent":"beta"}`,
		`{"actions":[{"type":"eval","selector":"x"}]}`,
		`{"actions":[{"type":"click"}]}`,
		`{"timeout_ms":999999}`,
		`{"max_chars":0}`,
		`{"tab":""}`,
		`[1]`,
	} {
		if _, err := reg.Prepare(BrowseTool, json.RawMessage(in)); err == nil {
			t.Errorf("Prepare(%s) = nil; want the schema to refuse it", in)
		}
	}
	if asked {
		t.Error("choird was asked about an input the schema refuses")
	}
}

func TestBrowseSaysWhenChoirdCannotRunIt(t *testing.T) {
	host := func(context.Context, string, string, json.RawMessage) (json.RawMessage, error) {
		return nil, errors.New("no host tool named \"choir.web.browse\" in this choird")
	}
	r, err := Browse(host).Execute(context.Background(), json.RawMessage(`{"url":"http://x/"}`), tool.Env{CallID: "c"})
	if err == nil {
		t.Fatalf("Execute = %+v; want an error", r)
	}
	res := tool.ErrorResult(err)
	if res.Error.Code != tool.CodeHost || !strings.Contains(res.Error.Message, "choird could not run choir.web.browse") {
		t.Errorf("error = %+v; want code %s saying choird could not run it", res.Error, tool.CodeHost)
	}
	// An error result from the worker reaches the model as it is.
	host = func(context.Context, string, string, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"status":"error","error":{"code":"timeout","message":"load http://x/: the page did not finish loading within 2s"}}`), nil
	}
	r, err = Browse(host).Execute(context.Background(), json.RawMessage(`{"url":"http://x/"}`), tool.Env{CallID: "c"})
	if err != nil || r.Error == nil || r.Error.Code != "timeout" {
		t.Errorf("Execute = %+v, %v; want the worker's timeout error", r, err)
	}
}
