package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"choir/choird/store"
	"choir/internal/telegram"
)

// A DM's sender delivers its outbox (outbox.go), oldest message first, one
// part after the other, each through the bot's limiter (Telegram's pace
// and 429 retry_after) while holding the chat, so that nothing else sent
// to the DM comes between two parts of a message.
//
// Exactly once: before a part's send starts, its number is recorded
// (attempt); once Telegram accepts it, its message id is recorded and the
// next part is due. A restart resumes at the first part not recorded, so a
// part Telegram accepted and choird recorded is never sent again, and none
// is lost. The one window is a choird that dies after Telegram accepted a
// part and before the record reached Postgres (or a send whose answer was
// lost on the network): the Bot API has no idempotency key, so choird
// cannot ask whether that part arrived. It sends it again (at least once:
// a duplicate line is better than a missing one) and logs that it may be a
// duplicate; a stop of choird lets the part in flight finish and be
// recorded first (ShutdownGrace).
//
// Refusals: a chat Telegram refuses (403: the user blocked the bot or the
// bot was removed; 400 chat not found) fails the message and every one
// queued behind it, with Telegram's reason, logged and shown by agent
// status; a later message is tried again (the user may unblock the bot).
// A text part refused otherwise (400) fails its message alone. A file
// Telegram refuses even as a document, or one gone from the workspace, is
// noted and listed in the message's closing notice. Anything else (network,
// 5xx, 401) is retried after a growing pause, the message staying queued.

// sender delivers one DM's outbox.
type sender struct {
	g    *Gateway
	dm   dmInfo
	wake chan struct{} // capacity 1: a message was queued
}

// startSenders runs each DM's sender until ctx ends.
func (g *Gateway) startSenders(ctx context.Context, wg *sync.WaitGroup) {
	if g.cfg.Outbox == nil {
		return
	}
	wg.Go(func() { g.pruneOutbox(ctx) })
	if ql, ok := g.cfg.Outbox.(QueuedLister); ok && g.cfg.OutboxPoll > 0 {
		wg.Go(func() { g.pollOutbox(ctx, ql) })
	}
	for _, s := range g.senders {
		wg.Go(func() { s.run(ctx) })
	}
}

// QueuedLister lists the DMs with queued messages (choird/store).
type QueuedLister interface {
	QueuedDMs(ctx context.Context) ([]string, error)
}

// pollOutbox wakes, every OutboxPoll, the senders of the DMs that have
// messages queued, by this process or another replica.
func (g *Gateway) pollOutbox(ctx context.Context, ql QueuedLister) {
	t := time.NewTicker(g.cfg.OutboxPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		dms, err := ql.QueuedDMs(ctx)
		if err != nil {
			if ctx.Err() == nil {
				g.log.Warn("outbox not polled", keyError, err.Error())
			}
			continue
		}
		for _, dm := range dms {
			g.wakeSender(dm)
		}
	}
}

