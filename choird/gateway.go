package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"choir/choird/approval"
	"choir/choird/approval/postgres"
	"choir/choird/build"
	"choir/choird/control"
	"choir/choird/evolve"
	"choir/choird/gateway"
	"choir/choird/headless/signoff"
	"choir/choird/lifecycle"
	"choir/choird/store"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/logs"
	"choir/internal/openai"
	"choir/internal/rpc"
)

// gatewayControl is the control plane as the gateway reaches it: the
// lifecycle's methods, plus the few that live elsewhere in choird.
type gatewayControl struct {
	*lifecycle.Manager
	plane   *control.Plane
	builder *build.Builder
}

var _ gateway.Control = gatewayControl{}

// Status is the lifecycle's status with today's spend (/status).
func (g gatewayControl) Status(agentID string) (ctl.AgentStatus, error) {
	st, err := g.Manager.Status(agentID)
	if err == nil {
		st.Spend = g.plane.UsageToday(context.Background(), agentID)
	}
	return st, err
}

// SecretNames lists secret names, never values.
func (g gatewayControl) SecretNames() []string { return g.plane.Config().Secrets.Names() }

// Command runs the gateway commands that are not plain lifecycle calls,
// through the same control-plane methods as the admin API.
func (g gatewayControl) Command(ctx context.Context, c gateway.Command) (string, error) {
	switch c.Name {
	case "usage":
		return usageText(ctx, g.plane, c.Agent) // spend.go
	case "cores":
		cores, err := g.Cores(c.Agent)
		if err != nil {
			return "", err
		}
		if len(cores) == 0 {
			return c.Agent + " has no core jobs running.", nil
		}
		var b strings.Builder
		for _, st := range cores {
			fmt.Fprintf(&b, "%s: %s (step %d)\n", strings.TrimPrefix(st.Lane, "core:"), st.State, st.Step)
		}
		return b.String(), nil
	case "cancel":
		if len(c.Args) != 1 {
			return "", errors.New("name the core job: /cancel <name>")
		}
		if err := g.CancelCore(c.Agent, c.Args[0]); err != nil {
			return "", err
		}
		return "Cancelling " + c.Args[0] + ".", nil
	case "compact":
		if err := g.Compact(c.Agent); err != nil {
			return "", err
		}
		return "Compacting working memory.", nil
	case "model", "voice":
		if len(c.Args) == 0 {
			m, err := g.plane.Models(c.Agent)
			if err != nil {
				return "", err
			}
			if c.Name == "voice" {
				return fmt.Sprintf("%s speaks with voice %q.", c.Agent, m.VoiceProfile), nil
			}
			return fmt.Sprintf("%s uses %s.", c.Agent, modelsLine(m)), nil
		}
		choice := ctl.ModelChoice{}
		switch {
		case c.Name == "voice" && len(c.Args) == 1:
			choice.VoiceProfile = c.Args[0]
		case c.Name == "model" && len(c.Args) == 2 && c.Args[0] == "llm":
			choice.LLM = c.Args[1]
		case c.Name == "model" && len(c.Args) == 2 && c.Args[0] == "core_llm":
			choice.CoreLLM = c.Args[1]
		case c.Name == "model" && len(c.Args) == 2 && c.Args[0] == "summary_llm":
			choice.SummaryLLM = c.Args[1]
		default:
			return "", errors.New("usage: /model, /model llm|core_llm|summary_llm <name>, /voice, /voice <name>")
		}
		got, err := g.plane.SetModel(c.Agent, choice)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s now uses %s and voice %q until it restarts.", c.Agent, modelsLine(got), got.VoiceProfile), nil
	case "agent-build":
		if c.Agent == "" {
			return "", errors.New("name the agent: /agent build <agent-id>")
		}
		res, err := g.builder.Build(ctx, g.plane.Config().Config, c.Agent, func(line string) {
			if strings.HasPrefix(line, "Step ") || strings.HasPrefix(line, "built") || strings.Contains(line, "repo at") {
				c.Progress(line)
			}
		})
		if err != nil {
			return "", err
		}
		if !res.AgentBuilt {
			return fmt.Sprintf("%s is up to date: %s", c.Agent, res.Image), nil
		}
		return fmt.Sprintf("built %s", res.Image), nil
	case "update":
		if c.Agent == "" {
			return "", errors.New("name the agent: /update <agent-id>")
		}
		return updateLine(g.plane.UpdateAgent(ctx, c.Agent, buildProgress(c.Progress))), nil
	case "update-all":
		counts := map[string]int{}
		g.plane.UpdateAll(ctx, buildProgress(c.Progress), func(r ctl.UpdateResult) {
			counts[r.Outcome]++
			c.Progress(updateLine(r))
		})
		return fmt.Sprintf("update-all done: %d redeployed, %d built, %d skipped, %d failed.",
			counts[ctl.UpdateRedeployed], counts[ctl.UpdateBuilt], counts[ctl.UpdateSkipped], counts[ctl.UpdateFailed]), nil
	case "config":
		return g.config(ctx, c)
	case "events":
		session, evs, err := g.plane.LastEvents(ctx, c.Agent, eventsShown)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		fmt.Fprintf(&b, "The last %d events of %s's session %s:\n", len(evs), c.Agent, session)
		for _, ev := range evs {
			b.WriteString(control.EventLine(ev) + "\n")
		}
		return b.String(), nil
	}
	return "", gateway.ErrNotAvailable
}

