package rpc

import (
	"fmt"
	"net/http"
	"strings"
)

// ModelBase is the base URL, for an OpenAI-compatible client, of the
// named model carried by choird over this client's transport: the client
// appends "/chat/completions". Send with ModelTransport.
func (c *Client) ModelBase(name string) string {
	return c.base + ModelPathPrefix + name
}

// ModelTransport sends model calls over this client's transport (the
// agent's socket, or the HTTPS endpoint with its CA) with the session's
// envelope: its session id, a request id and its lease token as the
// bearer, replacing any Authorization the caller set. It refuses a URL
// outside ModelBase's, so the lease token never goes anywhere else.
func (c *Client) ModelTransport() http.RoundTripper {
	return modelTransport{c: c}
}

type modelTransport struct{ c *Client }

func (t modelTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasPrefix(req.URL.String(), t.c.base+ModelPathPrefix) {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("rpc: model call to %s refused: choird carries model calls only under %s%s", req.URL.Redacted(), t.c.base, ModelPathPrefix)
	}
	out := req.Clone(req.Context())
	out.Header.Set(HeaderRequestID, NewRequestID())
	out.Header.Set(HeaderSessionID, t.c.sessionID)
	out.Header.Set("Authorization", "Bearer "+t.c.token)
	return t.c.hc.Transport.RoundTrip(out)
}