// pruneOutbox deletes finished messages past outboxRetention at the start
// and every pruneEvery until ctx ends.
func (g *Gateway) pruneOutbox(ctx context.Context) {
	t := time.NewTicker(pruneEvery)
	defer t.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if n, err := g.cfg.Outbox.PruneOutbox(pctx, time.Now().Add(-outboxRetention)); err != nil && ctx.Err() == nil {
			g.log.Warn("old outbox messages not pruned", keyError, err.Error())
		} else if n > 0 {
			g.log.Info("old outbox messages pruned", "messages", n)
		}
		if g.cfg.Inbox != nil {
			if n, err := g.cfg.Inbox.PruneInbound(pctx, time.Now().Add(-outboxRetention)); err != nil && ctx.Err() == nil {
				g.log.Warn("old inbox updates not pruned", keyError, err.Error())
			} else if n > 0 {
				g.log.Info("old inbox updates pruned", "updates", n)
			}
		}
		g.sweepOutboxFiles(pctx, time.Now())
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pruneEvery is how often finished outbox messages are pruned.
const pruneEvery = 6 * time.Hour

// orphanAge is how old a message's file directory must be before the
// sweep removes it for belonging to no queued message: a message being
// queued has its files moved before its row is written.
const orphanAge = 10 * time.Minute

// sweepOutboxFiles removes, in every workspace, the file directories under
// .choirtmp/outbox/ that belong to no queued message and are older than
// orphanAge: those of messages that failed (Telegram refused them, the
// chat is gone) and those a choird stopped between moving a message's
// files and queueing its row. Each workspace is opened as an os.Root, so
// a symlink planted by the agent leads nowhere outside it.
func (g *Gateway) sweepOutboxFiles(ctx context.Context, now time.Time) {
	queued, err := g.cfg.Outbox.QueuedOutboxDirs(ctx)
	if err != nil {
		if ctx.Err() == nil {
			g.log.Warn("orphaned outbox files not swept", keyError, err.Error())
		}
		return
	}
	keep := map[store.OutboxFileDir]bool{}
	for _, d := range queued {
		keep[store.OutboxFileDir{Workspace: filepath.Clean(d.Workspace), Dir: path.Clean(d.Dir)}] = true
	}
	removed := 0
	for _, w := range g.control.Workspaces() {
		if w.Path == "" {
			continue
		}
		removed += sweepWorkspace(filepath.Clean(w.Path), keep, now, g.log)
	}
	if removed > 0 {
		g.log.Info("orphaned outbox files swept", "messages", removed)
	}
}

// sweepWorkspace removes ws's orphaned message directories and returns
// how many it removed.
func sweepWorkspace(ws string, keep map[store.OutboxFileDir]bool, now time.Time, log *slog.Logger) int {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return 0 // no workspace yet
	}
	defer root.Close()
	dir, err := root.Open(outboxDir)
	if err != nil {
		return 0 // nothing was ever queued with files here
	}
	entries, err := dir.ReadDir(-1)
	dir.Close()
	if err != nil {
		log.Warn("orphaned outbox files not swept", "workspace", ws, keyError, err.Error())
		return 0
	}
	removed := 0
	for _, e := range entries {
		name := outboxDir + "/" + e.Name()
		if keep[store.OutboxFileDir{Workspace: ws, Dir: name}] {
			continue
		}
		if info, err := e.Info(); err != nil || now.Sub(info.ModTime()) < orphanAge {
			continue
		}
		if err := root.RemoveAll(name); err != nil {
			log.Warn("orphaned outbox files not removed", "workspace", ws, "dir", name, keyError, err.Error())
			continue
		}
		removed++
	}
	return removed
}

// run delivers the DM's queued messages until ctx ends, waiting for a new
// one when the outbox is empty.
func (s *sender) run(ctx context.Context) {
	pause := s.g.cfg.BackoffMin
	for ctx.Err() == nil {
		m, err := s.g.cfg.Outbox.NextOutbox(ctx, s.dm.name)
		if errors.Is(err, store.ErrNotFound) {
			select {
			case <-ctx.Done():
			case <-s.wake:
			}
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				s.log().Warn("outbox not read; trying again", keyError, err.Error(), "pause", pause)
				pause = s.wait(ctx, pause)
			}
			continue
		}
		pause = s.g.cfg.BackoffMin
		s.deliver(ctx, m)
	}
}

func (s *sender) log() *slog.Logger {
	return s.dm.bot.log.With(keyDM, s.dm.name)
}

// wait pauses for d or until ctx ends, and returns the next pause.
func (s *sender) wait(ctx context.Context, d time.Duration) time.Duration {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	return min(2*d, s.g.cfg.BackoffMax)
}

// record runs a store write that must not be lost: again after a pause
// until it succeeds or the gateway's work ends (then the part is resent
// after the restart: the window the comment at the top describes).
func (s *sender) record(what string, fn func(ctx context.Context) error) bool {
	pause := s.g.cfg.BackoffMin
	for {
		ctx, cancel := context.WithTimeout(s.g.workCtx, 30*time.Second)
		err := fn(ctx)
		cancel()
		if err == nil {
			return true
		}
		if s.g.workCtx.Err() != nil {
			return false
		}
		if errors.Is(err, store.ErrDeposed) {
			s.log().Error("outbox not updated ("+what+"): another replica leads now; this sender stops", keyError, err.Error())
			return false
		}
		s.log().Warn("outbox not updated ("+what+"); trying again", keyError, err.Error())
		pause = s.wait(s.g.workCtx, pause)
	}
}

