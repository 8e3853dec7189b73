package arbiter

import (
	"context"
	"encoding/json"
	"log/slog"

	"choir/agent/tool"
	"choir/internal/logs"
)

// Tool call traces (§22.1): one record when a lane proposes a call, one
// when its locks are held (with the time it waited), one when its result
// is committed and its locks released (status, error code, duration). The
// session id comes with Config.Log; each record names the lane. The same
// facts are in the commit log, which choird stores: ToolCallRequested,
// ToolCallCommitted, and ToolResultCommitted with duration_ms and
// lock_wait_ms.

// Keys of the trace records.
const (
	keyCall       = "call_id"
	keyTool       = "tool"
	keyStatus     = "status"
	keyCode       = "error_code"
	keyDuration   = "duration_ms"
	keyLockWait   = "lock_wait_ms"
	keyLocks      = "locks"
	keyReleased   = "locks_released"
	msgProposed   = "tool call proposed"
	msgLocked     = "tool call holds its locks"
	msgToolResult = "tool call finished"
)

func (a *Arbiter) traceProposed(inv *invocation) {
	if !a.cfg.Log.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	a.cfg.Log.Info(msgProposed, logs.KeyLane, string(inv.p.Lane), keyCall, inv.p.ID, keyTool, inv.p.Tool)
}

func (a *Arbiter) traceLocked(inv *invocation) {
	if len(inv.locks) == 0 || !a.cfg.Log.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	a.cfg.Log.Info(msgLocked, logs.KeyLane, string(inv.p.Lane), keyCall, inv.p.ID, keyTool, inv.p.Tool,
		keyLocks, len(inv.locks), keyLockWait, inv.lockWait.Milliseconds())
}

func (a *Arbiter) traceFinished(inv *invocation, out Outcome, released int) {
	if !a.cfg.Log.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	attrs := []any{logs.KeyLane, string(inv.p.Lane), keyCall, inv.p.ID, keyTool, inv.p.Tool,
		keyStatus, string(out.Status), keyDuration, inv.ran.Milliseconds(), keyLockWait, inv.lockWait.Milliseconds(),
		keyReleased, released}
	if out.Status == tool.StatusError {
		attrs = append(attrs, keyCode, errorCode(out.Output))
	}
	a.cfg.Log.Info(msgToolResult, attrs...)
}

// errorCode is the code of an error result's structured error.
func errorCode(output json.RawMessage) string {
	var r struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(output, &r)
	return r.Error.Code
}
