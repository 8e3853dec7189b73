package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
)

// BuildOptions are the parameters of POST /build. The legacy builder is
// used (the client never sends version=2) and base images are never pulled
// (never pull=1): FROM must name an image the engine already has.
type BuildOptions struct {
	Tags       []string          // t: name:tag for the result; repeatable
	Dockerfile string            // dockerfile: path within the context; "" means Dockerfile
	Labels     map[string]string // labels: set on the image
	BuildArgs  map[string]string // buildargs: values for ARG

	// KeepIntermediate sends rm=0, keeping the containers of successful
	// steps. By default (rm=1) the engine removes them.
	KeepIntermediate bool
	// ForceRemove sends forcerm=1: remove intermediate containers even
	// when the build fails.
	ForceRemove bool
	NoCache     bool // nocache: do not reuse cached steps

	// Progress, when set, is called with every message of the build's
	// progress stream as the engine sends it, so that a user can watch a
	// long build step by step.
	Progress ProgressFunc
}

// BuildResult is a successful build.
type BuildResult struct {
	ImageID string // "sha256:..."
}

// maxBuildOutput bounds BuildError.Output.
const maxBuildOutput = 8 << 10

// ImageBuild builds an image from buildContext, a tar archive holding the
// Dockerfile and the files it uses, streamed to the engine as it is read.
// It returns when the build is over. A Dockerfile the engine cannot parse
// is an *APIError (HTTP 400); a step that fails is a *BuildError naming the
// step and carrying the engine's message and the step's output.
func (c *Client) ImageBuild(ctx context.Context, buildContext io.Reader, opts BuildOptions) (BuildResult, error) {
	q := url.Values{}
	for _, t := range opts.Tags {
		q.Add("t", t)
	}
	if opts.Dockerfile != "" {
		q.Set("dockerfile", opts.Dockerfile)
	}
	if len(opts.Labels) > 0 {
		b, err := json.Marshal(opts.Labels)
		if err != nil {
			return BuildResult{}, fmt.Errorf("docker build: encode labels: %w", err)
		}
		q.Set("labels", string(b))
	}
	if len(opts.BuildArgs) > 0 {
		b, err := json.Marshal(opts.BuildArgs)
		if err != nil {
			return BuildResult{}, fmt.Errorf("docker build: encode buildargs: %w", err)
		}
		q.Set("buildargs", string(b))
	}
	q.Set("rm", boolString(!opts.KeepIntermediate))
	if opts.ForceRemove {
		q.Set("forcerm", "1")
	}
	if opts.NoCache {
		q.Set("nocache", "1")
	}
	resp, err := c.send(ctx, request{method: "POST", path: "/build", query: q, body: buildContext, contentType: "application/x-tar"})
	if err != nil {
		return BuildResult{}, err
	}
	defer resp.Body.Close()

	var (
		res    BuildResult
		step   string
		output strings.Builder
		built  string // from "Successfully built <id>", when no aux ID came
	)
	err = readStream(resp.Body, func(m JSONMessage) {
		if opts.Progress != nil {
			opts.Progress(m)
		}
		if len(m.Aux) > 0 {
			var aux struct{ ID string }
			if json.Unmarshal(m.Aux, &aux) == nil && aux.ID != "" {
				res.ImageID = aux.ID
			}
		}
		if m.Stream == "" {
			return
		}
		if s, ok := strings.CutPrefix(m.Stream, "Step "); ok {
			step = "Step " + strings.TrimSpace(s)
			output.Reset()
			return
		}
		if id, ok := strings.CutPrefix(m.Stream, "Successfully built "); ok {
			built = strings.TrimSpace(id)
		}
		output.WriteString(m.Stream)
		if output.Len() > 2*maxBuildOutput {
			tail := output.String()[output.Len()-maxBuildOutput:]
			output.Reset()
			output.WriteString(tail)
		}
	})
	if err != nil {
		var se *StreamError
		if errors.As(err, &se) {
			out := output.String()
			if len(out) > maxBuildOutput {
				out = out[len(out)-maxBuildOutput:]
			}
			return BuildResult{}, &BuildError{Step: step, Message: se.Message, Code: se.Code, Output: out}
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return BuildResult{}, fmt.Errorf("docker build: %w", ctxErr)
		}
		return BuildResult{}, fmt.Errorf("docker build: %w", err)
	}
	if res.ImageID == "" {
		res.ImageID = built
	}
	if res.ImageID == "" {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return BuildResult{}, fmt.Errorf("docker build: %w", ctxErr)
		}
		return BuildResult{}, fmt.Errorf("docker build: the progress stream ended without an image ID (last step: %q)", step)
	}
	return res, nil
}