// deliver sends one queued message's parts from the first not recorded.
// It returns when the message is sent or failed, or ctx ends.
func (s *sender) deliver(ctx context.Context, m store.OutboxMessage) {
	out := s.g.cfg.Outbox
	log := s.log().With(keyAgent, m.AgentID, "outbox_id", m.ID)
	var p plan
	if err := json.Unmarshal(m.Body, &p); err != nil {
		s.record("fail", func(ctx context.Context) error {
			return out.FailOutbox(ctx, m.ID, "the queued message is unreadable: "+err.Error())
		})
		log.Error("queued message unreadable; marked failed", keyError, err.Error())
		return
	}
	refused := append([]refusedFile(nil), p.Refused...)
	for _, n := range m.Notes {
		var f refusedFile
		if json.Unmarshal([]byte(n), &f) == nil {
			refused = append(refused, f)
		}
	}
	files := &msgFiles{p: p}
	defer files.close()

	b, chat := s.dm.bot, s.dm.user
	mu := b.chatLock(chat)
	mu.Lock()
	defer mu.Unlock()
	for i := m.PartsDone; i < len(p.Parts); i++ {
		pt, last := p.Parts[i], i == len(p.Parts)-1
		if pt.Notice && len(refused) == 0 {
			if !s.record("record part", func(ctx context.Context) error { return out.OutboxPartSent(ctx, m.ID, i, 0, "", last) }) {
				return
			}
			continue
		}
		if m.Attempt == i {
			log.Warn("resending a part whose send started before choird stopped: the DM may get it twice", "part", i)
		}
		replyTo := int64(0)
		if i == 0 {
			replyTo = p.ReplyTo
		}
		pause := s.g.cfg.BackoffMin
		started := i == m.PartsDone // NextOutbox recorded this part's start
		for {
			if ctx.Err() != nil {
				return // stopping: the part stays queued
			}
			if !started && !s.record("start part", func(ctx context.Context) error { return out.OutboxAttempt(ctx, m.ID, i) }) {
				return
			}
			started = false
			id, err := s.sendPart(s.g.workCtx, files, pt, replyTo, refused)
			var note refusedFile
			if reason, ok := chatRefusal(err); ok {
				s.refused(m, reason)
				return
			}
			switch {
			case err == nil:
			case pt.File != "" && errors.Is(err, errRefused):
				note = refusedFile{pt.Arg, "Telegram refused it (" + oneLine(err.Error(), 200) + ")"}
			case pt.File != "" && errors.Is(err, errGone):
				note = refusedFile{pt.Arg, "it was gone from the workspace (or no longer a regular file) before it could be sent"}
			case isBadRequest(err):
				reason := "Telegram refused it: " + oneLine(err.Error(), 300)
				s.record("fail", func(ctx context.Context) error { return out.FailOutbox(ctx, m.ID, reason) })
				log.Error("message refused by Telegram; marked failed", "part", i, keyError, err.Error())
				return
			case s.g.workCtx.Err() != nil || errors.Is(err, telegram.ErrLimiterClosed):
				return // stopping before Telegram answered: resent after the restart
			default:
				log.Warn("part not delivered; trying again", "part", i, "pause", pause, keyError, err.Error())
				mu.Unlock() // the DM's other answers (commands, approvals) need not wait for this one
				pause = s.wait(ctx, pause)
				mu.Lock()
				continue
			}
			noteText := ""
			if note.Arg != "" {
				raw, _ := json.Marshal(note)
				noteText = string(raw)
				refused = append(refused, note)
			}
			if !s.record("record part", func(ctx context.Context) error { return out.OutboxPartSent(ctx, m.ID, i, id, noteText, last) }) {
				return
			}
			if pt.File != "" {
				files.remove(pt.File)
			}
			break
		}
	}
	files.removeAll()
}

