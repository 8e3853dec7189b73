package build

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Records keeps what each build produced (§15.1): choird's store, where
// INIT_HELLO's check finds it. A Builder without Records keeps nothing
// and reuses any image of the right tag.
type Records interface {
	RecordImage(ctx context.Context, r Record) error
	// RecordedImageID is the image id recorded for tag; an error wrapping
	// ErrNoRecord when there is none.
	RecordedImageID(ctx context.Context, tag string) (string, error)
}

// Record is one image as the build left it.
type Record struct {
	AgentID string
	ImageID string
	Tag     string
	Version Version
	Config  json.RawMessage // the agent's entry of config.json (§23.1 agents.config)
}

// ErrNoRecord: the tag was never recorded.
var ErrNoRecord = errors.New("no build record")

// reusable reports whether an existing image of the tag may be reused: it
// must be the very image a build recorded. An image altered or retagged
// outside choird, or one built before records existed, is built again (the
// engine's cache makes that quick when the original layers are still there).
func (b *Builder) reusable(ctx context.Context, tag, imageID string, say func(string, ...any)) (bool, error) {
	if b.Records == nil {
		return true, nil
	}
	id, err := b.Records.RecordedImageID(ctx, tag)
	switch {
	case errors.Is(err, ErrNoRecord):
		say("agent image %s exists but choird has no record of building it; building it again", tag)
		return false, nil
	case err != nil:
		return false, fmt.Errorf("build: read the record of %s: %w", tag, err)
	case id != imageID:
		say("agent image %s is %s, not the image choird built (%s): it was altered or retagged outside choird; building it again", tag, shortImageID(imageID), shortImageID(id))
		return false, nil
	}
	return true, nil
}

// record stores the result, so a start can verify the image.
func (b *Builder) record(ctx context.Context, res *Result, agentConfig any) error {
	if b.Records == nil {
		return nil
	}
	cfg, err := json.Marshal(agentConfig)
	if err != nil {
		return fmt.Errorf("build: record %s: %w", res.Image, err)
	}
	r := Record{AgentID: res.AgentID, ImageID: res.ImageID, Tag: res.Image, Version: res.Version, Config: cfg}
	if err := b.Records.RecordImage(ctx, r); err != nil {
		return fmt.Errorf("build: record %s in Postgres (a start verifies images against it): %w", res.Image, err)
	}
	return nil
}

func shortImageID(id string) string {
	const prefix = "sha256:"
	if len(id) > len(prefix)+12 && id[:len(prefix)] == prefix {
		return id[len(prefix) : len(prefix)+12]
	}
	return id
}
