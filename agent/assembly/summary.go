package assembly

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"choir/agent/lane"
	"choir/internal/config"
)

// summary is the session's Summary hook (§11.8 step 2): the lanes' session
// summary, bounded by session_summary_timeout_ms. When there is none it
// logs one line saying why and returns nil: the stop goes on without it.
func (rt *Runtime) summary(ctx context.Context) json.RawMessage {
	rt.mu.Lock()
	ln := rt.lane
	rt.mu.Unlock()
	if ln == nil {
		rt.log.Info("session summary skipped: the lanes never started")
		return nil
	}
	ms := rt.dynamic().Tunables.SessionSummaryTimeoutMS
	if ms <= 0 {
		ms = config.DefaultTunables().SessionSummaryTimeoutMS
	}
	timeout := time.Duration(ms) * time.Millisecond
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	began := time.Now()
	doc, err := ln.SessionSummary(ctx)
	if err != nil {
		rt.log.Warn("session summary skipped: "+summarySkipped(ctx, err, ms), "error", err.Error())
		return nil
	}
	rt.log.Info("session summary made", "bytes", len(doc), "latency_ms", time.Since(began).Milliseconds())
	return doc
}

// summarySkipped says in a few words why there is no summary.
func summarySkipped(ctx context.Context, err error, timeoutMS int) string {
	var be *lane.BudgetError
	switch {
	case errors.As(err, &be):
		return "the session's " + be.Budget + " budget is spent"
	case errors.Is(err, lane.ErrNothingToSummarize):
		return "nothing happened in the session"
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Sprintf("the model did not answer within session_summary_timeout_ms (%d ms)", timeoutMS)
	case errors.Is(err, lane.ErrNoSummaryCall):
		return "the model answered without calling " + lane.SummaryTool
	case errors.Is(err, lane.ErrBadSummary):
		return "the model's summary was refused"
	case ctx.Err() != nil:
		return "the agent was stopped while the summary was being made"
	}
	return "the model call failed"
}
