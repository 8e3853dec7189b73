package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"choir/choird/store"
	"choir/internal/telegram"
)

// The DM inbox (issue 26): with two choird replicas only the leader polls
// Telegram, but either may run a DM's agent. The leader's chat worker asks
// Postgres where the DM's agent runs (InboundRoute); when another replica
// runs it, the update is queued in dm_inbox, once per Telegram update id,
// and that replica's RunInbox takes the queued updates of the DMs whose
// agents it runs and hands each to the chat's worker exactly as if it had
// polled it: text, files, voice, commands and approval buttons alike.
// Once handled, an update is recorded delivered.
//
// Order: one DM's updates are queued by one worker, one after the other,
// and taken in the order queued. While updates of a DM wait, a new one
// for it waits behind them even on the replica that runs the agent.
//
// At least once: an update handled and not yet recorded delivered when
// its replica dies is handled again by whoever runs the DM's agent next;
// a message carries the same UserMessage id both times, which the agent
// drops. Updates queued for a replica that died wait for the DM's agent
// to run again (the restart policy resuming it on that replica, or an
// operator starting it on either), then reach it in order; meanwhile the
// leader answers new messages of the DM as for an agent not running.

// InboxStore is the DM inbox shared by replicas (choird/store's dm_inbox).
type InboxStore interface {
	InboundRoute(ctx context.Context, dm, instance string) (store.DMRoute, error)
	QueueInbound(ctx context.Context, n store.NewInbound) (fresh bool, err error)
	QueuedInbound(ctx context.Context, dms []string, limit int) ([]store.Inbound, error)
	InboundDelivered(ctx context.Context, id int64) error
	PruneInbound(ctx context.Context, before time.Time) (int, error)
}

var _ InboxStore = (*store.Store)(nil)

// DefaultInboxPoll is how often RunInbox looks for queued updates.
const DefaultInboxPoll = time.Second

// inboxBatch bounds the updates one look takes.
const inboxBatch = 100

// inboxState is RunInbox's memory of the updates it took: each is in
// flight in its chat's worker until handled, then recorded delivered;
// one whose record failed is recorded again at the next look, never
// handled twice by this process.
type inboxState struct {
	mu         sync.Mutex
	taken      map[int64]bool // id → handled (record pending) or in flight
	jobs       sync.WaitGroup
	unrecorded int
}

// forwarded queues an update for the replica that runs its DM's agent,
// and reports whether it did (the caller then does nothing more). It
// forwards nothing without an inbox (a single choird), when this replica
// runs the DM's agent and none of the DM's updates wait, or when no
// replica runs it (the caller answers as for an agent not running). When
// Postgres cannot say, the update is handled here.
func (g *Gateway) forwarded(ctx context.Context, b *bot, dm dmInfo, u telegram.Update) bool {
	if g.cfg.Inbox == nil {
		return false
	}
	agent, local := g.control.AgentForDM(dm.name)
	r, err := g.cfg.Inbox.InboundRoute(ctx, dm.name, g.cfg.Instance)
	if err != nil {
		b.log.Warn("could not ask which replica runs the DM's agent; handling the update here", keyDM, dm.name, keyUpdate, u.UpdateID, keyError, err.Error())
		return false
	}
	instance := g.cfg.Instance
	switch {
	case local && r.Waiting == 0:
		return false
	case !local && r.Elsewhere == "":
		return false
	case !local:
		agent, instance = r.Agent, r.Elsewhere
	}
	body, err := json.Marshal(u)
	if err == nil {
		_, err = g.cfg.Inbox.QueueInbound(ctx, store.NewInbound{Bot: b.name, UpdateID: u.UpdateID, DM: dm.name, Instance: instance, Body: body})
	}
	if err != nil {
		b.log.Warn("update for an agent of another replica not queued", keyDM, dm.name, keyAgent, agent, keyUpdate, u.UpdateID, keyError, err.Error())
		if u.Message != nil {
			b.reply(ctx, dm, fmt.Sprintf("Could not pass that on to %s, which the other choird replica runs: %v. Send it again.", agent, err))
		}
		return true
	}
	b.log.Debug("update queued for the replica running the DM's agent", keyDM, dm.name, keyAgent, agent, keyUpdate, u.UpdateID, "instance", instance, "waiting", r.Waiting)
	return true
}

