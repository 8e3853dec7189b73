package main

import (
	"context"
	"log/slog"
	"time"

	"choir/choird/control"
	"choir/choird/lifecycle"
	"choir/internal/config"
	"choir/internal/rpc"
)

// notifyDM tells an agent's DM a notice through the durable outbox: the
// DM its running session is bound to, else its default DM in the running
// config; with admins, every admin DM too (each as the agent bound to it,
// if any). Each DM hears it once. what names the notice in the log line
// of a delivery that failed. The spend notices and the headless runs'
// reports both go this way.
func notifyDM(plane *control.Plane, agents *lifecycle.Manager, agentID, text string, admins bool, what string, log *slog.Logger) {
	if agents.Outbox == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sent := map[string]bool{}
	send := func(id, dm string) {
		if dm == "" || sent[dm] {
			return
		}
		sent[dm] = true
		if err := agents.Outbox.Deliver(ctx, id, dm, rpc.DMSend{Kind: rpc.DMNotice, Text: text}); err != nil {
			log.Warn(what+" not delivered", "agent_id", id, "dm", dm, "error", err.Error())
		}
	}
	c := plane.Config().Config
	dm := ""
	if st, err := agents.Status(agentID); err == nil && st.Bindings != nil {
		dm = st.Bindings.DM
	}
	if dm == "" {
		dm = c.Agents[agentID].Defaults.DM
	}
	send(agentID, dm)
	if !admins {
		return
	}
	for _, name := range config.SortedNames(c.DMs) {
		if !c.DMs[name].Admin {
			continue
		}
		id := agentID
		if bound, ok := agents.AgentForDM(name); ok {
			id = bound
		}
		send(id, name)
	}
}
