package control

import (
	"context"
	"encoding/json"
	"net/http"

	"choir/choird/lifecycle"
	"choir/internal/ctl"
	"choir/internal/rpc"
)

var _ lifecycle.SessionEnds = Outboxes(nil)

// SessionEnded tells every destination that follows sessions
// (lifecycle.SessionEnds) that one ended.
func (o Outboxes) SessionEnded(ctx context.Context, agentID string, end ctl.SessionEnd) {
	for _, out := range o {
		if e, ok := out.(lifecycle.SessionEnds); ok {
			e.SessionEnded(ctx, agentID, end)
		}
	}
}

// Messenger delivers user messages and injections to running agents.
type Messenger interface {
	SendUserMessage(agentID string, msg rpc.UserMessage) (string, error)
	Inject(agentID, text string) error
}

// Outboxes fans an agent's outgoing messages out to several destinations,
// in order: the console first (its subscribers get the message at once,
// from memory), then the Telegram gateway, which queues it in its durable
// outbox and returns. The first failure is returned after every
// destination was tried.
type Outboxes []interface {
	Deliver(ctx context.Context, agentID, dm string, msg rpc.DMSend) error
}

// Deliver implements lifecycle.Outbox.
func (o Outboxes) Deliver(ctx context.Context, agentID, dm string, msg rpc.DMSend) error {
	var first error
	for _, out := range o {
		if err := out.Deliver(ctx, agentID, dm, msg); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (p *Plane) registerChatRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/agents/{id}/messages", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		var req ctl.ChatMessage
		if err := p.chatRequest(w, r, id, &req); err != nil {
			writeError(w, err)
			return
		}
		msgID, err := p.messenger().SendUserMessage(id, rpc.UserMessage{From: "console", Text: req.Text})
		if err != nil {
			writeError(w, lifecycleError(err))
			return
		}
		writeJSON(w, ctl.ChatSent{ID: msgID})
	})
	mux.HandleFunc("POST /v1/agents/{id}/inject", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		var req ctl.ChatMessage
		if err := p.chatRequest(w, r, id, &req); err != nil {
			writeError(w, err)
			return
		}
		if err := p.messenger().Inject(id, req.Text); err != nil {
			writeError(w, lifecycleError(err))
			return
		}
		writeJSON(w, struct{}{})
	})
	mux.HandleFunc("GET /v1/agents/{id}/outbox", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if err := p.knownAgent(id); err != nil {
			writeError(w, err)
			return
		}
		ch, cancel := p.Console.Subscribe(id)
		defer cancel()
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		flusher, _ := w.(http.Flusher)
		if flusher != nil {
			flusher.Flush()
		}
		enc := json.NewEncoder(w)
		for {
			select {
			case <-r.Context().Done():
				return
			case msg := <-ch:
				if enc.Encode(msg) != nil {
					return
				}
				if flusher != nil {
					flusher.Flush()
				}
				if msg.Ended != nil && msg.Ended.Status == lifecycle.StatusCrashed {
					return // nothing more will come from that session
				}
			}
		}
	})
}

// SetOutboxStatus connects what agent status shows of each DM's outbox
// (the Telegram gateway's durable outbox).
func (p *Plane) SetOutboxStatus(f func(ctx context.Context, agentID string) []ctl.DMOutbox) {
	p.mu.Lock()
	p.outbox = f
	p.mu.Unlock()
}

// OutboxStatus is an agent's outbox per DM for agent status (nil without
// a durable outbox, or when it has no messages in one).
func (p *Plane) OutboxStatus(ctx context.Context, agentID string) []ctl.DMOutbox {
	p.mu.RLock()
	f := p.outbox
	p.mu.RUnlock()
	if f == nil {
		return nil
	}
	return f(ctx, agentID)
}

func (p *Plane) messenger() Messenger {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.messages
}

// SetMessenger connects message delivery once the lifecycle runs.
func (p *Plane) SetMessenger(m Messenger) {
	p.mu.Lock()
	p.messages = m
	p.mu.Unlock()
}

func (p *Plane) chatRequest(w http.ResponseWriter, r *http.Request, id string, req *ctl.ChatMessage) error {
	if err := p.knownAgent(id); err != nil {
		return err
	}
	if p.messenger() == nil {
		return ctl.Errorf(http.StatusServiceUnavailable, "unavailable", "the agent lifecycle is not running in this choird")
	}
	if err := ctl.DecodeRequest(w, r, 1<<20, "message", req); err != nil {
		return err
	}
	if req.Text == "" {
		return ctl.Errorf(http.StatusBadRequest, "bad_request", "an empty message: write something")
	}
	return nil
}
