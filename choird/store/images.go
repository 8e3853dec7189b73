package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ImageRecord is an agent image as choird's build left it: the engine's
// image id, the tag, and its /choir/version.json (§15.1).
type ImageRecord struct {
	ImageID    string
	Tag        string // choir-agent-<id>:<image version>
	AgentID    string
	Version    json.RawMessage // version.json
	Config     json.RawMessage // the agent's config.json entry, for the agents table
	RecordedAt time.Time
}

// RecordImage stores what a build produced, in one transaction: the image
// row (again for an image that was reused, refreshing its time) and the
// agents row's image_version and config (§23.1).
func (s *Store) RecordImage(ctx context.Context, r ImageRecord) error {
	var v struct {
		ImageVersion string `json:"image_version"`
	}
	if err := json.Unmarshal(r.Version, &v); err != nil {
		return fmt.Errorf("record image %s: version.json: %w", r.Tag, err)
	}
	cfg := r.Config
	if len(cfg) == 0 {
		cfg = json.RawMessage("{}")
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, s.q(`
			INSERT INTO choir_control.agent_images (image_id, tag, agent_id, version, recorded_at)
			VALUES ($1, $2, $3, $4, now())
			ON CONFLICT (image_id, tag) DO UPDATE SET agent_id = EXCLUDED.agent_id, version = EXCLUDED.version, recorded_at = now()`),
			r.ImageID, r.Tag, r.AgentID, r.Version); err != nil {
			return fmt.Errorf("record image %s: %w", r.Tag, err)
		}
		if _, err := tx.Exec(ctx, s.q(`
			INSERT INTO choir_control.agents (agent_id, image_version, config) VALUES ($1, $2, $3)
			ON CONFLICT (agent_id) DO UPDATE SET image_version = EXCLUDED.image_version, config = EXCLUDED.config`),
			r.AgentID, v.ImageVersion, cfg); err != nil {
			return fmt.Errorf("record image %s for agent %s: %w", r.Tag, r.AgentID, err)
		}
		return nil
	})
}

// AgentHasImages reports whether any image of the agent was recorded.
func (s *Store) AgentHasImages(ctx context.Context, agentID string) (bool, error) {
	var recorded bool
	err := s.pool.QueryRow(ctx, s.q(`SELECT EXISTS (SELECT 1 FROM choir_control.agent_images WHERE agent_id = $1)`), agentID).Scan(&recorded)
	if err != nil {
		return false, fmt.Errorf("read the image records of agent %s: %w", agentID, err)
	}
	return recorded, nil
}

// ImageByTag is the newest record of tag; ErrNotFound when choird never
// recorded it (an image built by an older choird, or not by choird).
func (s *Store) ImageByTag(ctx context.Context, tag string) (ImageRecord, error) {
	r := ImageRecord{Tag: tag}
	err := s.pool.QueryRow(ctx, s.q(`
		SELECT image_id, agent_id, version, recorded_at FROM choir_control.agent_images
		WHERE tag = $1 ORDER BY recorded_at DESC LIMIT 1`), tag).Scan(&r.ImageID, &r.AgentID, &r.Version, &r.RecordedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return ImageRecord{}, fmt.Errorf("image %s: %w", tag, ErrNotFound)
	}
	if err != nil {
		return ImageRecord{}, fmt.Errorf("read the record of image %s: %w", tag, err)
	}
	return r, nil
}