// sendPart sends one part and returns Telegram's message id.
func (s *sender) sendPart(ctx context.Context, files *msgFiles, pt part, replyTo int64, refused []refusedFile) (int64, error) {
	b, chat := s.dm.bot, s.dm.user
	if pt.File != "" {
		dir, err := files.root()
		if err != nil {
			return 0, fmt.Errorf("%w: %w", errGone, err)
		}
		// What the agent may have done to it meanwhile: removed it, or
		// put a symlink or a directory in its place (and the upload opens
		// it through the directory's os.Root, which a symlink cannot
		// leave, and checks again that it is a regular file).
		if fi, err := dir.Lstat(pt.File); err != nil || !fi.Mode().IsRegular() {
			return 0, fmt.Errorf("%w: %s is not a regular file any more", errGone, pt.Arg)
		}
		return b.sendFile(ctx, dir, chat, outFile{arg: pt.Arg, name: pt.File, size: pt.Size}, replyTo)
	}
	text := pt.Text
	if pt.Notice {
		ns := make([]notSent, len(refused))
		for i, f := range refused {
			ns[i] = notSent{f.Arg, f.Why}
		}
		text = notSentText(ns)
	}
	m, err := telegram.Limited(ctx, b.limiter, chat, func(ctx context.Context) (*telegram.Message, error) {
		return b.client.SendMessage(ctx, chat, text, telegram.MessageOptions{ReplyToMessageID: replyTo})
	})
	if err != nil {
		return 0, err
	}
	return m.MessageID, nil
}

// refused fails a message and everything queued behind it in a chat
// Telegram refuses.
func (s *sender) refused(m store.OutboxMessage, reason string) {
	reason = "Telegram refuses DM " + s.dm.name + ": " + reason
	var n int
	s.record("fail", func(ctx context.Context) error {
		var err error
		n, err = s.g.cfg.Outbox.FailQueuedOutbox(ctx, s.dm.name, reason)
		return err
	})
	s.log().Error("Telegram refuses the DM; its queued messages are marked failed and not retried (a later message is tried again)",
		keyAgent, m.AgentID, "failed", n, keyError, reason)
}

// chatRefusal reports an error that says Telegram will not deliver to
// the chat at all, with Telegram's words.
func chatRefusal(err error) (string, bool) {
	e, ok := errors.AsType[*telegram.APIError](err)
	if !ok {
		return "", false
	}
	d := strings.ToLower(e.Description)
	if e.Code == http.StatusForbidden || e.Code == http.StatusBadRequest &&
		(strings.Contains(d, "chat not found") || strings.Contains(d, "user not found") || strings.Contains(d, "peer_id_invalid")) {
		return fmt.Sprintf("error %d: %s", e.Code, e.Description), true
	}
	return "", false
}

// errGone marks a queued file that is no longer there to send.
var errGone = errors.New("queued file gone")

// refusedFile is a file of a message that was not sent, and why.
type refusedFile struct {
	Arg string `json:"arg"`
	Why string `json:"why"`
}

// msgFiles is a queued message's file directory, opened on first use.
type msgFiles struct {
	p       plan
	ws, dir *os.Root
}

func (f *msgFiles) root() (*os.Root, error) {
	if f.dir != nil {
		return f.dir, nil
	}
	ws, err := os.OpenRoot(f.p.Workspace)
	if err != nil {
		return nil, err
	}
	dir, err := ws.OpenRoot(f.p.Dir)
	if err != nil {
		ws.Close()
		return nil, err
	}
	f.ws, f.dir = ws, dir
	return dir, nil
}

func (f *msgFiles) remove(name string) {
	if dir, err := f.root(); err == nil {
		dir.Remove(name)
	}
}

// removeAll removes the message's directory once it is delivered.
func (f *msgFiles) removeAll() {
	if f.p.Dir == "" {
		return
	}
	if _, err := f.root(); err == nil {
		f.ws.RemoveAll(f.p.Dir)
	}
}

func (f *msgFiles) close() {
	if f.dir != nil {
		f.dir.Close()
		f.ws.Close()
	}
}
