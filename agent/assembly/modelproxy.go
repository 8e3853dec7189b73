package assembly

import (
	"errors"
	"fmt"
	"net/http"

	"choir/internal/openai"
	"choir/internal/rpc"
)

// Model calls through choird (issue 25 item 1). When INIT_HELLO says
// ModelProxy (a run container without network, or agents.<id>.model_proxy)
// the agent holds no model key: each model's client sends to choird over
// the control plane's own transport (the agent's socket, or the HTTPS
// endpoint with its CA), at POST /v1/model/<name>/chat/completions with
// the lease token, and choird adds the endpoint, the key and the request
// template's headers (choird/modelproxy.go). The request template's body
// fields are still merged here: they hold no secret.

// modelCarrier is the control plane's way to choird's model calls
// (*rpc.Client).
type modelCarrier interface {
	ModelBase(name string) string
	ModelTransport() http.RoundTripper
}

var _ modelCarrier = (*rpc.Client)(nil)

// carrierOf is cp's modelCarrier, or nil when it has none.
func carrierOf(cp rpc.ControlPlane) modelCarrier {
	c, _ := cp.(modelCarrier)
	return c
}

// proxied says whether this session's model calls go through choird.
func (rt *Runtime) proxied() bool { return rt.sess.ModelProxy }

// proxyClient is the client of the named model through choird: no key
// (the transport sends the lease token), every body redacted as
// modelHTTP's, and no redirect followed.
func (rt *Runtime) proxyClient(name string) (*openai.Client, error) {
	if rt.carrier == nil {
		return nil, errors.New("choird carries this session's model calls, but the control plane cannot reach them: restart the agent with --control-plane=uds or http")
	}
	cacheKey := "choird\x00" + name
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if c := rt.clients[cacheKey]; c != nil {
		return c, nil
	}
	hc := &http.Client{
		Transport:     redactBody{base: rt.carrier.ModelTransport(), r: rt.sess.Redactor},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	c, err := openai.New(openai.Config{Endpoint: rt.carrier.ModelBase(name), HTTPClient: hc})
	if err != nil {
		return nil, fmt.Errorf("the model %q through choird: %w", name, err)
	}
	rt.clients[cacheKey] = c
	return c, nil
}
