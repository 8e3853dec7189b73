package docker

import (
	"context"
	"fmt"
	"net/url"
)

// ImageTag gives the image source (name:tag or ID) the additional name
// target ("name:tag"; a missing tag means latest).
func (c *Client) ImageTag(ctx context.Context, source, target string) error {
	repo, tag := SplitRef(target)
	if repo == "" {
		return fmt.Errorf("docker tag %s: empty target name", source)
	}
	q := url.Values{}
	q.Set("repo", repo)
	if tag != "" {
		q.Set("tag", tag)
	}
	p, err := imagePath(source, "/tag")
	if err != nil {
		return err
	}
	return c.do(ctx, request{method: "POST", path: p, query: q}, nil)
}