// eventsShown is how many events /events shows.
const eventsShown = 15

// buildProgress passes on the build's steps, not every line of its output.
func buildProgress(progress func(string)) func(string) {
	return func(line string) {
		if strings.HasPrefix(line, "Step ") || strings.HasPrefix(line, "built") || strings.Contains(line, ": stopping it") || strings.Contains(line, ": building") {
			progress(line)
		}
	}
}

func updateLine(r ctl.UpdateResult) string {
	line := r.AgentID + ": " + r.Outcome
	if r.Image != "" {
		line += " " + r.Image
	}
	if r.Detail != "" {
		line += " (" + r.Detail + ")"
	}
	return line
}

// config is /config load | diff | apply | show, the same calls as
// choirctl config.
func (g gatewayControl) config(ctx context.Context, c gateway.Command) (string, error) {
	sub := ""
	if len(c.Args) > 0 {
		sub = c.Args[0]
	}
	diff := func(d ctl.ConfigDiff, head string) string {
		var b strings.Builder
		b.WriteString(head)
		for _, w := range d.Warnings {
			b.WriteString("warning: " + w + "\n")
		}
		if len(d.Changes) == 0 {
			b.WriteString("No changes: the staged snapshot is what runs.\n")
		}
		for _, ch := range d.Changes {
			b.WriteString(ch.String() + "\n")
		}
		if len(d.Changes) > 0 && d.Applicable {
			b.WriteString("/config apply publishes the config.json and secrets.json changes.\n")
		} else if len(d.Changes) > 0 {
			b.WriteString("/config apply would refuse: see \"blocks config apply\".\n")
		}
		return b.String()
	}
	switch sub {
	case "load":
		d, err := g.plane.LoadConfig(ctx)
		if err != nil {
			return "", err
		}
		return diff(d, fmt.Sprintf("Staged config %s (running: %s, version %d).\n", d.StagedHash, d.RunningHash, d.RunningVersion)), nil
	case "diff":
		d, err := g.plane.DiffConfig(ctx)
		if err != nil {
			return "", err
		}
		if !d.Staged {
			return "Nothing is staged: send /config load.", nil
		}
		return diff(d, ""), nil
	case "apply":
		res, err := g.plane.ApplyConfig(ctx)
		if err != nil {
			return "", err
		}
		text := fmt.Sprintf("Applied %d change(s): config version %d, %d running agent(s) told.", res.Published, res.ConfigVersion, res.AgentsNotified)
		if res.Published == 0 {
			text = fmt.Sprintf("Nothing to publish: config.json and secrets.json are as staged (version %d).", res.ConfigVersion)
		}
		for _, p := range res.Pending {
			text += "\npending: " + p.String()
		}
		return text, nil
	case "show":
		l, version := g.plane.Current()
		return fmt.Sprintf("Running config %s, version %d: %s. The whole file (secret names only): choirctl config show.",
			l.Version, version, resourceCounts(l.Config.Counts())), nil
	}
	return "", errors.New("usage: /config load | diff | apply | show")
}

func resourceCounts(m map[string]int) string {
	var parts []string
	for _, k := range config.SortedNames(m) {
		parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
	}
	return strings.Join(parts, ", ")
}

