package docker

import (
	"context"
	"net/http"
)

// ServiceCreateResponse is the engine's answer to a service create.
type ServiceCreateResponse struct {
	ID       string
	Warnings []string
}

// ServiceCreate creates a service from spec, asked of a manager. auth,
// when not nil, is sent as X-Registry-Auth so that the nodes can pull
// spec's image from a registry that wants credentials. A name in use is an
// *APIError for which IsConflict is true.
//
// Give the image by digest ("name@sha256:..."): with a tag, each node
// resolves it when it pulls, and two nodes may run different bytes.
func (c *Client) ServiceCreate(ctx context.Context, spec ServiceSpec, auth *RegistryAuth) (ServiceCreateResponse, error) {
	r, err := jsonRequest("POST", "/services/create", nil, spec)
	if err != nil {
		return ServiceCreateResponse{}, err
	}
	if auth != nil {
		h, err := auth.header()
		if err != nil {
			return ServiceCreateResponse{}, err
		}
		r.header = http.Header{registryAuthHeader: {h}}
	}
	var out ServiceCreateResponse
	err = c.do(ctx, r, &out)
	return out, err
}
