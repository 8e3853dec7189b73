package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"choir/internal/config"
	"choir/internal/docker"
	"choir/internal/rpc"
)

// fakeImages is the build's record of images, by tag.
type fakeImages map[string]ImageRecord

var _ ImageRecords = fakeImages(nil)

func (f fakeImages) AgentHasImages(_ context.Context, agentID string) (bool, error) {
	for _, r := range f {
		if r.Version.AgentID == agentID {
			return true, nil
		}
	}
	return false, nil
}

func (f fakeImages) ImageRecord(_ context.Context, tag string) (ImageRecord, error) {
	r, ok := f[tag]
	if !ok {
		return ImageRecord{}, fmt.Errorf("image %s: %w", tag, ErrNoImageRecord)
	}
	return r, nil
}

// imageDocker answers inspect with the image id the container runs.
type imageDocker struct {
	stubDocker
	imageID string
}

func (d *imageDocker) ContainerInspect(context.Context, string) (docker.Container, error) {
	return docker.Container{Image: d.imageID}, nil
}

const builtImageID = "sha256:1111111111111111111111111111111111111111111111111111111111111111"

var builtVersion = rpc.ImageInfo{AgentID: "a-1", ImageVersion: "v1", GlobalRepoCommit: "g1", AgentRepoCommit: "a1", ToolManifestHash: "t1", SkillManifestHash: "k1"}

// A hello that reports anything other than what the build recorded of the
// image choird started (or a container running another image under that
// tag) is refused with a 409 naming the field and `choirctl agent build`;
// the start's refusal is kept for `agent status` until a hello is accepted.
func TestInitHelloChecksTheImageAgainstTheBuildRecord(t *testing.T) {
	good := rpc.InitHelloReq{AgentID: "a-1", SessionID: "s-1", ImageVersion: "v1", GlobalRepoCommit: "g1", AgentRepoCommit: "a1", ToolManifestHash: "t1", SkillManifestHash: "k1"}
	cases := []struct {
		name    string
		edit    func(*rpc.InitHelloReq)
		imageID string
		field   string // "" means accepted
	}{
		{"as built", func(*rpc.InitHelloReq) {}, builtImageID, ""},
		{"image_version", func(r *rpc.InitHelloReq) { r.ImageVersion = "v2" }, builtImageID, "image_version"},
		{"global_repo_commit", func(r *rpc.InitHelloReq) { r.GlobalRepoCommit = "g2" }, builtImageID, "global_repo_commit"},
		{"agent_repo_commit", func(r *rpc.InitHelloReq) { r.AgentRepoCommit = "a2" }, builtImageID, "agent_repo_commit"},
		{"tool_manifest_hash (a tool added)", func(r *rpc.InitHelloReq) { r.ToolManifestHash = "t2" }, builtImageID, "tool_manifest_hash"},
		{"skill_manifest_hash (a skill changed)", func(r *rpc.InitHelloReq) { r.SkillManifestHash = "k2" }, builtImageID, "skill_manifest_hash"},
		{"commits missing (an older agent)", func(r *rpc.InitHelloReq) { r.GlobalRepoCommit, r.AgentRepoCommit = "", "" }, builtImageID, "global_repo_commit"},
		{"image_id (retagged, same report)", func(*rpc.InitHelloReq) {}, "sha256:2222222222222222222222222222222222222222222222222222222222222222", "image_id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, r, ctx := handlerManager(t, 3)
			m.Docker = &imageDocker{imageID: c.imageID}
			m.Images = fakeImages{"choir-agent-a-1:v1": {ImageID: builtImageID, Version: builtVersion}}
			r.Image, r.ImageVersion, r.ContainerID, r.state = "choir-agent-a-1:v1", "v1", "c0ffee", StateStarting
			req := good
			c.edit(&req)
			_, err := m.HandleInitHello(ctx, req)
			if c.field == "" {
				if err != nil {
					t.Fatalf("HandleInitHello(as built) = %v; want accepted", err)
				}
				if r.getState() != StateRunning {
					t.Errorf("state after an accepted hello = %s; want running", r.getState())
				}
				return
			}
			var rerr *rpc.Error
			if !errors.As(err, &rerr) || rerr.Status != http.StatusConflict {
				t.Fatalf("HandleInitHello(%s differs) = %v; want a 409", c.field, err)
			}
			for _, want := range []string{c.field + " is ", "choir-agent-a-1:v1", "choirctl agent build a-1"} {
				if !strings.Contains(rerr.Message, want) {
					t.Errorf("refusal = %q; want it to contain %q", rerr.Message, want)
				}
			}
			if r.getState() != StateStarting {
				t.Errorf("state after a refused hello = %s; want still starting", r.getState())
			}
			if r.refusal() != rerr.Message {
				t.Errorf("the start would report %q; want the refusal %q", r.refusal(), rerr.Message)
			}
			m.end(r, StatusStopped, "INIT_HELLO refused: "+r.refusal())
			l, _ := m.Config()
			l.Config.Agents = map[string]config.Agent{"a-1": {}}
			st, err := m.Status("a-1")
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Degraded) == 0 || !strings.Contains(st.Degraded[0], c.field) {
				t.Errorf("agent status after the refusal: degraded = %q; want the refusal naming %s", st.Degraded, c.field)
			}
		})
	}
}

// A tag the build never recorded is refused when choird recorded other
// images of the agent (the tag was made elsewhere), and accepted, its
// version still compared, when it recorded none (built before records).
func TestInitHelloWithAnUnrecordedImage(t *testing.T) {
	for _, tt := range []struct {
		name    string
		records fakeImages
		version string
		refused string
	}{
		{"other images recorded", fakeImages{"choir-agent-a-1:v0": {ImageID: builtImageID, Version: rpc.ImageInfo{AgentID: "a-1", ImageVersion: "v0"}}}, "v1", "no build record"},
		{"none recorded", fakeImages{"choir-agent-b:v1": {Version: rpc.ImageInfo{AgentID: "b"}}}, "v1", ""},
		{"none recorded, version differs", fakeImages{}, "v9", "image_version is "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, r, ctx := handlerManager(t, 3)
			m.Docker = &imageDocker{imageID: builtImageID}
			m.Images = tt.records
			r.Image, r.ImageVersion, r.ContainerID, r.state = "choir-agent-a-1:v1", "v1", "c0ffee", StateStarting
			_, err := m.HandleInitHello(ctx, rpc.InitHelloReq{AgentID: "a-1", SessionID: "s-1", ImageVersion: tt.version})
			if tt.refused == "" {
				if err != nil {
					t.Fatalf("HandleInitHello(unrecorded, nothing recorded) = %v; want accepted", err)
				}
				return
			}
			var rerr *rpc.Error
			if !errors.As(err, &rerr) || rerr.Status != http.StatusConflict || !strings.Contains(rerr.Message, tt.refused) || !strings.Contains(rerr.Message, "choirctl agent build a-1") {
				t.Fatalf("HandleInitHello(unrecorded image) = %v; want a 409 saying %q and what to run", err, tt.refused)
			}
		})
	}
}
