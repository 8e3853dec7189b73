package gateway

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"choir/internal/rpc"
	"choir/internal/telegram"
)

// chatQueue runs one chat's updates one at a time, in order, so a slow
// /start or upload in one DM holds up neither the poller nor other DMs.
type chatQueue struct {
	jobs    []func(context.Context)
	running bool
}

// dispatch hands an update from an allowed user in a private chat to that
// chat's worker; anything else is dropped with a debug line that carries
// no content. With two replicas, the worker first forwards an update for
// a DM whose agent the other replica runs (inbox.go).
func (b *bot) dispatch(u telegram.Update) {
	chat, dm, job, ok := b.route(u)
	if !ok {
		return
	}
	b.enqueue(chat, func(ctx context.Context) {
		if b.g.forwarded(ctx, b, dm, u) {
			return
		}
		job(ctx)
	})
}

// route finds an update's chat and what handling it means, or drops it
// (ok false): not from an allowed user in a private chat, or of a kind the
// gateway does not handle.
func (b *bot) route(u telegram.Update) (chat int64, dm dmInfo, job func(context.Context), ok bool) {
	var from *telegram.User
	var handle func(ctx context.Context, dm dmInfo)
	switch {
	case u.Message != nil:
		m := u.Message
		from, chat = m.From, m.Chat.ID
		if m.Chat.Type != telegram.ChatPrivate {
			b.log.Debug("update from a non-private chat dropped", keyUpdate, u.UpdateID, "chat_type", m.Chat.Type)
			return 0, dmInfo{}, nil, false
		}
		handle = func(ctx context.Context, dm dmInfo) { b.g.handleMessage(ctx, b, dm, m) }
	case u.CallbackQuery != nil:
		q := u.CallbackQuery
		from, chat = &q.From, q.From.ID
		handle = func(ctx context.Context, dm dmInfo) { b.g.handleCallback(ctx, b, dm, q) }
	default:
		b.log.Debug("update of an unhandled kind dropped", keyUpdate, u.UpdateID)
		return 0, dmInfo{}, nil, false
	}
	if from == nil {
		b.log.Debug("update without a sender dropped", keyUpdate, u.UpdateID)
		return 0, dmInfo{}, nil, false
	}
	dm, ok = b.dmOf(from.ID)
	if !ok || chat != dm.user {
		b.mu.Lock()
		b.status.Dropped++
		b.mu.Unlock()
		b.log.Debug("update from a user not in the allowlist dropped", keyUpdate, u.UpdateID, keyUser, from.ID)
		return 0, dmInfo{}, nil, false
	}
	return chat, dm, func(ctx context.Context) { handle(ctx, dm) }, true
}

// enqueue adds a job to chat's queue, starting its worker if idle.
func (b *bot) enqueue(chat int64, job func(context.Context)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.chats[chat]
	if q == nil {
		q = &chatQueue{}
		b.chats[chat] = q
	}
	q.jobs = append(q.jobs, job)
	if q.running {
		return
	}
	q.running = true
	b.g.workers.Add(1)
	go b.work(chat, q)
}

func (b *bot) work(chat int64, q *chatQueue) {
	defer b.g.workers.Done()
	for {
		b.mu.Lock()
		if len(q.jobs) == 0 {
			q.running = false
			delete(b.chats, chat)
			b.mu.Unlock()
			return
		}
		job := q.jobs[0]
		q.jobs = q.jobs[1:]
		b.mu.Unlock()
		job(b.g.workCtx)
	}
}

// messageID is the UserMessage id of a Telegram message: stable, so a
// message Telegram delivers again (after a crash) is one the agent drops.
func messageID(gateway string, chat, msg int64) string {
	return fmt.Sprintf("tg-%s-%d-%d", gateway, chat, msg)
}

