// Package logs writes choir's structured logs (§22.2): JSON lines in
// .choir.d/logs/choird.log and .choir.d/logs/<agent-id>.log, each line with
// time, level, source (choird or the agent id), session_id and lane when
// known, and msg. choird.log is archived to logs/archive/choird/<time>.log.gz
// once it passes a line threshold; an agent's log is archived to
// logs/archive/<agent-id>/ when its session ends.
//
// Every byte on its way to a file passes a Redactor, which replaces any
// current secret value (raw or JSON-escaped) with [REDACTED]: code should
// never log a secret, and if it does by mistake the file still does not
// hold it.
package logs

import "log/slog"

// Keys of the structured fields; use these, never string literals.
const (
	KeySource  = "source"     // choird or an agent id
	KeySystem  = "system"     // the room within choird: gateway, lifecycle, admin…
	KeySession = "session_id" // the session a line is about
	KeyLane    = "lane"       // edge or core:<job>
	KeyAgent   = "agent_id"
	KeyError   = "error"
	KeyStep    = "step" // a startup step
)

// Source of choird's own log lines.
const SourceChoird = "choird"

// NewLogger returns a JSON-lines logger writing to w, tagging each line with
// source.
func NewLogger(w *File, source string, level slog.Leveler) *slog.Logger {
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})
	return slog.New(h).With(KeySource, source)
}
