package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
)

// ImportOptions are the optional parameters of an image import.
type ImportOptions struct {
	// Changes are Dockerfile instructions applied to the imported image,
	// e.g. `CMD ["sh"]`, `ENV PATH=/bin`, `LABEL k=v`, `WORKDIR /w`: an
	// imported image has no CMD otherwise.
	Changes  []string
	Message  string       // commit message recorded in the image history
	Progress ProgressFunc // called with each message of the progress stream
}

// ImageImport creates an image from rootfs, a tar archive of a root file
// system streamed to the engine as it is read (POST
// /images/create?fromSrc=-), tagged ref ("name" or "name:tag"; "" leaves it
// untagged). It returns the new image's ID. This is how an image is made
// with no registry at all.
func (c *Client) ImageImport(ctx context.Context, rootfs io.Reader, ref string, opts ImportOptions) (string, error) {
	q := url.Values{}
	q.Set("fromSrc", "-")
	if ref != "" {
		repo, tag := SplitRef(ref)
		q.Set("repo", repo)
		if tag != "" {
			q.Set("tag", tag)
		}
	}
	if opts.Message != "" {
		q.Set("message", opts.Message)
	}
	for _, ch := range opts.Changes {
		q.Add("changes", ch)
	}
	resp, err := c.send(ctx, request{method: "POST", path: "/images/create", query: q, body: rootfs, contentType: "application/x-tar"})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var id string
	err = readStream(resp.Body, func(m JSONMessage) {
		if opts.Progress != nil {
			opts.Progress(m)
		}
		if strings.HasPrefix(m.Status, "sha256:") {
			id = m.Status
		}
	})
	if err != nil {
		var se *StreamError
		if !errors.As(err, &se) {
			if ctxErr := ctx.Err(); ctxErr != nil {
				err = ctxErr
			}
		}
		return "", fmt.Errorf("docker import %s: %w", ref, err)
	}
	if id == "" {
		return "", fmt.Errorf("docker import %s: the engine's answer held no image ID", ref)
	}
	return id, nil
}

// SplitRef splits an image reference "name:tag" into name and tag; the tag
// is "" when ref has none. A registry port ("localhost:5000/app") is not
// mistaken for a tag, and a digest ("app@sha256:...") stays in name.
func SplitRef(ref string) (repo, tag string) {
	if strings.Contains(ref, "@") {
		return ref, ""
	}
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i+1:], "/") {
		return ref, ""
	}
	return ref[:i], ref[i+1:]
}