// RunInbox takes, until ctx ends, the queued updates of the DMs whose
// agents this replica runs (every InboxPoll), and hands each to its
// chat's worker as the poller would. It then waits for those being
// handled (up to ShutdownGrace). Without an inbox it returns at once.
func (g *Gateway) RunInbox(ctx context.Context) {
	if g.cfg.Inbox == nil {
		return
	}
	t := time.NewTicker(g.cfg.InboxPoll)
	defer t.Stop()
	for {
		g.takeInbound(ctx)
		select {
		case <-ctx.Done():
			done := make(chan struct{})
			go func() { g.inbox.jobs.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(g.cfg.ShutdownGrace):
				g.log.Warn("inbox stopping with updates still being handled; they are handled again by whoever runs their agent next", "grace", g.cfg.ShutdownGrace)
			}
			return
		case <-t.C:
		}
	}
}

// localDMs are the DMs bound to agents this replica runs.
func (g *Gateway) localDMs() []string {
	var out []string
	for name := range g.dms {
		if _, ok := g.control.AgentForDM(name); ok {
			out = append(out, name)
		}
	}
	return out
}

// takeInbound records the updates handled since the last look whose
// record failed, then takes the new ones of this replica's DMs.
func (g *Gateway) takeInbound(ctx context.Context) {
	g.inbox.mu.Lock()
	var handled []int64
	if g.inbox.unrecorded > 0 {
		for id, done := range g.inbox.taken {
			if done {
				handled = append(handled, id)
			}
		}
	}
	g.inbox.mu.Unlock()
	for _, id := range handled {
		g.recordDelivered(ctx, id)
	}
	dms := g.localDMs()
	if len(dms) == 0 {
		return
	}
	queued, err := g.cfg.Inbox.QueuedInbound(ctx, dms, inboxBatch)
	if err != nil {
		if ctx.Err() == nil {
			g.log.Warn("inbox not read", keyError, err.Error())
		}
		return
	}
	for _, in := range queued {
		g.inbox.mu.Lock()
		_, seen := g.inbox.taken[in.ID]
		if !seen {
			g.inbox.taken[in.ID] = false
		}
		g.inbox.mu.Unlock()
		if seen {
			continue
		}
		var u telegram.Update
		b := g.byName[in.Bot]
		if err := json.Unmarshal(in.Body, &u); err != nil || b == nil {
			g.log.Warn("queued update dropped: not an update of a configured bot", keyGateway, in.Bot, keyDM, in.DM, "inbox_id", in.ID)
			g.handledInbound(ctx, in.ID)
			continue
		}
		chat, _, job, ok := b.route(u)
		if !ok {
			g.handledInbound(ctx, in.ID)
			continue
		}
		id := in.ID
		g.inbox.jobs.Add(1)
		b.enqueue(chat, func(ctx context.Context) {
			defer g.inbox.jobs.Done()
			job(ctx)
			g.handledInbound(ctx, id)
		})
	}
}

// handledInbound records a taken update handled, and delivered in
// Postgres; a failed record is tried again at the next look.
func (g *Gateway) handledInbound(ctx context.Context, id int64) {
	g.inbox.mu.Lock()
	g.inbox.taken[id] = true
	g.inbox.unrecorded++
	g.inbox.mu.Unlock()
	g.recordDelivered(ctx, id)
}

func (g *Gateway) recordDelivered(ctx context.Context, id int64) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	err := g.cfg.Inbox.InboundDelivered(rctx, id)
	cancel()
	if err != nil {
		g.log.Warn("handled update not recorded as delivered; trying again", "inbox_id", id, keyError, err.Error())
		return
	}
	g.inbox.mu.Lock()
	if g.inbox.taken[id] {
		delete(g.inbox.taken, id)
		g.inbox.unrecorded--
	}
	g.inbox.mu.Unlock()
}
