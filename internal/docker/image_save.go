package docker

import (
	"context"
	"io"
)

// ImageSave exports an image (GET /images/{name}/get) as the tar stream
// `docker save` writes: manifest.json naming each layer's tar in order,
// the image's config, and every layer as a tar of its own. Close it when
// done.
func (c *Client) ImageSave(ctx context.Context, ref string) (io.ReadCloser, error) {
	p, err := imagePath(ref, "/get")
	if err != nil {
		return nil, err
	}
	resp, err := c.send(ctx, request{method: "GET", path: p})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}
