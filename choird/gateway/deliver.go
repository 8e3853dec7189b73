package gateway

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"choir/internal/rpc"
)

// Deliver sends what an agent sent to its bound DM (choir.dm.send; the
// lifecycle's Outbox). With an Outbox store (Config.Outbox) it queues the
// message there and returns at once (outbox.go), the DM's sender doing
// what follows later (sender.go); without one it sends before returning:
// the text first, split at 4096 characters and paced
// by the bot's limiter, then each file from the agent's .choirtmp/send/
// as its mediaKind, deleting each once Telegram has it. Every file is
// checked before anything is sent: a path outside .choirtmp/send/, a
// symlink or a missing file refuses the whole message. A file over
// Telegram's upload size, past the cap on one message's files, or refused
// by Telegram even as a document is removed unsent and the DM told; a file
// that failed otherwise (network, 5xx) stays for the agent's next message.
// One DMSend's messages are never interleaved with another's in the same
// DM. A reply or core report also acknowledges received files (ackBook).
func (g *Gateway) Deliver(ctx context.Context, agentID, dmName string, msg rpc.DMSend) error {
	if g.consoleDMs[dmName] {
		return nil // the console delivers it to choirctl chat
	}
	dm, ok := g.dms[dmName]
	if !ok {
		return fmt.Errorf("dm %q is not a Telegram DM in config.json", dmName)
	}
	if bound, ok := g.control.AgentForDM(dmName); ok && bound != agentID {
		return fmt.Errorf("dm %q is bound to %s, not %s", dmName, bound, agentID)
	}
	g.removeReceived(agentID, g.acks.settle(agentID, msg))
	if strings.TrimSpace(msg.Text) == "" && len(msg.Files) == 0 {
		return errors.New("nothing to send: the message has neither text nor files")
	}
	if g.cfg.Outbox != nil {
		return g.queue(ctx, agentID, dm, msg) // outbox.go; the DM's sender delivers it
	}
	b := dm.bot
	var send *os.Root
	var files []outFile
	var refused []notSent
	if len(msg.Files) > 0 {
		ws, err := g.control.WorkspacePath(agentID)
		if err != nil {
			return fmt.Errorf("workspace of %s: %w", agentID, err)
		}
		root, err := os.OpenRoot(ws)
		if err != nil {
			return fmt.Errorf("open workspace of %s: %w", agentID, err)
		}
		defer root.Close()
		if send, err = root.OpenRoot(sendDir); err != nil {
			return fmt.Errorf("open %s: %w", sendDir, err)
		}
		defer send.Close()
		if files, err = checkOutFiles(send, msg.Files); err != nil {
			return err
		}
		files, refused = capSend(files, g.cfg.SendMaxFiles, g.cfg.SendMaxBytes)
	}
	replyTo := replyTarget(msg.ReplyTo, b.name, dm.user)

	mu := b.chatLock(dm.user)
	mu.Lock()
	defer mu.Unlock()
	if strings.TrimSpace(msg.Text) != "" {
		if _, err := b.sendTextLocked(ctx, dm.user, msg.Text, replyTo, nil); err != nil {
			return fmt.Errorf("deliver to DM %s: %w", dmName, err)
		}
		replyTo = 0
	}
	var failed error
	for i, f := range files {
		_, err := b.sendFile(ctx, send, dm.user, f, replyTo)
		if errors.Is(err, errRefused) {
			refused = append(refused, notSent{f.arg, "Telegram refused it (" + oneLine(err.Error(), 200) + ")"})
		} else if err != nil {
			failed = fmt.Errorf("deliver file %d of %d (%s) to DM %s: %w; it stays in %s/ for the next message", i+1, len(files), f.arg, dmName, err, sendDir)
			break
		}
		if err := send.Remove(f.name); err != nil {
			b.log.Warn("sent file not removed from "+sendDir, keyAgent, agentID, "file", f.arg, keyError, err.Error())
		}
	}
	if len(refused) > 0 {
		for _, f := range refused {
			if name, err := sendName(f.arg); err == nil {
				send.Remove(name)
			}
		}
		b.log.Warn("files from the agent removed unsent", keyAgent, agentID, keyDM, dmName, "files", len(refused))
		if _, err := b.sendTextLocked(ctx, dm.user, notSentText(refused), 0, nil); err != nil && failed == nil {
			failed = fmt.Errorf("deliver to DM %s: %w", dmName, err)
		}
	}
	return failed
}
