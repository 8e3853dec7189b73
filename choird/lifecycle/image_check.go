package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"choir/internal/rpc"
)

// ImageRecords is the build's record of every agent image it made (§15.1):
// the engine's image id and the version.json it baked in, by tag. choird's
// store provides it.
type ImageRecords interface {
	// ImageRecord is the newest record of tag, or an error wrapping
	// ErrNoImageRecord when the build never recorded it.
	ImageRecord(ctx context.Context, tag string) (ImageRecord, error)
	// AgentHasImages reports whether any image of the agent was recorded.
	AgentHasImages(ctx context.Context, agentID string) (bool, error)
}

// ImageRecord is what the build recorded of one image.
type ImageRecord struct {
	ImageID string
	Version rpc.ImageInfo
}

// ErrNoImageRecord: the image was not built by this choird (or by one
// before image records existed).
var ErrNoImageRecord = errors.New("no record of this image")

// checkImage compares what the agent reports at INIT_HELLO (version.json's
// version and commits; the manifest hashes it computed from the files it
// found) and the image its container runs with the build's record of the
// tag choird started. Any difference refuses the session with a 409
// naming the fields and what to run. A tag with no record is refused the
// same way when the agent has recorded images (it was built by this
// choird, so the unrecorded tag was made elsewhere); when it has none
// (images from before records existed) it is accepted with a warning in
// the log. Without ImageRecords (tests that have no store) only the
// version is compared.
func (m *Manager) checkImage(ctx context.Context, r *Run, req rpc.InitHelloReq) error {
	rebuild := fmt.Sprintf("rebuild it with `choirctl agent build %s`, then start the agent again", r.AgentID)
	if m.Images == nil {
		if req.ImageVersion != r.ImageVersion {
			return rpc.Errorf(http.StatusConflict, rpc.CodeFailedPrecondition,
				"image %s: image_version is %q in the container, %q in the tag choird started: the image changed outside choird; %s", r.Image, req.ImageVersion, r.ImageVersion, rebuild)
		}
		return nil
	}
	rec, err := m.Images.ImageRecord(ctx, r.Image)
	if errors.Is(err, ErrNoImageRecord) {
		recorded, err := m.Images.AgentHasImages(ctx, r.AgentID)
		if err != nil {
			return rpc.Errorf(http.StatusServiceUnavailable, rpc.CodeUnavailable, "cannot verify image %s: %v", r.Image, err)
		}
		if recorded {
			return rpc.Errorf(http.StatusConflict, rpc.CodeFailedPrecondition,
				"image %s has no build record in choird although choird built other images of %s: it was tagged outside choird; %s", r.Image, r.AgentID, rebuild)
		}
		m.logf(r, "image not verified: choird has no build record of any image of this agent (built by an older choird?); `choirctl agent build` records it",
			"image", r.Image, "image_version", req.ImageVersion)
		if req.ImageVersion != r.ImageVersion {
			return rpc.Errorf(http.StatusConflict, rpc.CodeFailedPrecondition,
				"image %s: image_version is %q in the container, %q in the tag choird started: the image changed outside choird; %s", r.Image, req.ImageVersion, r.ImageVersion, rebuild)
		}
		return nil
	}
	if err != nil {
		return rpc.Errorf(http.StatusServiceUnavailable, rpc.CodeUnavailable, "cannot verify image %s: %v", r.Image, err)
	}
	var diffs []string
	diff := func(field, got, want string) {
		if got != want {
			diffs = append(diffs, fmt.Sprintf("%s is %q in the container, %q in the build record", field, clip(got), want))
		}
	}
	if rec.ImageID != "" {
		c, err := m.runtime().Inspect(ctx, r.ContainerID)
		if err != nil {
			return rpc.Errorf(http.StatusServiceUnavailable, rpc.CodeUnavailable, "cannot verify image %s: inspect container %s: %v", r.Image, shortID(r.ContainerID), err)
		}
		diff("image_id", c.ImageID, rec.ImageID)
	}
	v := rec.Version
	diff("image_version", req.ImageVersion, v.ImageVersion)
	diff("global_repo_commit", req.GlobalRepoCommit, v.GlobalRepoCommit)
	diff("agent_repo_commit", req.AgentRepoCommit, v.AgentRepoCommit)
	diff("tool_manifest_hash", req.ToolManifestHash, v.ToolManifestHash)
	diff("skill_manifest_hash", req.SkillManifestHash, v.SkillManifestHash)
	if len(diffs) == 0 {
		return nil
	}
	return rpc.Errorf(http.StatusConflict, rpc.CodeFailedPrecondition,
		"image %s is not the image choird built: %s; it was altered or retagged outside choird: %s", r.Image, strings.Join(diffs, "; "), rebuild)
}

// refuseImage remembers why INIT_HELLO was refused, for the start that
// waits (it reports this, not just that the agent exited) and for `agent
// status` until the agent's next session says hello.
func (m *Manager) refuseImage(r *Run, err error) {
	msg := err.Error()
	var e *rpc.Error
	if errors.As(err, &e) {
		msg = e.Message
	}
	r.mu.Lock()
	r.refused = msg
	r.mu.Unlock()
	m.mu.Lock()
	if m.imageRefused == nil {
		m.imageRefused = map[string]string{}
	}
	m.imageRefused[r.AgentID] = msg
	m.mu.Unlock()
	m.logf(r, "INIT_HELLO refused: image not verified", "error", msg)
}

// imageAccepted clears the last refusal once a session of the agent said
// hello.
func (m *Manager) imageAccepted(agentID string) {
	m.mu.Lock()
	delete(m.imageRefused, agentID)
	m.mu.Unlock()
}

// lastImageRefusal is what `agent status` shows of a stopped agent whose
// last start was refused.
func (m *Manager) lastImageRefusal(agentID string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if msg := m.imageRefused[agentID]; msg != "" {
		return []string{"last start refused: " + msg}
	}
	return nil
}

// refusal is why INIT_HELLO was refused, "" when it was not.
func (r *Run) refusal() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refused
}
