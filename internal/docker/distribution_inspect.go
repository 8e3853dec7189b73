package docker

import (
	"context"
	"net/http"
)

// DistributionInspect is what a registry holds under a name (GET
// /distribution/{name}/json): the manifest's descriptor and the platforms
// it serves.
type DistributionInspect struct {
	Descriptor Descriptor
	Platforms  []Platform
}

// Descriptor names a manifest in the registry. Its fields are lower case
// on the wire (the OCI descriptor).
type Descriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"` // "sha256:..."
	Size      int64  `json:"size"`
}

// Platform is one platform a manifest serves.
type Platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Variant      string `json:"variant,omitempty"`
}

// DistributionInspect asks the engine to ask the registry about ref
// ("registry:port/name:tag" or "...@sha256:..."): this resolves a tag to
// the digest every node will pull, without pulling. auth may be zero for a
// registry without credentials. A name the registry does not hold is an
// *APIError for which IsNotFound is true ("manifest unknown").
func (c *Client) DistributionInspect(ctx context.Context, ref string, auth RegistryAuth) (DistributionInspect, error) {
	var out DistributionInspect
	p, err := refPath("/distribution/", ref, "/json")
	if err != nil {
		return out, err
	}
	h, err := auth.header()
	if err != nil {
		return out, err
	}
	err = c.do(ctx, request{method: "GET", path: p, header: http.Header{registryAuthHeader: {h}}}, &out)
	return out, err
}
