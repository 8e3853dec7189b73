package control

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"choir/internal/ctl"
)

// LastEvents is /events (§19.3): the last n events of an agent's session,
// the running one or else its newest, oldest first, with the session's id.
func (p *Plane) LastEvents(ctx context.Context, agentID string, n int) (string, []ctl.SessionEvent, error) {
	log, _, err := p.sessionDeps()
	if err != nil {
		return "", nil, err
	}
	var session string
	var after int64
	if agents, err := p.lifecycle(); err == nil {
		if st, err := agents.Status(agentID); err == nil && st.SessionID != "" {
			session = st.SessionID
			if st.Replication != nil {
				after = max(st.Replication.AckedRev-int64(n), 0)
			}
		}
	}
	if session == "" {
		list, err := log.Sessions(ctx, agentID)
		if err != nil {
			return "", nil, err
		}
		if len(list) == 0 {
			return "", nil, ctl.Errorf(http.StatusNotFound, "not_found", "%s has no session yet", agentID)
		}
		session = list[0].SessionID
	}
	evs, err := log.Events(ctx, session, after)
	if err != nil {
		return "", nil, err
	}
	if len(evs) > n {
		evs = evs[len(evs)-n:]
	}
	return session, evs, nil
}

// EventLine is one event on one line for a person: its revision, type,
// lane and what it says (text, tool, summary), at most about 160
// characters. Payloads are the log's, which the agent redacted before
// hashing.
func EventLine(ev ctl.SessionEvent) string {
	var p map[string]any
	json.Unmarshal(ev.Payload, &p)
	var what string
	for _, k := range []string{"text", "summary", "tool", "name", "status", "error", "reason"} {
		if s, ok := p[k].(string); ok && strings.TrimSpace(s) != "" {
			if what != "" {
				what += " "
			}
			what += strings.Join(strings.Fields(s), " ")
			if len([]rune(what)) > 120 {
				break
			}
		}
	}
	if r := []rune(what); len(r) > 120 {
		what = string(r[:120]) + "…"
	}
	line := fmt.Sprintf("#%d %s", ev.Rev, ev.Type)
	if ev.Lane != "" {
		line += " [" + ev.Lane + "]"
	}
	if what != "" {
		line += ": " + what
	}
	return line
}