// replyTarget parses a messageID back: the Telegram message a DMSend
// answers, when it is in this chat.
func replyTarget(id, gateway string, chat int64) int64 {
	rest, ok := strings.CutPrefix(id, "tg-"+gateway+"-"+strconv.FormatInt(chat, 10)+"-")
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// handleMessage routes one message from a configured DM.
func (g *Gateway) handleMessage(ctx context.Context, b *bot, dm dmInfo, m *telegram.Message) {
	text := strings.TrimSpace(m.Text)
	if c, ok := g.takeChoice(b, dm.user); ok {
		if n, err := strconv.Atoi(text); err == nil {
			g.pick(ctx, b, dm, c, n)
			return
		}
	}
	switch {
	case strings.HasPrefix(text, "/"):
		g.command(ctx, b, dm, m, text)
	case hasFile(m):
		g.receiveFile(ctx, b, dm, m)
	case text != "":
		g.forward(ctx, b, dm, m, text)
	default:
		b.reply(ctx, dm, "I can pass on text, files, photos, voice notes and videos only.")
	}
}

// noAgentText answers a message for a DM without a running agent.
func noAgentText(dm dmInfo) string {
	if dm.admin {
		return "No agent is running for this DM. Start one here with /start <agent>."
	}
	return "No agent is running for this DM. An admin can /start <agent>."
}

// forward passes a text to the DM's agent.
func (g *Gateway) forward(ctx context.Context, b *bot, dm dmInfo, m *telegram.Message, text string) {
	agent, ok := g.control.AgentForDM(dm.name)
	if !ok {
		b.reply(ctx, dm, noAgentText(dm))
		return
	}
	msg := rpc.UserMessage{ID: messageID(b.name, dm.user, m.MessageID), From: dm.name, Text: text}
	if _, err := g.control.SendUserMessage(agent, msg); err != nil {
		b.log.Warn("user message not delivered to the agent", keyDM, dm.name, keyAgent, agent, keyError, err.Error())
		b.reply(ctx, dm, fmt.Sprintf("Could not pass that on to %s: %v", agent, err))
	}
}

// reply sends a short answer to a DM through the limiter, logging a
// failure (the DM cannot be told about it).
func (b *bot) reply(ctx context.Context, dm dmInfo, text string) {
	if err := b.sendText(ctx, dm.user, text, 0, nil); err != nil && !errors.Is(err, context.Canceled) {
		b.log.Warn("answer to a DM not sent", keyDM, dm.name, keyError, err.Error())
	}
}

// sendText sends text in as many messages as it takes, in order, through
// the limiter, holding the chat so that no other send interleaves. The
// reply goes on the first part, the keyboard under the last. It returns the
// last part's message.
func (b *bot) sendText(ctx context.Context, chat int64, text string, replyTo int64, kb *telegram.InlineKeyboardMarkup) error {
	_, err := b.sendTextMsg(ctx, chat, text, replyTo, kb)
	return err
}

func (b *bot) sendTextMsg(ctx context.Context, chat int64, text string, replyTo int64, kb *telegram.InlineKeyboardMarkup) (*telegram.Message, error) {
	mu := b.chatLock(chat)
	mu.Lock()
	defer mu.Unlock()
	return b.sendTextLocked(ctx, chat, text, replyTo, kb)
}

func (b *bot) sendTextLocked(ctx context.Context, chat int64, text string, replyTo int64, kb *telegram.InlineKeyboardMarkup) (*telegram.Message, error) {
	var parts []string
	for _, p := range telegram.SplitText(text, 0) {
		if strings.TrimSpace(p) != "" {
			parts = append(parts, p)
		}
	}
	var last *telegram.Message
	for i, p := range parts {
		opt := telegram.MessageOptions{}
		if i == 0 {
			opt.ReplyToMessageID = replyTo
		}
		if i == len(parts)-1 {
			opt.ReplyMarkup = kb
		}
		m, err := telegram.Limited(ctx, b.limiter, chat, func(ctx context.Context) (*telegram.Message, error) {
			return b.client.SendMessage(ctx, chat, p, opt)
		})
		if err != nil {
			return last, fmt.Errorf("send part %d of %d: %w", i+1, len(parts), err)
		}
		last = m
	}
	return last, nil
}

// chatLock is the lock that keeps one chat's outgoing sends together.
func (b *bot) chatLock(chat int64) *sync.Mutex {
	b.mu.Lock()
	defer b.mu.Unlock()
	mu := b.sendMu[chat]
	if mu == nil {
		mu = &sync.Mutex{}
		b.sendMu[chat] = mu
	}
	return mu
}
