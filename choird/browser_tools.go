package main

import (
	"context"
	"encoding/json"
	"log/slog"

	"choir/choird/browser"
	"choir/choird/lifecycle"
	"choir/internal/logs"
)

// startBrowser wires the browser worker (choird/browser) into the
// lifecycle: choir.web.browse among the host tools, each session's context
// made when its agent says hello and destroyed when the session ends. The
// browser itself starts at the first need; a missing driver or Chromium is
// logged here and answered as unavailable by each call. The returned stop
// closes the browser (after the agents have stopped).
func startBrowser(m *lifecycle.Manager, log *slog.Logger) (stop func()) {
	o := browser.DefaultOptions()
	o.Workspace, o.Log = m.WorkspacePath, log
	if err := o.Check(); err != nil {
		log.Warn("choir.web.browse will answer unavailable", logs.KeyError, err.Error())
	}
	w := browser.New(o)
	if m.HostTools == nil {
		m.HostTools = map[string]func(ctx context.Context, agentID, sessionID string, input json.RawMessage) (json.RawMessage, error){}
	}
	for name, h := range w.HostTools() {
		m.HostTools[name] = h
	}
	m.SessionOpened = w.Open
	closed := m.SessionClosed
	m.SessionClosed = func(agentID, sessionID, status string) {
		w.Close(agentID, sessionID)
		if closed != nil {
			closed(agentID, sessionID, status)
		}
	}
	return w.Stop
}
