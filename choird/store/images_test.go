package store

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
)

// A build's record lands in agent_images and in the agents row (§23.1);
// the newest record of a tag is the one a start checks; recording the same
// image again is idempotent.
func TestImageRecords(t *testing.T) {
	s := newStore(t, Config{}, "agent-1")
	ctx := context.Background()
	const tag = "choir-agent-agent-1:0123456789ab"
	if _, err := s.ImageByTag(ctx, tag); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ImageByTag(never built) = %v; want ErrNotFound", err)
	}
	if recorded, err := s.AgentHasImages(ctx, "agent-1"); recorded || err != nil {
		t.Fatalf("AgentHasImages(agent-1) before any build = %v, %v; want false", recorded, err)
	}
	v1 := json.RawMessage(`{"agent_id":"agent-1","image_version":"0123456789ab","tool_manifest_hash":"t1"}`)
	cfg := json.RawMessage(`{"repo":{"url":"file:///r"}}`)
	for range 2 {
		if err := s.RecordImage(ctx, ImageRecord{ImageID: "sha256:aaaa", Tag: tag, AgentID: "agent-1", Version: v1, Config: cfg}); err != nil {
			t.Fatalf("RecordImage() = %v", err)
		}
	}
	got, err := s.ImageByTag(ctx, tag)
	if err != nil || got.ImageID != "sha256:aaaa" || got.AgentID != "agent-1" || !jsonEqual(t, got.Version, v1) {
		t.Fatalf("ImageByTag() = %+v, %v; want the record of sha256:aaaa", got, err)
	}
	if recorded, err := s.AgentHasImages(ctx, "agent-1"); !recorded || err != nil {
		t.Errorf("AgentHasImages(agent-1) after a build = %v, %v; want true", recorded, err)
	}
	var version string
	var config json.RawMessage
	if err := s.pool.QueryRow(ctx, s.q(`SELECT image_version, config FROM choir_control.agents WHERE agent_id = 'agent-1'`)).Scan(&version, &config); err != nil {
		t.Fatal(err)
	}
	if version != "0123456789ab" || !jsonEqual(t, config, cfg) {
		t.Errorf("agents row = %q %s; want the image version and the agent's config", version, config)
	}
	// The same tag built again to another image (the first was altered
	// and rebuilt): the newest record wins.
	if err := s.RecordImage(ctx, ImageRecord{ImageID: "sha256:bbbb", Tag: tag, AgentID: "agent-1", Version: v1}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ImageByTag(ctx, tag); err != nil || got.ImageID != "sha256:bbbb" {
		t.Errorf("ImageByTag() after a rebuild = %+v, %v; want sha256:bbbb", got, err)
	}
	if err := s.RecordImage(ctx, ImageRecord{ImageID: "sha256:cccc", Tag: tag, AgentID: "agent-1", Version: json.RawMessage(`not json`)}); err == nil {
		t.Error("RecordImage(a version.json that is not JSON) succeeded")
	}
}