// startGateway runs startup step 8: the approval service and one poller per
// configured bot. It returns a function that stops both. A replica
// (replica.go) does not poll yet: it gets the gateway's Run instead, for
// the term it leads, and takes the updates the leader queued for its
// agents in the DM inbox from the start.
func startGateway(ctx context.Context, plane *control.Plane, m *lifecycle.Manager, st *store.Store, b *build.Builder, gate *signoff.Gate, log *slog.Logger, replica bool) (stop func(), lead func(context.Context), err error) {
	l := plane.Config()
	stt, err := transcriber(l.Config.Transcription, l.Secrets)
	if err != nil {
		plane.Step("start gateway bots", ctl.StepFailed, err.Error())
		return nil, nil, err
	}
	gcfg := gateway.Config{
		Gateways: l.Config.Gateways, DMs: l.Config.DMs, Secrets: l.Secrets,
		Control: gatewayControl{Manager: m, plane: plane, builder: b}, Log: log,
		Transcriber: stt, HTTPClient: telegramHTTP(),
		Outbox: st, OutboxMax: func(agentID string) int { return plane.Config().Config.Agents[agentID].OutboxMax },
		OutboxPoll: outboxPoll(replica),
	}
	if replica { // replica.go: updates for the other replica's agents go through Postgres
		gcfg.Inbox, gcfg.Instance = st, m.Instance
	}
	gw, err := gateway.New(gcfg)
	if err != nil {
		plane.Step("start gateway bots", ctl.StepFailed, err.Error())
		return nil, nil, err
	}
	// A decision is handed on by the replica running the session that
	// asked (replica.go); a single choird hands on all it decides.
	handoff := postgres.Handoff{S: st}
	if replica {
		handoff = postgres.Handoff{S: st, Instance: m.Instance, OrphanAfter: approvalOrphanAfter}
	}
	svc := approval.New(approval.Config{
		Store: postgres.New(st), Notifier: notifiers{gw, consoleNotifier{console: &plane.Console}}, Handoff: handoff,
		Timeout: time.Duration(l.Config.ApprovalTimeoutMS) * time.Millisecond,
		Log:     log.With(logs.KeySystem, "approval"),
		Apply:   applier(plane, m, log.With(logs.KeySystem, "evolve")).Apply,
		OnDecision: func(ctx context.Context, a approval.Approval) error {
			if a.RequestType == signoff.Type {
				// A headless run's commit: its run is decided (the loop
				// commits it or ends it).
				if err := gate.Decided(ctx, a); err != nil {
					log.Warn("run commit approval not applied to its run", "approval_id", a.ID, logs.KeyError, err.Error())
				}
				return nil
			}
			if _, ok := m.Sessions.Publish(a.SessionID, rpc.EventApproval, a.Decision()); !ok {
				return fmt.Errorf("session %s is not connected", a.SessionID)
			}
			return nil
		},
	})
	gw.SetApprovals(svc)
	plane.SetApprovals(svc)
	gate.Approvals = svc
	plane.SetRunDecider(gate) // choirctl run approve|reject decide the run's approval
	m.RequestApproval = func(ctx context.Context, agentID, sessionID, requestType string, payload json.RawMessage) (string, string, error) {
		a, err := svc.Request(ctx, agentID, sessionID, requestType, "", payload)
		return a.ID, string(a.Status), err
	}
	m.Outbox = control.Outboxes{&plane.Console, gw} // the console at once; Telegram through the outbox
	plane.SetOutboxStatus(func(ctx context.Context, agentID string) []ctl.DMOutbox {
		return outboxStatus(ctx, st, agentID)
	})
	plane.SetGateways(func() []ctl.GatewayStatus {
		var out []ctl.GatewayStatus
		for _, b := range gw.Status() {
			out = append(out, ctl.GatewayStatus{Gateway: b.Gateway, Polling: b.Polling, LastOK: b.LastOK, Updates: b.Updates,
				Dropped: b.Dropped, Errors: b.Errors, LastErr: b.LastErr, Conflicts: b.Conflicts, Unauthorized: b.Unauthorized,
				WatchdogRestarts: b.WatchdogRestarts})
		}
		return out
	})
	if _, err := svc.Start(ctx); err != nil {
		plane.Step("start gateway bots", ctl.StepFailed, err.Error())
		return nil, nil, err
	}
	run := func(ctx context.Context) {
		if err := gw.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("gateway stopped", logs.KeyError, err.Error())
		}
	}
	if replica {
		// The updates the leader queued for this replica's agents, and the
		// decisions the other replica made for its sessions, are taken
		// whether or not it leads.
		inboxCtx, stopInbox := context.WithCancel(context.Background())
		inboxDone := make(chan struct{}, 2)
		go func() {
			defer func() { inboxDone <- struct{}{} }()
			gw.RunInbox(inboxCtx)
		}()
		go func() {
			defer func() { inboxDone <- struct{}{} }()
			svc.RunHandoff(inboxCtx, approvalLook)
		}()
		plane.Step("start gateway bots", ctl.StepOK, fmt.Sprintf("%d bots, polled while this replica leads", gw.Bots()))
		return func() {
			stopInbox()
			<-inboxDone
			<-inboxDone
			svc.Close()
		}, run, nil
	}
	gwCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(gwCtx)
	}()
	plane.Step("start gateway bots", ctl.StepOK, fmt.Sprintf("%d bots", gw.Bots()))
	return func() {
		svc.Close()
		cancel()
		<-done
	}, nil, nil
}

