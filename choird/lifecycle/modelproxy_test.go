package lifecycle

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"choir/choird/lease"
	"choir/internal/rpc"
)

// agents.<id>.model_proxy: INIT_HELLO tells the agent, and GET_SECRETS
// grants no model key while the other resources' secrets stay granted;
// without it the key is granted. SessionBindings names the session's
// models for choird's proxy.
func TestModelProxyWithholdsTheModelKey(t *testing.T) {
	for _, proxy := range []bool{false, true} {
		rig := newRunRig(t)
		l, _ := rig.m.Config()
		a := l.Config.Agents["a1"]
		a.ModelProxy = proxy
		l.Config.Agents["a1"] = a
		ctx := context.Background()
		st, err := rig.m.Start(ctx, "a1", lease.Overrides{})
		if err != nil {
			t.Fatal(err)
		}
		call := rpc.WithCall(ctx, rpc.Call{SessionID: st.SessionID})
		hello, err := rig.m.HandleInitHello(call, rpc.InitHelloReq{AgentID: "a1", SessionID: st.SessionID, ImageVersion: "v1"})
		if err != nil || hello.ModelProxy != proxy {
			t.Errorf("model_proxy %v: INIT_HELLO = ModelProxy %v, %v", proxy, hello.ModelProxy, err)
		}
		sec, err := rig.m.HandleSecrets(call, rpc.SecretReq{})
		_, key := sec.Secrets["llm"]
		if err != nil || key == proxy || sec.Secrets["notion-key"] != "nt-1" {
			t.Errorf("model_proxy %v: GET_SECRETS = %v, %v; want the model key only without the proxy, the Notion key always", proxy, sec.Secrets, err)
		}
		_, err = rig.m.HandleSecrets(call, rpc.SecretReq{Resources: []string{"llm"}})
		var rerr *rpc.Error
		if refused := errors.As(err, &rerr) && rerr.Status == http.StatusForbidden; refused != proxy {
			t.Errorf("model_proxy %v: GET_SECRETS [llm] = %v; want refused only with the proxy", proxy, err)
		}
		if id, b, ok := rig.m.SessionBindings(st.SessionID); !ok || id != "a1" || b.LLM != "m" {
			t.Errorf("SessionBindings(%s) = %q, %+v, %v; want a1 with llm m", st.SessionID, id, b, ok)
		}
		if _, _, ok := rig.m.SessionBindings("no-such-session"); ok {
			t.Error("SessionBindings of an unknown session = ok")
		}
	}
}
