package docker

import (
	"context"
	"time"
)

// Image is the engine's description of one image (GET /images/{name}/json).
type Image struct {
	ID           string `json:"Id"` // "sha256:..."
	RepoTags     []string
	RepoDigests  []string
	Parent       string
	Comment      string
	Created      time.Time
	Size         int64
	Architecture string
	Os           string
	// Config is the image's default container configuration (Cmd,
	// Entrypoint, Env, Labels, User, WorkingDir); Image and HostConfig-only
	// fields are empty.
	Config *ContainerConfig
}

// ImageInspect describes the image named by ref (name:tag or ID). A missing
// image is an *APIError for which IsNotFound is true.
func (c *Client) ImageInspect(ctx context.Context, ref string) (Image, error) {
	var img Image
	p, err := imagePath(ref, "/json")
	if err != nil {
		return img, err
	}
	err = c.do(ctx, request{method: "GET", path: p}, &img)
	return img, err
}
