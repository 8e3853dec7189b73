package session

import (
	"context"
	"encoding/json"
	"errors"

	"choir/internal/rpc"
)

// summarize makes the session summary (§11.8 step 2) through
// Hooks.Summary, once the lanes are at their safe point, when the stop was
// asked of the session: choird's shutdown push (agent stop, agent update)
// or End from inside the agent. A signal (ctx, Run's context, ended: the
// container is being stopped, and the engine kills it within its stop
// timeout) and a session choird ended (loopErr) skip it, with a log line.
// A summary over rpc.MaxSummaryBytes or not a JSON object is dropped, with
// a log line, rather than have choird refuse the final heartbeat.
func (s *Session) summarize(ctx context.Context, loopErr error) json.RawMessage {
	if s.Hooks.Summary == nil {
		return nil
	}
	switch {
	case ctx.Err() != nil:
		s.log.Info("session summary skipped: the agent was stopped by a signal, not by a graceful stop")
		return nil
	case loopErr != nil && !errors.Is(loopErr, context.Canceled):
		s.log.Info("session summary skipped: the session did not end gracefully", "error", loopErr.Error())
		return nil
	}
	doc := s.Hooks.Summary(ctx) // a signal now cuts it short
	if len(doc) == 0 {
		return nil
	}
	if err := rpc.CheckSummary(doc, true); err != nil {
		s.log.Warn("session summary dropped", "error", err.Error())
		return nil
	}
	return doc
}
