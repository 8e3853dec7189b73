package gateway

import (
	"context"
	"time"
)

// SweepOutboxFiles runs the sweep of orphaned outbox files as if at now.
func (g *Gateway) SweepOutboxFiles(ctx context.Context, now time.Time) { g.sweepOutboxFiles(ctx, now) }