// A replica looks for decisions the other one made for its sessions every
// approvalLook (one indexed statement, as the DM inbox's look), and takes
// a decision nobody handed on for approvalOrphanAfter whoever's it was.
const (
	approvalLook        = time.Second
	approvalOrphanAfter = time.Minute
)

// transcriber is the gateway's speech-to-text from config.json's
// "transcription" block, nil without one (voice notes arrive as files).
func transcriber(t *config.Transcription, secrets config.Secrets) (gateway.Transcriber, error) {
	if t == nil {
		return nil, nil
	}
	c, err := openai.New(openai.Config{Endpoint: t.Endpoint, APIKey: secrets[t.Secret], Timeout: gateway.DefaultTranscribeTimeout})
	if err != nil {
		return nil, fmt.Errorf("config.json transcription.endpoint: %w", err)
	}
	return gateway.OpenAITranscriber{Client: c, Model: t.Model, Language: t.Language}, nil
}

// applier carries out approved proposals (choird/evolve), telling the
// agent's DM: its running session's, else its default.
func applier(plane *control.Plane, m *lifecycle.Manager, log *slog.Logger) *evolve.Applier {
	bindings := func(agentID string) (rpc.ResourceBindings, bool) {
		st, err := m.Status(agentID)
		if err != nil || st.Bindings == nil {
			return rpc.ResourceBindings{}, false
		}
		return *st.Bindings, true
	}
	return &evolve.Applier{
		Config:   plane.Config,
		Bindings: bindings,
		Update:   plane.UpdateAgent,
		Tell: func(ctx context.Context, agentID, text string) {
			dm := plane.Config().Config.Agents[agentID].Defaults.DM
			if b, ok := bindings(agentID); ok {
				dm = b.DM
			}
			if m.Outbox == nil || dm == "" {
				return
			}
			if err := m.Outbox.Deliver(ctx, agentID, dm, rpc.DMSend{Kind: rpc.DMNotice, Text: text}); err != nil {
				log.Warn("notice not delivered", "agent_id", agentID, logs.KeyError, err.Error())
			}
		},
		Log: log,
	}
}

// modelsLine names an agent's model of each role: `model "fast" (core
// jobs "big", summary "fast")`, a role without its own model being the
// edge's.
func modelsLine(m ctl.ModelChoice) string {
	role := func(name string) string {
		if name == "" {
			return fmt.Sprintf("%q", m.LLM)
		}
		return fmt.Sprintf("%q", name)
	}
	return fmt.Sprintf("model %q (core jobs %s, summary %s)", m.LLM, role(m.CoreLLM), role(m.SummaryLLM))
}

// outboxStatus is an agent's outbox per DM, from the store; nil when
// Postgres does not answer within a second (status must not hang on it).
func outboxStatus(ctx context.Context, st *store.Store, agentID string) []ctl.DMOutbox {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	stats, err := st.OutboxStats(ctx, agentID)
	if err != nil {
		return nil
	}
	now := time.Now()
	var out []ctl.DMOutbox
	for _, o := range stats {
		d := ctl.DMOutbox{DM: o.DM, Queued: o.Queued, Failed: o.Failed, Refused: o.LastError, RefusedAt: o.LastErrorAt}
		if !o.Oldest.IsZero() {
			d.OldestAgeSeconds = max(0, now.Sub(o.Oldest).Seconds())
		}
		out = append(out, d)
	}
	return out
}
