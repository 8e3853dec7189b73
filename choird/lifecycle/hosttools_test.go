package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"choir/internal/rpc"
)

type codedErr struct{}

func (codedErr) Error() string    { return "an agent writes only its own knowledge" }
func (codedErr) ToolCode() string { return "forbidden" }

// A host tool another room registers runs for the agent and session of the
// authenticated call, whatever its input claims; its output is the tool
// result, its error a tool error with the error's code; a tool nobody
// registered is still a 404.
func TestHostToolsTable(t *testing.T) {
	m, _, ctx := handlerManager(t, 1)
	var got []string
	m.HostTools = map[string]func(context.Context, string, string, json.RawMessage) (json.RawMessage, error){
		"choir.memory.upsert": func(_ context.Context, agent, session string, in json.RawMessage) (json.RawMessage, error) {
			got = append(got, agent+" "+session+" "+string(in))
			if string(in) == `{"refuse":true}` {
				return nil, codedErr{}
			}
			return json.RawMessage(`{"status":"success","summary":"stored"}`), nil
		},
	}
	resp, err := m.HandleHostTool(ctx, rpc.HostToolReq{ToolName: "choir.memory.upsert", CallID: "c1", Input: json.RawMessage(`{"agent":"b"}`)})
	if err != nil || resp.Status != rpc.ToolSuccess || resp.CallID != "c1" || string(resp.Output) != `{"status":"success","summary":"stored"}` {
		t.Errorf("HandleHostTool = %+v, %v; want the handler's result", resp, err)
	}
	if len(got) != 1 || got[0] != `a-1 s-1 {"agent":"b"}` {
		t.Errorf("handler called with %q; want the calling session's agent a-1 and session s-1", got)
	}
	resp, err = m.HandleHostTool(ctx, rpc.HostToolReq{ToolName: "choir.memory.upsert", CallID: "c2", Input: json.RawMessage(`{"refuse":true}`)})
	var out struct {
		Status string
		Error  struct{ Code, Message string }
	}
	json.Unmarshal(resp.Output, &out)
	if err != nil || resp.Status != rpc.ToolError || out.Error.Code != "forbidden" || out.Error.Message != (codedErr{}).Error() {
		t.Errorf("refusal = %+v (%s), %v; want a tool error with code forbidden", resp, resp.Output, err)
	}
	_, err = m.HandleHostTool(ctx, rpc.HostToolReq{ToolName: "choir.web.browse", CallID: "c3", Input: json.RawMessage(`{}`)})
	var rerr *rpc.Error
	if !errors.As(err, &rerr) || rerr.Status != http.StatusNotFound {
		t.Errorf("unregistered tool = %v; want 404", err)
	}
}
