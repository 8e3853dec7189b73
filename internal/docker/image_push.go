package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// PushResult is what the registry recorded for a pushed image.
type PushResult struct {
	Tag    string
	Digest string // "sha256:...": the manifest's digest, the name every node pulls
	Size   int64  // the manifest's size in bytes
}

// ImagePush pushes the local image ref ("registry:port/name:tag"; the tag
// defaults to latest) to the registry its name starts with (POST
// /images/{name}/push?tag=), presenting auth (a zero RegistryAuth for a
// registry without credentials: the engine wants the header either way).
// It returns when the push is over, with the digest the registry gave the
// manifest. progress, when not nil, sees each message of the stream.
//
// Failures arrive inside the HTTP 200 stream and are a *StreamError: a
// name the engine has no image for ("An image does not exist locally with
// the tag"), a registry that cannot be reached, refused credentials.
func (c *Client) ImagePush(ctx context.Context, ref string, auth RegistryAuth, progress ProgressFunc) (PushResult, error) {
	repo, tag := SplitRef(ref)
	if strings.Contains(repo, "@") {
		return PushResult{}, fmt.Errorf("docker push %s: push a name:tag, not a digest", ref)
	}
	if tag == "" {
		tag = "latest"
	}
	p, err := imagePath(repo, "/push")
	if err != nil {
		return PushResult{}, err
	}
	h, err := auth.header()
	if err != nil {
		return PushResult{}, err
	}
	q := url.Values{}
	q.Set("tag", tag)
	resp, err := c.send(ctx, request{method: "POST", path: p, query: q, header: http.Header{registryAuthHeader: {h}}})
	if err != nil {
		return PushResult{}, err
	}
	defer resp.Body.Close()
	var res PushResult
	err = readStream(resp.Body, func(m JSONMessage) {
		if progress != nil {
			progress(m)
		}
		if len(m.Aux) > 0 {
			var aux PushResult
			if json.Unmarshal(m.Aux, &aux) == nil && aux.Digest != "" {
				res = aux
			}
		}
		// "latest: digest: sha256:... size: 527" precedes the aux message;
		// it is the digest's only sign should aux be missing.
		if res.Digest == "" {
			if d, ok := digestFromStatus(m.Status); ok {
				res = d
			}
		}
	})
	if err != nil {
		var se *StreamError
		if !errors.As(err, &se) {
			if ctxErr := ctx.Err(); ctxErr != nil {
				err = ctxErr
			}
		}
		return PushResult{}, fmt.Errorf("docker push %s:%s: %w", repo, tag, err)
	}
	if res.Digest == "" {
		return PushResult{}, fmt.Errorf("docker push %s:%s: the progress stream ended without a digest", repo, tag)
	}
	return res, nil
}

// digestFromStatus reads "TAG: digest: sha256:HEX size: N".
func digestFromStatus(s string) (PushResult, bool) {
	tag, rest, ok := strings.Cut(s, ": digest: ")
	if !ok {
		return PushResult{}, false
	}
	f := strings.Fields(rest)
	if len(f) != 3 || f[1] != "size:" || !strings.HasPrefix(f[0], "sha256:") {
		return PushResult{}, false
	}
	size, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return PushResult{}, false
	}
	return PushResult{Tag: tag, Digest: f[0], Size: size}, true
}
