package docker

import (
	"context"
	"net/url"
)

// CreateResponse is the engine's answer to a container create.
type CreateResponse struct {
	ID       string `json:"Id"`
	Warnings []string
}

// ContainerCreate creates (but does not start) a container from config and
// host, named name ("" lets the engine pick one). host may be nil. A name in
// use is an *APIError for which IsConflict is true; an invalid mount (such
// as a bind whose source does not exist) one for which IsBadRequest is true.
func (c *Client) ContainerCreate(ctx context.Context, name string, config *ContainerConfig, host *HostConfig) (CreateResponse, error) {
	q := url.Values{}
	if name != "" {
		q.Set("name", name)
	}
	body := struct {
		*ContainerConfig
		HostConfig *HostConfig `json:",omitempty"`
	}{config, host}
	if config == nil {
		body.ContainerConfig = &ContainerConfig{}
	}
	r, err := jsonRequest("POST", "/containers/create", q, body)
	if err != nil {
		return CreateResponse{}, err
	}
	var out CreateResponse
	err = c.do(ctx, r, &out)
	return out, err
}
