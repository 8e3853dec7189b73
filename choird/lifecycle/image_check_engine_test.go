package lifecycle

import (
	"archive/tar"
	"bytes"
	"context"
	"strings"
	"testing"

	"choir/choird/lease"
	"choir/internal/docker"
	"choir/internal/manifest"
	"choir/internal/rpc"
)

// An agent image altered outside choird and retagged with the same tag (a
// tool manifest added under /choir/tools, the version.json untouched) is
// refused at INIT_HELLO on a real engine, with the real choir-agent
// hashing what it finds: the start fails naming the fields that differ and
// what to run, the container is removed, the leases are released and
// `agent status` says why. The image as built starts.
func TestAlteredImageIsRefusedOnARealEngine(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	const agent, ref = "lc-agent-1", "choir-agent-lc-agent-1:test1"
	built, err := h.dc.ImageInspect(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	none := manifest.Hash(nil) // the test image has no tools or skills
	h.m.Images = fakeImages{ref: {ImageID: built.ID, Version: rpc.ImageInfo{AgentID: agent, ImageVersion: "test1", ToolManifestHash: none, SkillManifestHash: none}}}

	if _, err := h.m.Start(ctx, agent, lease.Overrides{}); err != nil {
		t.Fatalf("Start(%s) of the image as built = %v; want it to start", agent, err)
	}
	if err := h.m.Stop(ctx, agent); err != nil {
		t.Fatal(err)
	}

	// Outside choird: a tool added on top, tagged as the built image.
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	for _, f := range []struct{ name, body string }{
		{"Dockerfile", "FROM " + ref + "\nCOPY extra.json /choir/tools/agent/extra.json\n"},
		{"extra.json", `{"llm":{"name":"extra","description":"x","parameters":{"type":"object"}},"runtime":{}}`},
	} {
		tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body))})
		tw.Write([]byte(f.body))
	}
	tw.Close()
	altered, err := h.dc.ImageBuild(ctx, &ctxTar, docker.BuildOptions{Tags: []string{ref, "choir-agent-" + agent + ":latest"}})
	if err != nil {
		t.Fatalf("alter the image: %v", err)
	}
	if altered.ImageID == built.ID {
		t.Fatal("the altered image has the built image's id")
	}

	_, err = h.m.Start(ctx, agent, lease.Overrides{Fresh: true})
	if err == nil {
		t.Fatalf("Start(%s) of an altered image succeeded; want it refused", agent)
	}
	for _, want := range []string{"tool_manifest_hash is ", "image_id is ", "choirctl agent build " + agent} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Start(altered image) = %v; want it to say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "skill_manifest_hash") || strings.Contains(err.Error(), "image_version is") {
		t.Errorf("Start(altered image) = %v; it names fields that did not change", err)
	}
	left, err := h.dc.ContainerList(ctx, docker.ContainerListOptions{All: true, Filters: docker.Filters{"label": {LabelInstance + "=" + h.m.Instance, LabelAgent + "=" + agent}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("%d containers of %s left after the refused start; want them removed", len(left), agent)
	}
	if holder, held := h.m.Leases.Holder(lease.Resource{Kind: lease.Workspace, Name: "main"}); held {
		t.Errorf("workspace main still leased to %s after the refused start", holder)
	}
	st, err := h.m.Status(agent)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != "stopped" || len(st.Degraded) == 0 || !strings.Contains(st.Degraded[0], "tool_manifest_hash") {
		t.Errorf("agent status after the refused start: state %s, degraded %q; want stopped, saying tool_manifest_hash differs", st.State, st.Degraded)
	}
}
