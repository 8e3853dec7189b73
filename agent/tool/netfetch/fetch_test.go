package netfetch

import (
	"context"
	"encoding/json"
	"testing"

	"choir/agent/tool"
)

// choir.net.fetch loads, hands a valid input to choird unchanged, and
// refuses before choird what its schema does not admit: another method, a
// header the model may not set (no Authorization, no Cookie), an unknown
// member.
func TestFetchIsAHostTool(t *testing.T) {
	var gotName string
	var gotInput json.RawMessage
	asked := 0
	host := func(_ context.Context, name, _ string, input json.RawMessage) (json.RawMessage, error) {
		asked++
		gotName, gotInput = name, input
		return json.RawMessage(`{"status":"success","summary":"GET → 200","http_status":200,"text":"page"}`), nil
	}
	dir := t.TempDir()
	reg, err := tool.Load([]tool.Tool{Fetch(host)}, dir, dir)
	if err != nil {
		t.Fatalf("tool.Load(choir.net.fetch) = %v", err)
	}
	in := json.RawMessage(`{"url":"https://api.example.org/v1/x","method":"POST","headers":{"Content-Type":"application/json","Accept":"application/json"},"body":"{}","max_bytes":4096}`)
	call, err := reg.Prepare(Name, in)
	if err != nil {
		t.Fatalf("Prepare = %v", err)
	}
	if rt := call.Tool.Runtime(); !rt.Host || !rt.Network || len(rt.SecretResources) != 0 {
		t.Errorf("runtime = %+v; want a host tool that reaches the network with no secrets", rt)
	}
	if res := call.Run(context.Background(), tool.Invocation{CallID: "c1"}); res.Status != tool.StatusSuccess {
		t.Errorf("result = %+v; want choird's answer", res)
	}
	if gotName != Name || string(gotInput) != string(in) {
		t.Errorf("choird was asked %s %s; want %s %s", gotName, gotInput, Name, in)
	}
	for _, bad := range []string{
		`{}`,
		`{"url":""}`,
		`{"url":"https://a/","method":"DELETE"}`,
		`{"url":"https://a/","headers":{"Authorization":"Bearer x"}}`,
		`{"url":"https://a/","headers":{"Cookie":"a=b"}}`,
		`{"url":"https://a/","max_bytes":0}`,
		`{"url":"https://a/","agent":"other"}`,
	} {
		if _, err := reg.Prepare(Name, json.RawMessage(bad)); err == nil {
			t.Errorf("Prepare(%s) = nil; want the schema to refuse it", bad)
		}
	}
	if asked != 1 {
		t.Errorf("choird was asked %d times; want once (refused inputs never leave the agent)", asked)
	}
}
